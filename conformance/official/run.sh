#!/usr/bin/env bash
# Runs the official MCP conformance suite (npm @modelcontextprotocol/conformance, Node 22+) against
# geminicli-mcp's Streamable HTTP transport, with fake-gemini as the CLI: for each revision, the
# server scenarios it requires (`conformance server --requirements REVISION`, which also runs its
# extensions' and pending scenarios without scoring them), against a server of its own, checked
# against expected-failures-REVISION.yml by the suite (the scored scenarios) and by baseline.mjs
# (every scenario run). Exits 1 on a failure no entry lists or an entry nothing fails for.
# Usage: conformance/official/run.sh [REVISION...]   (default: 2026-07-28 2025-11-25)
#   NODE22_BIN  directory holding a Node 22+ `node` and `npm` (default: the ones on PATH). Without
#               one: `npm install --prefix /tmp/node22 node@22`, then NODE22_BIN=/tmp/node22/node_modules/.bin
#   SUITE_DIR   where the suite is installed (default: a temp dir); the version below is installed
#               there with npm unless it already is
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
suite_version="0.2.0-alpha.12"
revisions=("$@")
(( ${#revisions[@]} > 0 )) || revisions=(2026-07-28 2025-11-25)
for revision in "${revisions[@]}"; do
  [[ -f "$here/expected-failures-$revision.yml" ]] || {
    echo "run.sh: no expected-failures-$revision.yml: the revisions are 2026-07-28 and 2025-11-25" >&2
    exit 2
  }
done
if [[ -n "${NODE22_BIN:-}" ]]; then export PATH="$NODE22_BIN:$PATH"; fi
major="$(node -p 'process.versions.node.split(".")[0]')"
if (( major < 22 )); then
  echo "run.sh: node $(node --version) is too old; the suite needs Node 22+ (see NODE22_BIN above)" >&2
  exit 2
fi
suite_dir="${SUITE_DIR:-$(mktemp -d)}"
installed="$(node -p "try { require('$suite_dir/node_modules/@modelcontextprotocol/conformance/package.json').version } catch { '' }")"
if [[ "$installed" != "$suite_version" ]]; then
  npm install --prefix "$suite_dir" --no-audit --no-fund "@modelcontextprotocol/conformance@$suite_version" >&2
fi
(cd "$root" && cargo build --quiet --workspace --bins)
bin="${CARGO_TARGET_DIR:-$root/target}/debug"
work="$(mktemp -d)"
server=""
stop() {
  if [[ -n "$server" ]]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  server=""
}
trap 'stop; rm -rf "$work"' EXIT

# One run: a fresh server (its own HOME and fake-gemini state), the suite, both checks.
run() {
  local revision="$1" dir="$work/$1" url="" token status=0
  mkdir -p "$dir"
  token="$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')"
  GEMINICLI_MCP_HTTP_TOKEN="$token" GEMINI_CLI_BIN="$bin/fake-gemini" \
    FAKE_GEMINI_STATE="$dir/state" HOME="$dir" \
    "$bin/geminicli-mcp" --http 127.0.0.1:0 2>"$dir/server.log" &
  server=$!
  for _ in $(seq 100); do
    url="$(sed -n 's/.*Streamable HTTP at \(http:[^ ]*\).*/\1/p' "$dir/server.log")"
    [[ -n "$url" ]] && break
    sleep 0.1
  done
  [[ -n "$url" ]] || { echo "run.sh: the server did not start:" >&2; cat "$dir/server.log" >&2; return 2; }
  echo "== $revision: @modelcontextprotocol/conformance $suite_version server --requirements $revision"
  MCP_BEARER_TOKEN="$token" NODE_OPTIONS="--import $here/bearer.mjs" \
    "$suite_dir/node_modules/.bin/conformance" server --url "$url" --requirements "$revision" \
    --expected-failures "$here/expected-failures-$revision.yml" -o "$dir/results" || status=1
  stop
  echo "== $revision: every scenario run, against expected-failures-$revision.yml"
  node "$here/baseline.mjs" "$dir/results" "$here/expected-failures-$revision.yml" || status=1
  return "$status"
}

failed=0
for revision in "${revisions[@]}"; do
  run "$revision" || failed=1
done
exit "$failed"
