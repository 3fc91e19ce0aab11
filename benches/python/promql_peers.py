#!/usr/bin/env python3
"""PromQL next to VictoriaMetrics and Prometheus, in one run on one machine.

One generated workload (counters with resets, integer and float gauges, step functions,
classic histograms; every series scraped at 10 s) is encoded once as Prometheus remote-write
requests and sent, the same bytes, to Sightline, VictoriaMetrics and Prometheus, each started
here on loopback with its own data directory. Each system is loaded alone (the machine's cores
are not shared between them), then the queries run interleaved across the three (a query on
each system in turn, rotating who goes first), and the median of the repeats is reported with
the ratio to the faster peer. Answers are checked: Sightline's must equal Prometheus' (labels,
timestamps, values within 1e-6 relative); VictoriaMetrics' MetricsQL differs by design for
`rate`, `increase` and lookback, so its largest relative difference is reported, not enforced.
These timed queries carry `nocache=1`: VictoriaMetrics' rollup cache and Sightline's query
cache are bypassed (Prometheus has no result cache), so every step is evaluated.

Then a dashboard refreshing, caches on: four range queries asked once, then again with their
window moved on by one step per request; the median of the moved requests is reported.

Also reported per system: ingest rate with acknowledged requests (Sightline's acks are durable:
fsync before 204), peak RSS during the load and over the whole run (VmHWM), and bytes per
sample on disk after a clean shutdown (Prometheus also as blocks only, its head is in the WAL).

    python3 benches/python/promql_peers.py --sightline target/release/sightline \\
        --series 2000 10000 --hours 24 --out /tmp/promql-peers.json

Needs the Debian packages `prometheus` (2.42) and `victoria-metrics` (1.79) and the Python
packages numpy and cramjam (benches/python/requirements.txt).
"""

import argparse
import http.client
import json
import math
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

import cramjam
import numpy as np

SCRAPE_MS = 10_000
JOBS = 10
ROUTES = ["/chat", "/embed", "/search", "/health"]
CODES = ["200", "500"]
LES = ["0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "+Inf"]
LE_P = np.array([0.30, 0.25, 0.20, 0.12, 0.07, 0.04, 0.015, 0.005])
# Series per target: 8 request counters, 1 integer gauge, 1 float gauge, 1 step gauge,
# 8 buckets with their _count and _sum.
PER_TARGET = len(ROUTES) * len(CODES) + 3 + len(LES) + 2


# --- workload -------------------------------------------------------------------------------


def workload(n_series, hours, end_ms, seed):
    """`(labels, values)` per series (labels sorted, `__name__` included) and the shared
    timestamps, ms."""
    rng = np.random.default_rng(seed)
    n = hours * 3600_000 // SCRAPE_MS
    ts = end_ms - (n - 1) * SCRAPE_MS + np.arange(n, dtype=np.int64) * SCRAPE_MS
    out = []
    for target in range(max(1, n_series // PER_TARGET)):
        base = {"job": f"job-{target % JOBS}", "instance": f"host-{target:05d}:9100"}

        def lbl(name, **extra):
            d = dict(base, __name__=name, **extra)
            return sorted(d.items())

        for route in ROUTES:
            for code in CODES:
                lam = (5.0 if code == "200" else 0.2) * rng.uniform(0.5, 2.0)
                inc = rng.poisson(lam, n).astype(np.float64)
                c = np.cumsum(inc)
                r = int(rng.integers(n // 4, n))  # one counter reset (a restart)
                c[r:] -= c[r - 1]
                out.append((lbl("bench_requests_total", route=route, code=code), c))
        out.append((lbl("bench_inflight_requests"), rng.poisson(4, n).astype(np.float64)))
        phase = rng.uniform(0, 2 * math.pi)
        temp = 40 + 8 * np.sin(np.arange(n) * 2 * math.pi / (n / 3) + phase)
        out.append((lbl("bench_temperature_celsius"), temp + rng.normal(0, 0.7, n)))
        steps = np.cumsum(rng.random(n) < 1 / 720).astype(np.float64)
        out.append((lbl("bench_config_version"), steps))
        per_step = rng.poisson(20 * LE_P[None, :], (n, len(LES))).astype(np.float64)
        cum = np.cumsum(np.cumsum(per_step, axis=1), axis=0)
        for k, le in enumerate(LES):
            out.append((lbl("bench_latency_seconds_bucket", le=le), cum[:, k].copy()))
        out.append((lbl("bench_latency_seconds_count"), cum[:, -1].copy()))
        mids = np.array([0.03, 0.07, 0.17, 0.37, 0.7, 1.6, 3.5, 8.0])
        out.append((lbl("bench_latency_seconds_sum"), np.cumsum(per_step @ mids)))
    return out, ts


# --- remote-write encoding ------------------------------------------------------------------


def varint(x):
    b = bytearray()
    while x >= 0x80:
        b.append((x & 0x7F) | 0x80)
        x >>= 7
    b.append(x)
    return bytes(b)


def field(tag, payload):
    return bytes([tag]) + varint(len(payload)) + payload


def encode_labels(labels):
    return b"".join(
        field(0x0A, field(0x0A, k.encode()) + field(0x12, v.encode())) for k, v in labels
    )


def sample_rows(ts):
    """Per timestamp, the 18 bytes of a `Sample` field less its value: every timestamp of the
    run has a 6-byte varint, so every sample encodes to the same length."""
    rows = np.zeros((len(ts), 18), dtype=np.uint8)
    rows[:, 0:3] = [0x12, 0x10, 0x09]
    rows[:, 11] = 0x10
    for i, t in enumerate(ts.tolist()):
        v = varint(t)
        assert len(v) == 6, "timestamps must encode in 6 varint bytes"
        rows[i, 12:18] = list(v)
    return rows


def encode_requests(series, ts, connections, samples_per_request):
    """The requests of each connection, in time order. Series are split between connections
    (as Prometheus shards them), so every series' samples arrive in order; a request holds
    `samples_per_request` samples, a few consecutive points of every series of its shard."""
    rows = sample_rows(ts)
    shards = [list(range(k, len(series), connections)) for k in range(connections)]
    labels = [encode_labels(lbl) for lbl, _ in series]
    window = max(1, samples_per_request // max(1, len(shards[0])))
    per_conn = []
    for shard in shards:
        reqs = []
        for i0 in range(0, len(ts), window):
            i1 = min(len(ts), i0 + window)
            chunk = rows[i0:i1].copy()
            body = []
            for s in shard:
                chunk[:, 3:11] = series[s][1][i0:i1].view(np.uint8).reshape(-1, 8)
                body.append(field(0x0A, labels[s] + chunk.tobytes()))
            payload = bytes(cramjam.snappy.compress_raw(b"".join(body)))
            reqs.append(((i1 - i0) * len(shard), payload))
        per_conn.append(reqs)
    return per_conn, window


# --- processes ------------------------------------------------------------------------------


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class System:
    def __init__(self, name, argv, port, data, write_path, ready_path):
        self.name, self.port, self.data = name, port, data
        self.write_path = write_path
        self.log = open(os.path.join(os.path.dirname(data), f"{name}.log"), "wb")
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                status, _ = self.get(ready_path)
                if status == 200:
                    return
            except OSError:
                pass
            if self.proc.poll() is not None:
                raise RuntimeError(f"{name} exited at start (log: {self.log.name})")
            time.sleep(0.2)
        raise RuntimeError(f"{name} did not become ready")

    def conn(self):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)

    def get(self, path):
        c = self.conn()
        try:
            c.request("GET", path)
            r = c.getresponse()
            return r.status, r.read()
        finally:
            c.close()

    def hwm_bytes(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
        return 0

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=300)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def start_systems(root, sightline):
    """Sightline, VictoriaMetrics and Prometheus, each with a fresh data directory under `root`
    and a free loopback port. Every one takes remote write at `/api/v1/write`."""
    cfg = os.path.join(root, "prometheus", "prometheus.yml")
    argv = {
        "sightline": lambda d, p: [
            sightline, "serve", "--data-dir", d, "--http-addr", f"127.0.0.1:{p}",
            "--grpc-addr", f"127.0.0.1:{free_port()}"],
        "victoria-metrics": lambda d, p: [
            "victoria-metrics", f"-storageDataPath={d}", f"-httpListenAddr=127.0.0.1:{p}",
            "-retentionPeriod=1y", "-loggerLevel=ERROR"],
        "prometheus": lambda d, p: [
            "prometheus", f"--config.file={cfg}", f"--storage.tsdb.path={d}",
            f"--web.listen-address=127.0.0.1:{p}", "--web.enable-remote-write-receiver",
            "--storage.tsdb.retention.time=30d", "--log.level=warn"],
    }
    ready = {"sightline": "/ready", "victoria-metrics": "/health", "prometheus": "/-/ready"}
    out = []
    for name, make_argv in argv.items():
        d = os.path.join(root, name, "data")
        os.makedirs(d)
        if name == "prometheus":
            with open(cfg, "w") as f:
                f.write("global:\n  scrape_interval: 10s\n")
        p = free_port()
        out.append(System(name, make_argv(d, p), p, d, "/api/v1/write", ready[name]))
    return out


# --- load -----------------------------------------------------------------------------------


def load(system, per_conn, window):
    """Sends every request, a connection per shard, the shards kept within half an hour of
    data time of each other (Prometheus refuses a sample more than an hour older than the
    newest it holds). Returns (seconds, samples, 503 retries)."""
    barrier_every = max(1, 1800_000 // (window * SCRAPE_MS))
    longest = max(len(r) for r in per_conn)
    barrier = threading.Barrier(len(per_conn))
    retries = [0]
    errors = []
    lock = threading.Lock()

    def run(reqs):
        c = system.conn()
        for i in range(longest):
            if i % barrier_every == 0:
                barrier.wait()
            if i >= len(reqs):
                continue
            _, body = reqs[i]
            while True:
                c.request("POST", system.write_path, body=body, headers={
                    "Content-Encoding": "snappy",
                    "Content-Type": "application/x-protobuf",
                    "X-Prometheus-Remote-Write-Version": "0.1.0",
                })
                r = c.getresponse()
                text = r.read()
                if r.status in (200, 204):
                    break
                if r.status in (429, 503):
                    with lock:
                        retries[0] += 1
                    time.sleep(float(r.getheader("Retry-After") or "1"))
                    continue
                with lock:
                    errors.append(f"{r.status}: {text[:200]!r}")
                break
        c.close()

    samples = sum(n for reqs in per_conn for n, _ in reqs)
    started = time.perf_counter()
    threads = [threading.Thread(target=run, args=(r,)) for r in per_conn]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    if errors:
        raise RuntimeError(f"{system.name} refused writes: {errors[:3]} ({len(errors)} in all)")
    return elapsed, samples, retries[0]


# --- queries --------------------------------------------------------------------------------


def queries(end_ms):
    """`(name, promql, kind, start, end, step)`, times in ms. Ranges end 37 s before the data
    ends, so no grid is aligned with the scrapes."""
    e = end_ms - 37_000
    h = 3600_000
    return [
        ("rate by job, 6h@60s", "sum by (job) (rate(bench_requests_total[5m]))", "range", e - 6 * h, e, 60_000),
        ("avg gauge by job, 24h@300s", "avg by (job) (bench_temperature_celsius)", "range", e - 24 * h, e, 300_000),
        ("instant count", "count(bench_requests_total)", "instant", e, e, 0),
        ("topk rate, 1h@15s", "topk(5, rate(bench_requests_total[5m]))", "range", e - h, e, 15_000),
        ("name+label regex, 24h@300s", 'sum(rate({__name__=~"bench_requests_total|bench_latency_seconds_count", job=~"job-[1-3]"}[5m]))', "range", e - 24 * h, e, 300_000),
        ("count_over_time 25h", "sum(count_over_time(bench_inflight_requests[25h]))", "instant", e, e, 0),
        ("histogram_quantile, 6h@60s", "histogram_quantile(0.99, sum by (le) (rate(bench_latency_seconds_bucket[5m])))", "range", e - 6 * h, e, 60_000),
        ("error ratio on(job), 24h@300s", 'sum by (job) (rate(bench_requests_total{code="500"}[5m])) / on(job) sum by (job) (rate(bench_requests_total[5m]))', "range", e - 24 * h, e, 300_000),
        ("increase 1h, instant", 'sum by (route) (increase(bench_requests_total{code="200"}[1h]))', "instant", e, e, 0),
        ("max_over_time, 7d@1h", "max by (job) (max_over_time(bench_temperature_celsius[1h]))", "range", e - 7 * 24 * h, e, 3600_000),
        ("without, 1h@15s", "sum without (instance) (bench_inflight_requests)", "range", e - h, e, 15_000),
        ("selector =, instant", 'bench_requests_total{job="job-3", code="500", route="/chat"}', "instant", e, e, 0),
        ("changes of steps, 24h@300s", "sum(changes(bench_config_version[1h]))", "range", e - 24 * h, e, 300_000),
    ]


def run_query(system, q, kind, start, end, step, cache=False):
    """One request. Without `cache`, range queries carry `nocache=1`: VictoriaMetrics and
    Sightline evaluate every step and keep nothing (Prometheus has no such cache)."""
    if kind == "instant":
        params = {"query": q, "time": f"{end / 1000:.3f}"}
        path = "/api/v1/query?"
    else:
        params = {"query": q, "start": f"{start / 1000:.3f}", "end": f"{end / 1000:.3f}",
                  "step": f"{step / 1000:g}"}
        if not cache:
            params["nocache"] = "1"
        path = "/api/v1/query_range?"
    t0 = time.perf_counter()
    status, body = system.get(path + urllib.parse.urlencode(params))
    elapsed = time.perf_counter() - t0
    doc = json.loads(body)
    if status != 200 or doc.get("status") != "success":
        raise RuntimeError(f"{system.name}: {q}: {status} {body[:300]!r}")
    return elapsed, normalise(doc["data"])


def normalise(data):
    out = {}
    for r in data["result"]:
        key = tuple(sorted(r["metric"].items()))
        pts = r.get("values") or ([r["value"]] if "value" in r else [])
        out[key] = [(round(float(t) * 1000), float(v)) for t, v in pts]
    return out


def max_rel_diff(a, b):
    """Largest relative difference between two answers over the points both have; `inf` when
    their series or timestamps differ."""
    if set(a) != set(b):
        return math.inf
    worst = 0.0
    for k in a:
        pa, pb = a[k], b[k]
        if [t for t, _ in pa] != [t for t, _ in pb]:
            return math.inf
        for (_, x), (_, y) in zip(pa, pb):
            if math.isnan(x) and math.isnan(y):
                continue
            d = abs(x - y) / max(abs(x), abs(y), 1e-9)
            worst = max(worst, d)
    return worst


REFRESHED = ["rate by job, 6h@60s", "avg gauge by job, 24h@300s", "histogram_quantile, 6h@60s",
             "error ratio on(job), 24h@300s"]


def dashboard_refresh(args, systems, end_ms):
    """A dashboard refreshing: each range query above is asked once, then `repeats` times with
    its window moved on by one more step each time, caches on (VictoriaMetrics' rollup cache,
    Sightline's query cache; Prometheus has none). Reports the median of the moved requests
    and checks Sightline's answers against Prometheus'."""
    print("   -- dashboard refresh, caches on (window moved on one step per request)", flush=True)
    rows = []
    for name, q, kind, start, end, step in queries(end_ms):
        if name not in REFRESHED:
            continue
        for s in systems:
            run_query(s, q, kind, start, end, step, cache=True)
        times = {s.name: [] for s in systems}
        agree = True
        for r in range(1, args.repeats + 1):
            answers = {}
            order = systems[r % 3:] + systems[: r % 3]
            for s in order:
                secs, ans = run_query(s, q, kind, start + r * step, end + r * step, step,
                                      cache=True)
                times[s.name].append(secs)
                answers[s.name] = ans
            agree &= max_rel_diff(answers["sightline"], answers["prometheus"]) <= 1e-6
        med = {k: statistics.median(v) for k, v in times.items()}
        peer = min(med["victoria-metrics"], med["prometheus"])
        rows.append({"name": name, "median_s": med, "ratio": med["sightline"] / peer,
                     "agrees_with_prometheus": agree})
        print(f"   {name:32s} sightline {med['sightline'] * 1000:8.1f} ms  vm "
              f"{med['victoria-metrics'] * 1000:8.1f}  prom {med['prometheus'] * 1000:8.1f}  "
              f"ratio {med['sightline'] / peer:5.2f}  {'agrees' if agree else 'DIFFERS'}",
              flush=True)
    return rows


# --- the run --------------------------------------------------------------------------------


def dir_bytes(path, only=None):
    total = 0
    for root, _, files in os.walk(path):
        if only and not only(os.path.relpath(root, path)):
            continue
        for f in files:
            try:
                total += os.path.getsize(os.path.join(root, f))
            except OSError:
                pass
    return total


ULID = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}(/|$)")


def one_size(args, n_series):
    end_ms = (int(time.time() * 1000) // SCRAPE_MS) * SCRAPE_MS - 10 * 60_000
    t0 = time.perf_counter()
    series, ts = workload(n_series, args.hours, end_ms, args.seed)
    per_conn, window = encode_requests(series, ts, args.connections, args.samples_per_request)
    n_samples = sum(n for reqs in per_conn for n, _ in reqs)
    wire = sum(len(b) for reqs in per_conn for _, b in reqs)
    print(f"== {len(series)} series, {n_samples:,} samples, {sum(map(len, per_conn))} requests "
          f"({wire / n_samples:.2f} B/sample snappy), encoded in {time.perf_counter() - t0:.0f} s",
          flush=True)
    del series
    root = tempfile.mkdtemp(prefix="promql-peers-")
    systems = start_systems(root, args.sightline)
    result = {"series": n_series, "samples": n_samples, "systems": {}, "queries": []}
    try:
        for s in systems:
            secs, samples, retries = load(s, per_conn, window)
            result["systems"][s.name] = {
                "load_s": secs, "samples_per_s": samples / secs, "retries_503": retries,
                "rss_peak_load": s.hwm_bytes(),
            }
            print(f"   {s.name}: {samples / secs / 1e6:.2f} M samples/s ({secs:.1f} s, "
                  f"{retries} retried), peak RSS {s.hwm_bytes() / 2**20:.0f} MiB", flush=True)
        del per_conn
        # VictoriaMetrics makes fresh rows searchable after a second or so; ask it now.
        systems[1].get("/internal/force_flush")
        time.sleep(2)
        for name, q, kind, start, end, step in queries(end_ms):
            times = {s.name: [] for s in systems}
            answers = {}
            for r in range(args.repeats):
                order = systems[r % 3:] + systems[: r % 3]
                for s in order:
                    secs, ans = run_query(s, q, kind, start, end, step)
                    times[s.name].append(secs)
                    answers[s.name] = ans
            med = {k: statistics.median(v) for k, v in times.items()}
            peer = min(med["victoria-metrics"], med["prometheus"])
            vs_prom = max_rel_diff(answers["sightline"], answers["prometheus"])
            vs_vm = max_rel_diff(answers["sightline"], answers["victoria-metrics"])
            row = {"name": name, "query": q, "median_s": med, "ratio": med["sightline"] / peer,
                   "series": len(answers["prometheus"]),
                   "agrees_with_prometheus": vs_prom <= 1e-6,
                   "max_rel_diff_prometheus": vs_prom, "max_rel_diff_vm": vs_vm}
            result["queries"].append(row)
            print(f"   {name:32s} sightline {med['sightline'] * 1000:8.1f} ms  vm "
                  f"{med['victoria-metrics'] * 1000:8.1f}  prom {med['prometheus'] * 1000:8.1f}  "
                  f"ratio {row['ratio']:5.2f}  {'agrees' if row['agrees_with_prometheus'] else 'DIFFERS'}"
                  f" (vs vm {vs_vm:.1e})", flush=True)
        result["refresh"] = dashboard_refresh(args, systems, end_ms)
        for s in systems:
            result["systems"][s.name]["rss_peak_run"] = s.hwm_bytes()
    finally:
        for s in systems:
            s.stop()
    for s in systems:
        info = result["systems"][s.name]
        info["bytes"] = dir_bytes(s.data)
        info["bytes_per_sample"] = info["bytes"] / n_samples
        if s.name == "prometheus":
            blocks = dir_bytes(s.data, only=lambda rel: bool(ULID.match(rel)))
            info["block_bytes_per_sample"] = blocks / n_samples
    shutil.rmtree(root, ignore_errors=True)
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sightline", required=True, help="the sightline binary (a release build)")
    ap.add_argument("--series", type=int, nargs="+", default=[2000, 10000],
                    help="series counts to run, one full run each (default: 2000 10000)")
    ap.add_argument("--hours", type=int, default=24, help="hours of data at 10 s (default 24)")
    ap.add_argument("--repeats", type=int, default=9, help="runs of each query (default 9)")
    ap.add_argument("--connections", type=int, default=8, help="writers (default 8)")
    ap.add_argument("--samples-per-request", type=int, default=2000,
                    help="samples per remote-write request (default 2000)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", help="write the results as JSON here")
    args = ap.parse_args()
    for tool in ("prometheus", "victoria-metrics"):
        if not shutil.which(tool):
            sys.exit(f"{tool} is not on the PATH (apt-get install {tool})")
    runs = [one_size(args, n) for n in args.series]
    if len(runs) > 1:
        print(f"== cost from {runs[0]['series']} to {runs[-1]['series']} series (median time ratio)")
        for i, q in enumerate(runs[0]["queries"]):
            big = runs[-1]["queries"][i]["median_s"]
            growth = {k: big[k] / v for k, v in q["median_s"].items()}
            print(f"   {q['name']:32s} " + "  ".join(f"{k} {v:5.2f}x" for k, v in growth.items()))
    for r in runs:
        print(f"== {r['series']} series: bytes per sample, peak RSS (load / whole run)")
        for name, s in r["systems"].items():
            extra = (f" (blocks only {s['block_bytes_per_sample']:.2f})"
                     if "block_bytes_per_sample" in s else "")
            print(f"   {name:18s} {s['bytes_per_sample']:.2f} B{extra}, "
                  f"{s['rss_peak_load'] / 2**20:.0f} / {s['rss_peak_run'] / 2**20:.0f} MiB")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"args": vars(args), "runs": runs}, f, indent=1)
    if any(not q["agrees_with_prometheus"] for r in runs for q in r["queries"] + r["refresh"]):
        sys.exit("Sightline's answers differ from Prometheus' (see DIFFERS above)")


if __name__ == "__main__":
    main()
