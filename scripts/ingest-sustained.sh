#!/usr/bin/env bash
# Sustained OTLP ingest against a fresh release server: the numbers in docs/benchmarks.md
# "Sustained OTLP ingest".
#   scripts/ingest-sustained.sh SECONDS [otlp-load flags, e.g. --spread-hours 24 | --signal logs --rate 300000]
# Needs `cargo build --release -p sightline -p sightline-server --bins` (SIGHTLINE_BIN=path runs
# another server binary, to compare builds). Prints the load
# generator's progress (rate, refusals, server RSS every 10 s) and summary, the server's memory
# split and store counters at the end, and how long the shutdown flush took.
set -euo pipefail
secs=${1:?seconds}; shift
cd "$(dirname "$0")/.."
dir=$(mktemp -d "${TMPDIR:-/tmp}/sightline-ingest.XXXXXX")
port=${SIGHTLINE_BENCH_PORT:-14318}
"${SIGHTLINE_BIN:-target/release/sightline}" serve --data-dir "$dir/data" --http-addr "127.0.0.1:$port" \
  --grpc-addr "127.0.0.1:$((port - 1))" --log-level warn >"$dir/server.log" 2>&1 &
pid=$!
trap 'kill -TERM $pid 2>/dev/null && wait $pid; rm -rf "$dir"' EXIT
until curl -sf -o /dev/null "127.0.0.1:$port/ready"; do sleep 0.1; done
# Defaults (spans at 100 k/s) unless the flags given name the signal or the rate.
defaults=()
[[ " $* " == *" --signal "* ]] || defaults+=(--signal traces)
[[ " $* " == *" --rate "* ]] || defaults+=(--rate 100000)
target/release/otlp-load --addr "127.0.0.1:$port" --pid "$pid" --connections 16 \
  --seconds "$secs" --bodies 2048 --progress-every 10 "${defaults[@]}" "$@"
grep -E "^(Rss|Anonymous)" "/proc/$pid/smaps_rollup"
curl -s "127.0.0.1:$port/metrics" | grep -E "^sightline_(process_resident|ingest_rejected|memtable_bytes|flushes_total|compactions_total|segments |segment_bytes|segment_rows|segment_index|rollup_cache)"
t=$(date +%s.%N)
kill -TERM "$pid"; wait "$pid" || true
echo "shutdown (final flush) $(echo "$(date +%s.%N) - $t" | bc) s; on disk $(du -sh "$dir/data" | cut -f1)"
