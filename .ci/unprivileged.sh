#!/usr/bin/env bash
# The server's end-to-end tests (the `server::` and `process::` tests of the root package's
# `integration` test binary) run again as an unprivileged user with TMPDIR=/tmp, as users run the
# server: not root, in a world-writable temporary directory that other users share. Given the real
# Gemini CLI (GEMINICLI_CI_REAL_CLI), so do the differential cases of every input the server hands
# the CLI (fake-gemini's `differential::inputs` and `differential_acp::inputs`) and the
# conformance suite's real-CLI lane (.ci/real-cli-lane.sh), with a copy of that CLI.
#
# Nothing is built as that user (the Rust toolchain and the clone may sit under /root, which it
# cannot read): `cargo nextest archive` packs the test binary, the server and fake-gemini
# (.config/nextest.toml, [profile.ci.archive]) from the build the root's test run made, and the
# user runs them with a copy of cargo-nextest against a copy of the workspace's files (the fixtures),
# both in a fresh directory under /tmp, removed at the end. Where a private mount namespace can be
# made (unshare), the clone and the target directory are hidden from the user's run, so a test that
# still reads them (a path compiled in) fails wherever the clone is.
#
# Usage: .ci/unprivileged.sh [ARCHIVE]
#   ARCHIVE: an archive made by `cargo nextest archive --profile ci` that holds
#   geminicli-mcp::integration and fake-gemini; without it the script makes one, which builds
#   nothing when the workspace's tests are built already (`cargo nextest run --workspace`, same
#   settings).
# Environment: GEMINICLI_CI_USER, the user (default geminicli-ci), created when missing;
# GEMINICLI_CI_REAL_CLI, the real CLI's `node_modules/.bin/gemini` (unset: those parts skipped).
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ "$(id -u)" != 0 ]]; then
  echo "not root: the test run is unprivileged already; skipping the rerun as another user"
  exit 0
fi
if ! command -v useradd >/dev/null 2>&1 || ! command -v runuser >/dev/null 2>&1; then
  echo "useradd or runuser not found: skipping the end-to-end tests as an unprivileged user"
  exit 0
fi

start=$SECONDS
user="${GEMINICLI_CI_USER:-geminicli-ci}"
if ! id -u "$user" >/dev/null 2>&1; then
  echo "creating the user $user"
  useradd -m -d "/home/$user" -s /bin/sh "$user"
fi
home="$(getent passwd "$user" | cut -d: -f6)"
nextest="$(command -v cargo-nextest)" || {
  echo "cargo-nextest is not on PATH: cannot hand a copy of it to $user" >&2
  exit 1
}

stage="$(mktemp -d /tmp/geminicli-unprivileged.XXXXXXXX)"
finish() {
  rm -rf -- "$stage"
  echo "the end-to-end tests as $user: $((SECONDS - start)) s"
}
trap finish EXIT
chmod 0755 "$stage"
mkdir "$stage/bin" "$stage/workspace"

if [[ $# -ge 1 ]]; then
  cp -- "$1" "$stage/tests.tar.zst"
else
  cargo nextest archive --workspace --profile ci \
    -E 'binary_id(geminicli-mcp::integration) | binary_id(fake-gemini::integration)' \
    --archive-file "$stage/tests.tar.zst"
fi
chmod 0644 "$stage/tests.tar.zst"
cp -- "$nextest" "$stage/bin/cargo-nextest"
built="${CARGO_TARGET_DIR:-target}/debug"
for bin in geminicli-mcp fake-gemini gemini-mcp-conformance; do
  cp -- "$built/$bin" "$stage/bin/$bin"
done
real_cli=""
if [[ -n "${GEMINICLI_CI_REAL_CLI:-}" ]]; then
  # The whole install (node_modules and the lock file beside it), links kept.
  install_dir="$(cd "$(dirname "$GEMINICLI_CI_REAL_CLI")/../.." && pwd -P)"
  cp -a -- "$install_dir" "$stage/cli"
  real_cli="$stage/cli/node_modules/.bin/gemini"
fi
# The workspace's files as they are in the work tree (what the tests were built from), owned by
# the user as a checkout of theirs would be.
git ls-files -z --cached --others --exclude-standard |
  tar --null --ignore-failed-read -T - -cf - | tar -xf - -C "$stage/workspace"
chown -R "$user:" "$stage/workspace"

# What only root's run may read, when a mount namespace can hide it: the clone, and the target
# directory unless it is inside the clone.
clone="$(pwd -P)"
hide=("$clone")
target="${CARGO_TARGET_DIR:-target}"
if [[ -d "$target" ]]; then
  target="$(cd "$target" && pwd -P)"
  if [[ "$target/" != "$clone/"* ]]; then
    hide+=("$target")
  fi
fi
namespace=()
# The probe mounts what the run will (a tmpfs); the mount goes with its namespace.
if unshare --mount --propagation private -- mount -t tmpfs -o size=4k tmpfs "$stage/bin" 2>/dev/null; then
  echo "hidden from the tests: ${hide[*]}"
  # shellcheck disable=SC2016 # the inner script expands its own arguments
  namespace=(unshare --mount --propagation private -- bash -euc '
    n=$1; shift
    for ((i = 0; i < n; i++)); do mount -t tmpfs -o mode=0700,size=4k tmpfs "$1"; shift; done
    exec "$@"' hide "${#hide[@]}" "${hide[@]}")
else
  echo "no mount namespace (unshare): ${hide[*]} stay visible to the tests"
fi

# A clean environment: no CARGO_*, RUST*, or PATH entry of root's; nextest extracts the archive
# under TMPDIR as the user.
cd "$stage/workspace"
as_user=("${namespace[@]}" runuser -u "$user" -- env -i
  PATH=/usr/local/bin:/usr/bin:/bin HOME="$home" USER="$user" LOGNAME="$user" TMPDIR=/tmp
  LANG=C.UTF-8 CARGO_TERM_COLOR=never FAKE_GEMINI_REAL_CLI="$real_cli")
filter='binary_id(geminicli-mcp::integration) & (test(/^server::/) | test(/^process::/))'
if [[ -n "$real_cli" ]]; then
  filter="($filter) | (binary_id(fake-gemini::integration) & (test(=differential::inputs) | test(=differential_acp::inputs)))"
  ignored=(--run-ignored all)
else
  echo "GEMINICLI_CI_REAL_CLI not set: the differential cases of the server's inputs and the real-CLI lane are not run as $user"
  ignored=()
fi
"${as_user[@]}" "$stage/bin/cargo-nextest" nextest run --archive-file "$stage/tests.tar.zst" \
  --workspace-remap "$stage/workspace" --profile ci "${ignored[@]}" -E "$filter"
if [[ -n "$real_cli" ]]; then
  "${as_user[@]}" bash .ci/real-cli-lane.sh "$real_cli" "$stage/bin"
fi
