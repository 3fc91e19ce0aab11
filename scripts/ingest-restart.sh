#!/usr/bin/env bash
# Crash and restart under load: the restart figures in docs/benchmarks.md "Sustained OTLP ingest".
#   scripts/ingest-restart.sh SECONDS [otlp-load flags, e.g. --spread-hours 24]
# Loads spans at 100,000/s for SECONDS, times a whole-day count and error ratio by service,
# SIGKILLs the server, starts it again on the same data directory, and reports when /ready
# answered and how long the same query takes right after, and 5 s later.
set -euo pipefail
secs=${1:?seconds}; shift
cd "$(dirname "$0")/.."
dir=$(mktemp -d "${TMPDIR:-/tmp}/sightline-restart.XXXXXX")
port=${SIGHTLINE_BENCH_PORT:-14318}
pid=
start() {
  target/release/sightline serve --data-dir "$dir/data" --http-addr "127.0.0.1:$port" \
    --grpc-addr "127.0.0.1:$((port - 1))" --log-level warn >>"$dir/server.log" 2>&1 &
  pid=$!
}
trap 'kill -TERM $pid 2>/dev/null && wait $pid; rm -rf "$dir"' EXIT
start
until curl -sf -o /dev/null "127.0.0.1:$port/ready"; do sleep 0.1; done
target/release/otlp-load --addr "127.0.0.1:$port" --signal traces --connections 16 --rate 100000 \
  --seconds "$secs" --bodies 2048 --progress-every 0 "$@" 2>&1 | tail -1
query() {
  curl -s -o /dev/null -w "%{http_code} in %{time_total} s" "127.0.0.1:$port/api/v1/aggregate" \
    -H 'content-type: application/json' -H 'X-Scope-OrgID: load' -d "{
    \"signal\": \"spans\", \"start\": $(($(date +%s) - 90000)), \"end\": $(($(date +%s) + 60)),
    \"group_by\": [\"service.name\"], \"aggregates\": [{\"func\": \"count\"}, {\"func\": \"error_ratio\"}]}"
}
echo "query before the kill: $(query), again $(query)"
echo "WAL $(du -sh "$dir/data/wal" | cut -f1); $(curl -s "127.0.0.1:$port/metrics" | grep '^sightline_memtable_bytes')"
kill -KILL "$pid"; wait "$pid" 2>/dev/null || true
t=$(date +%s.%N)
start
until curl -sf -o /dev/null "127.0.0.1:$port/ready"; do sleep 0.02; done
echo "ready $(echo "$(date +%s.%N) - $t" | bc) s after the restart"
echo "query right after: $(query), again $(query), again $(query)"
sleep 5
echo "5 s later (rollups of the opened segments cached in the background): $(query)"
