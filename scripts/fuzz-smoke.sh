#!/usr/bin/env bash
# Builds every cargo-fuzz target (fuzz/: on-disk decoders; server/fuzz/: OTLP decoders) and runs
# each for a few seconds from an empty corpus: a decoder that panics, overflows or loops on
# the first inputs libFuzzer tries fails the run. Long campaigns: docs/fuzzing.md.
#
#   scripts/fuzz-smoke.sh [SECONDS_PER_TARGET]     (default 5)
#
# Needs a C++ compiler (libFuzzer is built from source) and installs cargo-fuzz when missing.
# No sanitizer (`-s none`: the stable toolchain cannot build one) and no debug info, so the
# build stays small; each fuzz workspace's target/ is removed after its run.
set -euo pipefail
cd "$(dirname "$0")/.."

SECS="${1:-5}"
CARGO_FUZZ_VERSION=0.13.2
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "==> installing cargo-fuzz $CARGO_FUZZ_VERSION"
  cargo install cargo-fuzz --locked --version "$CARGO_FUZZ_VERSION"
fi

# cargo-fuzz passes nightly-only flags; the stable compiler accepts them with this.
export RUSTC_BOOTSTRAP=1
export CARGO_INCREMENTAL=0
export CARGO_PROFILE_DEV_DEBUG=false

for dir in fuzz server/fuzz; do
  echo "==> fuzz targets in $dir: build"
  (cd "$dir" && cargo fuzz build -s none --dev)
  for target in $(cd "$dir" && cargo fuzz list); do
    echo "==> $dir: $target for ${SECS}s"
    corpus="$(mktemp -d)"
    log="$(mktemp)"
    if ! (cd "$dir" && cargo fuzz run -s none --dev "$target" "$corpus" -- \
      -max_total_time="$SECS" >"$log" 2>&1); then
      tail -80 "$log"
      echo "error: fuzz target $dir/$target failed; the input is under $dir/artifacts/$target" >&2
      exit 1
    fi
    grep -E '^Done [0-9]+ runs' "$log" || { tail -20 "$log"; exit 1; }
    rm -f "$log"
    rm -rf "$corpus"
  done
  rm -rf "$dir/target" "$dir/artifacts" "$dir/corpus"
done
echo "==> every fuzz target ran ${SECS}s without a failure"
