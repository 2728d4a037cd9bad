#!/usr/bin/env bash
# The conformance suite's real-CLI lane: every case whose behaviour the real Gemini CLI can show,
# run against geminicli-mcp with the real CLI (offline, a fake key, each case's own scripted API:
# fake-gemini-api in the runner's process) in place of fake-gemini, on the warm backend (the
# default: `gemini --acp` agents) and on the one-shot backend, the same cases on each. Cases marked `fake-only`
# (a fault or fact only the fake can make) are skipped, saying why.
#
# Usage: .ci/real-cli-lane.sh GEMINI [BIN_DIR [GLOB ...]]
#   GEMINI: the real CLI (`node_modules/.bin/gemini` of an install of the pinned version).
#   BIN_DIR: where geminicli-mcp, fake-gemini and gemini-mcp-conformance are (default, or "": the
#   workspace's debug build).
#   GLOB: only the cases whose id matches one of these (default: every case).
# Run from anywhere; the cases are the workspace's (conformance/cases).
set -euo pipefail
cd "$(dirname "$0")/.."

gemini="$1"
bins="${2:-}"
bins="${bins:-${CARGO_TARGET_DIR:-target}/debug}"
shift $(($# < 2 ? $# : 2))
select=()
for glob in "$@"; do
  select+=(--run "$glob")
done
runner=("$bins/gemini-mcp-conformance" --target "$bins/geminicli-mcp"
  --fake-gemini "$bins/fake-gemini" --cases conformance/cases --real-cli "$gemini"
  --timeout-scale 2 -j 2)
start=$SECONDS
who="$(id -un) (TMPDIR=${TMPDIR:-unset})"
echo "real-CLI lane as $who: the warm backend (the default)"
# No baseline: what the warm backend's baseline lists fails on the fake's log or its clock, which
# this lane does not read or script.
"${runner[@]}" --profile geminicli-mcp-acp "${select[@]}"
echo "real-CLI lane as $who: the one-shot backend"
"${runner[@]}" "${select[@]}"
echo "real-CLI lane as $who: $((SECONDS - start)) s"
