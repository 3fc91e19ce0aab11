"""LogQL line filters over the query benchmark's day of logs, next to DuckDB on the same lines.

Starts `sightline serve` on a copy of the query benchmark's store (the `llm` shape: 1,000,000
log lines over one day), optionally a second build on another copy (to compare builds), and asks
each the same Loki `query_range` requests, interleaved, median of 5 after one warm-up; DuckDB
answers the SQL equivalent from the benchmark's `duckdb.db` (its `logs` table holds time,
severity, service, body and ids, not the attribute maps Sightline returns as labels).

    cargo run -p sightline-bench --release -- --dir /tmp/qb query --shape llm --python .venv/bin/python
    cp -r /tmp/qb/llm/sightline /tmp/qb-copy     # the server takes the store's lock
    python3 benches/python/logql_filters.py --sightline target/release/sightline \
        --data /tmp/qb-copy --duckdb /tmp/qb/llm/peers/duckdb.db
"""

import argparse
import json
import statistics
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request

import duckdb

DAY_START = 1_780_272_000_000_000_000  # the workload's day, 2026-06-01T00:00Z
DAY_END = DAY_START + 86_400 * 10**9

QUERIES = [
    ("newest 100 |= \"timeout\" (3% of lines)", '{service_name=~".+"} |= "timeout"',
     "SELECT time, service_name, body FROM logs WHERE contains(body, 'timeout') "
     "ORDER BY time DESC LIMIT 100"),
    ("newest 100 |= \"cache miss\" (0.05%)", '{service_name=~".+"} |= "cache miss"',
     "SELECT time, service_name, body FROM logs WHERE contains(body, 'cache miss') "
     "ORDER BY time DESC LIMIT 100"),
    ("|= \"zebra\" (no line)", '{service_name=~".+"} |= "zebra"',
     "SELECT time, service_name, body FROM logs WHERE contains(body, 'zebra') "
     "ORDER BY time DESC LIMIT 100"),
    ("sum(count_over_time(... |= \"timeout\" [1h])) per hour",
     'sum(count_over_time({service_name="llm-router"} |= "timeout" [1h]))',
     "SELECT (time - 1) // 3600000000000 AS h, count(*) FROM logs "
     "WHERE service_name = 'llm-router' AND contains(body, 'timeout') GROUP BY ALL"),
    ("newest 100 |= \"kb-3 in 1\" (words cut at both ends)", '{service_name=~".+"} |= "kb-3 in 1"',
     "SELECT time, service_name, body FROM logs WHERE contains(body, 'kb-3 in 1') "
     "ORDER BY time DESC LIMIT 100"),
    ("Grafana's log volume, hourly",
     'sum by (level, detected_level) (count_over_time({service_name=~".+"} | drop __error__ [1h]))',
     "SELECT lower(severity_text), (time - 1) // 3600000000000 AS h, count(*) FROM logs "
     "GROUP BY ALL"),
]


def start(binary, data, port):
    proc = subprocess.Popen(
        [binary, "serve", "--data-dir", data, "--http-addr", f"127.0.0.1:{port}",
         "--grpc-addr", f"127.0.0.1:{port - 1}", "--log-level", "warn"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(600):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/ready")
            return proc
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"{binary} did not become ready")


def ask(port, query):
    url = f"http://127.0.0.1:{port}/loki/api/v1/query_range?" + urllib.parse.urlencode(
        {"query": query, "start": DAY_START, "end": DAY_END, "limit": 100, "step": 3600})
    req = urllib.request.Request(url, headers={"X-Scope-OrgID": "bench"})
    t = time.perf_counter()
    try:
        body = urllib.request.urlopen(req, timeout=300).read()
    except urllib.error.HTTPError as e:
        return (time.perf_counter() - t) * 1000, f"error {e.code}: {e.read()[:80]!r}", 0
    ms = (time.perf_counter() - t) * 1000
    data = json.loads(body)["data"]
    rows = sum(len(r.get("values", [])) for r in data["result"])
    return ms, rows, data["stats"]["summary"]["totalLinesProcessed"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sightline", required=True)
    ap.add_argument("--data", required=True, help="a copy of the query benchmark's store")
    ap.add_argument("--before-sightline", help="another build, to compare")
    ap.add_argument("--before-data", help="its copy of the store (same workload)")
    ap.add_argument("--duckdb", required=True, help="the query benchmark's duckdb.db")
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    servers = {"sightline": (a.sightline, a.data, 14350)}
    if a.before_sightline:
        servers["before"] = (a.before_sightline, a.before_data, 14340)
    procs = [start(*s) for s in servers.values()]
    con = duckdb.connect(a.duckdb, read_only=True)
    try:
        for label, logql, sql in QUERIES:
            times = {name: [] for name in [*servers, "duckdb"]}
            seen = {}
            for i in range(a.repeats + 1):
                for name, (_, _, port) in servers.items():
                    ms, rows, lines = ask(port, logql)
                    seen[name] = f"{rows} rows, {lines} lines processed"
                    if i:
                        times[name].append(ms)
                t = time.perf_counter()
                rows = len(con.execute(sql).fetchall())
                seen["duckdb"] = f"{rows} rows"
                if i:
                    times["duckdb"].append((time.perf_counter() - t) * 1000)
            medians = ", ".join(f"{n} {statistics.median(v):.1f} ms" for n, v in times.items())
            print(f"{label}: {medians} ({'; '.join(f'{n}: {s}' for n, s in seen.items())})",
                  flush=True)
    finally:
        for p in procs:
            p.terminate()
            p.wait()


if __name__ == "__main__":
    main()
