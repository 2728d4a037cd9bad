#!/usr/bin/env bash
# Runs the official MCP conformance suite (npm @modelcontextprotocol/conformance, Node 22+) against
# geminicli-mcp's Streamable HTTP transport, with fake-gemini as the CLI, and checks the result
# against expected-failures.yml. Usage: conformance/official/run.sh [extra suite flags]
#   NODE22_BIN  directory holding a Node 22+ `node` and `npx` (default: the ones on PATH). Without
#               one: `npm install --prefix /tmp/node22 node@22`, then NODE22_BIN=/tmp/node22/node_modules/.bin
#   SUITE_DIR   where the suite is installed (default: a temp dir, installed with npm)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
suite_version="0.1.16"
if [[ -n "${NODE22_BIN:-}" ]]; then export PATH="$NODE22_BIN:$PATH"; fi
major="$(node -p 'process.versions.node.split(".")[0]')"
if (( major < 22 )); then
  echo "run.sh: node $(node --version) is too old; the suite needs Node 22+ (see NODE22_BIN above)" >&2
  exit 2
fi
suite_dir="${SUITE_DIR:-$(mktemp -d)}"
if [[ ! -x "$suite_dir/node_modules/.bin/conformance" ]]; then
  npm install --prefix "$suite_dir" --no-audit --no-fund "@modelcontextprotocol/conformance@$suite_version" >&2
fi
(cd "$root" && cargo build --quiet --workspace --bins)
bin="${CARGO_TARGET_DIR:-$root/target}/debug"
work="$(mktemp -d)"
token="$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')"
GEMINICLI_MCP_HTTP_TOKEN="$token" GEMINI_CLI_BIN="$bin/fake-gemini" \
  FAKE_GEMINI_STATE="$work/state" HOME="$work" \
  "$bin/geminicli-mcp" --http 127.0.0.1:0 2>"$work/server.log" &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do
  url="$(sed -n 's/.*Streamable HTTP at \(http:[^ ]*\).*/\1/p' "$work/server.log")"
  [[ -n "$url" ]] && break
  sleep 0.1
done
[[ -n "$url" ]] || { echo "run.sh: the server did not start:" >&2; cat "$work/server.log" >&2; exit 2; }
MCP_BEARER_TOKEN="$token" NODE_OPTIONS="--import $here/bearer-fetch.mjs" \
  "$suite_dir/node_modules/.bin/conformance" server --url "$url" \
  --expected-failures "$here/expected-failures.yml" -o "$work/results" "$@"
