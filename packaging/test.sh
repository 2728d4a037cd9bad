#!/usr/bin/env bash
# Builds the npm packages (the server's and fake-gemini's), fake-gemini's wheel and the server's
# Claude Desktop bundle for this machine from the workspace's debug binaries and installs each
# from the built file (tests/packaging): npm pack → npm install into a scratch project, the wheel
# → pip install into a fresh virtualenv, the bundle → unzip, then `mcpb validate` and the release
# server.json's schema check with tools npm installs into a scratch folder. A test whose tools
# (node and npm, python3 with venv, unzip) are missing is skipped with a message.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet -p geminicli-mcp -p fake-gemini -p gemini-mcp-conformance \
  --bin geminicli-mcp --bin fake-gemini --bin fake-gemini-api --bin gemini-mcp-conformance
cargo nextest run -p geminicli-mcp --run-ignored only -E 'test(/^packaging::/)' "$@"
