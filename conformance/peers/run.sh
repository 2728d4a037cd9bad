#!/usr/bin/env bash
# Installs other Gemini MCP wrappers at pinned versions in a cache outside the repository and runs
# gemini-mcp-conformance against each with its profile in conformance/profiles/.
#
#   conformance/peers/run.sh [WRAPPER...]     # default: all three
#
# Wrappers and where they come from:
#   gemini-mcp-tool    npm gemini-mcp-tool@1.1.8
#   gemini-mcp-bridge  source of hampsterx/gemini-mcp-bridge at tag v0.7.0, built with npm
#   cli-agent-mcp      PyPI cli-agent-mcp==0.1.4 when the index has it, else the source of
#                      shiharuharu/cli-agent-mcp at its 0.1.4 commit, in a virtualenv
#
# Environment:
#   PEERS_CACHE                 the cache (default ~/.cache/gemini-mcp-conformance/peers); each
#                               wrapper is installed once under PEERS_CACHE/NAME-VERSION
#   GEMINI_MCP_BRIDGE_SOURCE    a git URL, a git directory (bare or not) or a source tree of the
#   CLI_AGENT_MCP_SOURCE        wrapper (default: its GitHub URL); a git source is checked out at
#                               the pinned revision, a plain tree is used as it is
#   CARGO_TARGET_DIR            where cargo builds the runner and fake-gemini (default: target/)
#   RUNNER_ARGS                 more arguments for the runner (words, no quoting: "--run termination/* -j 2")
#
# Reports: PEERS_CACHE/results/NAME.json (the runner's JSON report) and NAME.txt (its text output).
# Every wrapper runs against fake-gemini with a private HOME and no real key, as every case does;
# nothing here reaches a vendor. Not part of .ci/run: the wrappers' own faults would fail it.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cache="${PEERS_CACHE:-$HOME/.cache/gemini-mcp-conformance/peers}"
target_dir="${CARGO_TARGET_DIR:-$repo/target}"
mkdir -p "$cache/results"

TOOL_VERSION=1.1.8
BRIDGE_REV=v0.7.0
CAM_VERSION=0.1.4
# The commit of cli-agent-mcp whose pyproject.toml says 0.1.4.
CAM_REV=7c01ac3

# Puts the source of $2 at revision $3 into directory $1 (see the *_SOURCE variables above).
checkout() {
  local dest="$1" source="$2" rev="$3"
  rm -rf "$dest.tmp"
  if [[ -d "$source" && ! -e "$source/.git" && ! -f "$source/HEAD" ]]; then
    cp -R "$source" "$dest.tmp"
  else
    git clone --quiet "$source" "$dest.tmp"
    git -C "$dest.tmp" checkout --quiet "$rev"
  fi
  mv "$dest.tmp" "$dest"
}

install_gemini_mcp_tool() {
  local dir="$cache/gemini-mcp-tool-$TOOL_VERSION"
  if [[ ! -f "$dir/node_modules/gemini-mcp-tool/dist/index.js" ]]; then
    npm install --prefix "$dir" --no-audit --no-fund "gemini-mcp-tool@$TOOL_VERSION" >&2
  fi
  echo "node $dir/node_modules/gemini-mcp-tool/dist/index.js"
}

install_gemini_mcp_bridge() {
  local dir="$cache/gemini-mcp-bridge-$BRIDGE_REV"
  if [[ ! -f "$dir/dist/index.js" ]]; then
    rm -rf "$dir"
    checkout "$dir" "${GEMINI_MCP_BRIDGE_SOURCE:-https://github.com/hampsterx/gemini-mcp-bridge}" "$BRIDGE_REV"
    (cd "$dir" && npm ci --no-audit --no-fund >&2 && npm run build >&2)
  fi
  echo "node $dir/dist/index.js"
}

install_cli_agent_mcp() {
  local dir="$cache/cli-agent-mcp-$CAM_VERSION"
  if [[ ! -x "$dir/venv/bin/cli-agent-mcp" ]]; then
    rm -rf "$dir"
    mkdir -p "$dir"
    python3 -m venv "$dir/venv"
    if ! "$dir/venv/bin/pip" install --quiet "cli-agent-mcp==$CAM_VERSION" >&2 2>/dev/null; then
      checkout "$dir/src" "${CLI_AGENT_MCP_SOURCE:-https://github.com/shiharuharu/cli-agent-mcp}" "$CAM_REV"
      "$dir/venv/bin/pip" install --quiet "$dir/src" >&2
    fi
  fi
  echo "$dir/venv/bin/cli-agent-mcp"
}

cargo build --quiet -p fake-gemini -p gemini-mcp-conformance --manifest-path "$repo/Cargo.toml"
runner="$target_dir/debug/gemini-mcp-conformance"
fake="$target_dir/debug/fake-gemini"

wrappers=("$@")
[[ ${#wrappers[@]} -gt 0 ]] || wrappers=(gemini-mcp-tool gemini-mcp-bridge cli-agent-mcp)
status=0
for name in "${wrappers[@]}"; do
  case "$name" in
    gemini-mcp-tool) command="$(install_gemini_mcp_tool)" ;;
    gemini-mcp-bridge) command="$(install_gemini_mcp_bridge)" ;;
    cli-agent-mcp) command="$(install_cli_agent_mcp)" ;;
    *) echo "unknown wrapper $name (known: gemini-mcp-tool gemini-mcp-bridge cli-agent-mcp)" >&2; exit 2 ;;
  esac
  echo "== $name: $command" >&2
  read -ra extra <<<"${RUNNER_ARGS:-}"
  "$runner" --target "$command" --profile "$here/../profiles/$name.toml" --fake-gemini "$fake" \
    --json "$cache/results/$name.json" "${extra[@]}" | tee "$cache/results/$name.txt" || status=1
done
echo "reports: $cache/results/" >&2
exit "$status"
