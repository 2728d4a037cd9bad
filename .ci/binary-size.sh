#!/usr/bin/env bash
# The server's release binary within its budget (BENCHMARKS.md, "The release binary's size"):
# 8 MiB, x86_64 Linux (glibc) (7,722,152 B when it was set, once the structured tool's validator
# became `boon`) — built as the release workflow builds it (on its own, so its
# dependencies take only its features; with the same --remap-path-prefix flags and identical code
# folded by the linker). Fails when the binary is over the budget.
#
#   .ci/binary-size.sh                  build (release profile, in CARGO_TARGET_DIR or target/), then check
#   .ci/binary-size.sh --check FILE     check a binary already built (the release workflow's)
#
# A release build takes several minutes on two cores: .ci/run runs it last, on its own, so that no
# timed test shares the cores with it.
set -euo pipefail
cd "$(dirname "$0")/.."

budget=$((8 * 1024 * 1024))
target=x86_64-unknown-linux-gnu

if [[ "${1:-}" == --check ]]; then
  bin="${2:?usage: .ci/binary-size.sh --check FILE}"
else
  host="$(rustc -vV | sed -n 's/^host: //p')"
  if [[ "$host" != "$target" ]]; then
    echo "binary size: the budget is measured on $target, not $host: skipped"
    exit 0
  fi
  cargo fetch --locked --target "$target"
  cargo_home="${CARGO_HOME:-$HOME/.cargo}"
  # The workflow's flags and build of the server (.github/workflows/release.yml, "Build").
  flags="--remap-path-prefix=$PWD=/build"
  for d in "$cargo_home"/registry/src/*/; do
    flags="$flags --remap-path-prefix=${d%/}=/cargo"
  done
  flags="$flags -C link-arg=-Wl,--icf=all"
  RUSTFLAGS="$flags" CARGO_INCREMENTAL=0 cargo build --release --locked --quiet --target "$target" \
    -p geminicli-mcp --bin geminicli-mcp
  bin="${CARGO_TARGET_DIR:-$PWD/target}/$target/release/geminicli-mcp"
fi

size="$(wc -c < "$bin" | tr -d ' ')"
if (( size > budget )); then
  echo "binary size: $bin is $size bytes, $((size - budget)) over the budget of $budget (8 MiB):" \
    "see BENCHMARKS.md, \"The release binary's size\", for what was cut and what was kept" >&2
  exit 1
fi
echo "binary size: $size bytes, $((budget - size)) under the budget of $budget (8 MiB)"
