"""Load the query benchmark's data into DuckDB and chDB and answer its ten questions.

usage: query_peers.py PARAMS_JSON WORKDIR OUT_JSON [REPEATS]

PARAMS_JSON is written by `sightline-bench query`: the question parameters and Sightline's
Parquet segment files per signal. The rows are read from those files (so every engine holds
exactly the same data), flattened the way a user of each tool would model them (one column per
field asked about, `user.id` lifted out of the attribute map, metric labels denormalised onto
samples), and loaded into:

  * DuckDB: native tables sorted by time (zone maps), an ART index on spans.trace_id;
  * chDB (embedded ClickHouse): MergeTree tables with LowCardinality strings, Delta/DoubleDelta
    and ZSTD codecs, ordered like the OpenTelemetry ClickHouse exporter orders them, a bloom
    filter index on trace_id and a tokenbf_v1 index on log bodies, merged (OPTIMIZE FINAL).

For the bytes comparison chDB also stores every field of the same rows (`otel_traces`,
`otel_logs`) in the layout of the OpenTelemetry ClickHouse exporter's tables: attribute maps as
Map(LowCardinality(String), String) with bloom-filter indexes on keys and values, events and links
as parallel arrays, ordered by service, name and time; ids kept binary and Sightline's promoted
GenAI fields as typed columns, which only makes the peer smaller. Those tables answer no question.

Each question runs once to warm up and REPEATS times timed; the median wall time is reported
with the answer's row count and digest (the runner checks they equal Sightline's).
"""
import json
import os
import shutil
import statistics
import sys
import time

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

HOUR = 3_600_000_000_000


def read(files, columns):
    return pa.concat_tables(pq.read_table(f, columns=columns) for f in files)


def attr_str(table, column, key):
    """The string value of attribute `key` in a Map<Utf8, Struct<kind,str,...>> column."""
    looked = pc.map_lookup(table[column], pa.scalar(key), "first")
    return pc.fill_null(pc.struct_field(looked, [1]), "")


def spans_table(files):
    t = read(files, [
        "trace_id", "span_id", "service_name", "span_name", "start_time_unix_nano",
        "duration_nano", "status_code", "gen_ai_request_model", "gen_ai_usage_input_tokens",
        "gen_ai_usage_output_tokens", "attributes",
    ])
    return pa.table({
        "trace_id": t["trace_id"],
        "span_id": t["span_id"],
        "service_name": t["service_name"],
        "span_name": t["span_name"],
        "start_time": pc.cast(t["start_time_unix_nano"], pa.int64()),
        "duration": t["duration_nano"],
        "status_code": t["status_code"],
        "model": pc.fill_null(t["gen_ai_request_model"], ""),
        "input_tokens": t["gen_ai_usage_input_tokens"],
        "output_tokens": t["gen_ai_usage_output_tokens"],
        "user_id": attr_str(t, "attributes", "user.id"),
    })


def logs_table(files):
    t = read(files, [
        "time_unix_nano", "severity_number", "severity_text", "service_name", "body",
        "trace_id", "span_id",
    ])
    return pa.table({
        "time": pc.cast(t["time_unix_nano"], pa.int64()),
        "severity_number": t["severity_number"],
        "severity_text": t["severity_text"],
        "service_name": t["service_name"],
        "body": t["body"],
        "trace_id": t["trace_id"],
        "span_id": t["span_id"],
    })


def samples_table(files):
    parts = []
    for f in files:
        s = pq.read_table(f, columns=["series_id", "timestamp", "value"])
        cat = pq.read_table(os.path.join(os.path.dirname(f), "series.parquet"),
                            columns=["series_id", "metric_name", "labels"])
        model = pc.fill_null(pc.map_lookup(cat["labels"], pa.scalar("model"), "first"), "")
        cat = pa.table({"series_id": cat["series_id"], "metric_name": cat["metric_name"],
                        "model": model})
        s = s.join(cat, "series_id")
        parts.append(pa.table({
            "series_id": s["series_id"],
            "metric_name": s["metric_name"],
            "model": s["model"],
            "ts": pc.cast(pc.cast(s["timestamp"], pa.timestamp("ms")), pa.int64()),
            "value": s["value"],
        }))
    return pa.concat_tables(parts)


def q7_sql(p, dialect):
    start, end, step, metric = p["q7"]
    step_ms = step * 1000
    n = (end - start) // step_ms + 1
    if dialect == "duckdb":
        k = (f"unnest(range(greatest(CAST(ceil((ts - {start}) / {step_ms}.0) AS BIGINT), 0), "
             f"least(CAST(ceil((ts + 300000 - {start}) / {step_ms}.0) AS BIGINT) - 1, {n - 1}) + 1))")
        inner = (f"SELECT series_id, model, ts, value, {k} * {step_ms} + {start} AS t FROM samples "
                 f"WHERE metric_name = '{metric}' AND ts > {start - 300000} AND ts <= {end}")
        per = (f"SELECT any_value(model) AS model, t, (arg_max(value, ts) - arg_min(value, ts)) / 300.0 AS r, "
               f"count(*) AS n FROM ({inner}) GROUP BY series_id, t")
    else:
        k = (f"arrayJoin(range(toInt64(greatest(ceil((ts - {start}) / {step_ms}), 0)), "
             f"toInt64(least(ceil((ts + 300000 - {start}) / {step_ms}) - 1, {n - 1}) + 1)))")
        inner = (f"SELECT series_id, model, ts, value, {k} * {step_ms} + {start} AS t FROM b.samples "
                 f"WHERE metric_name = '{metric}' AND ts > {start - 300000} AND ts <= {end}")
        per = (f"SELECT any(model) AS model, t, (argMax(value, ts) - argMin(value, ts)) / 300.0 AS r, "
               f"count() AS n FROM ({inner}) GROUP BY series_id, t")
    return (f"SELECT model, t, sum(r) AS v FROM ({per}) WHERE n >= 2 GROUP BY model, t "
            f"ORDER BY model, t")


def questions(p, dialect):
    """(id, sql builder(iteration), digest(rows)) for each question."""
    ch = dialect == "chdb"
    db = "b." if ch else ""
    q = lambda x: f"quantileExactInclusive({x})(duration)" if ch else f"quantile_cont(duration, {x})"
    bucket = lambda ns: f"intDiv(start_time, {ns}) * {ns}" if ch else f"(start_time // {ns}) * {ns}"
    unhex = "unhex" if ch else "from_hex"
    text = (f"hasToken(body, '{p['q6'][2]}')" if ch else f"body LIKE '%{p['q6'][2]}%'")
    err = "avg(status_code = 2)" if ch else "avg(CASE WHEN status_code = 2 THEN 1.0 ELSE 0.0 END)"
    ids = p["trace_ids"]
    within = f"start_time >= {p['unaligned'][0]} AND start_time < {p['unaligned'][1]}"
    # Questions asked over the whole day and again over the unaligned range.
    error_ratio = lambda where: (f"SELECT service_name, {err} FROM {db}spans WHERE {where} "
                                 f"GROUP BY service_name ORDER BY service_name")
    tokens = lambda where: (f"SELECT model, {bucket(HOUR)} AS b, sum(input_tokens), "
                            f"sum(output_tokens) FROM {db}spans WHERE {where} AND model != '' "
                            f"GROUP BY model, b ORDER BY model, b")
    return [
        ("q1", lambda i: f"SELECT * FROM {db}spans "
                         f"WHERE trace_id = {unhex}('{ids[i % len(ids)]}')",
         lambda rows: sum(r[5] for r in rows)),
        ("q2", lambda i: f"SELECT model, {bucket(60_000_000_000)} AS b, {q(0.5)}, {q(0.99)} "
                         f"FROM {db}spans WHERE start_time >= {p['q2'][0]} AND start_time < {p['q2'][1]} "
                         f"AND model != '' GROUP BY model, b ORDER BY model, b",
         lambda rows: sum(r[3] for r in rows) / 1e6),
        ("q3", lambda i: error_ratio("true"), lambda rows: sum(r[1] for r in rows)),
        ("q4", lambda i: f"SELECT duration, service_name, span_name FROM {db}spans "
                         f"WHERE model = '{p['q4'][0]}' AND user_id = '{p['q4'][1]}' "
                         f"ORDER BY duration DESC LIMIT 10",
         lambda rows: sum(r[0] for r in rows)),
        ("q5", lambda i: tokens("true"), lambda rows: sum(r[2] + r[3] for r in rows)),
        ("q6", lambda i: f"SELECT time, severity_text, service_name, body FROM {db}logs "
                         f"WHERE time >= {p['q6'][0]} AND time < {p['q6'][1]} AND {text} "
                         f"ORDER BY time DESC LIMIT 100",
         lambda rows: sum((r[0] - p["t0_ns"]) / 1e9 for r in rows)),
        ("q7", lambda i: q7_sql(p, dialect), lambda rows: sum(r[2] for r in rows)),
        ("q8", lambda i: error_ratio(within), lambda rows: sum(r[1] for r in rows)),
        ("q9", lambda i: tokens(within), lambda rows: sum(r[2] + r[3] for r in rows)),
        ("q10", lambda i: f"SELECT span_name, count(*) FROM {db}spans WHERE {within} "
                          f"GROUP BY span_name ORDER BY span_name",
         lambda rows: sum(r[1] for r in rows)),
    ]


def timed(run, sql_for, digest, repeats):
    rows = run(sql_for(0))
    times = []
    for i in range(repeats):
        t = time.perf_counter()
        run(sql_for(i))
        times.append((time.perf_counter() - t) * 1e3)
    return {"median_ms": statistics.median(times), "rows": len(rows), "digest": float(digest(rows))}


def duckdb_peer(p, tables, workdir, repeats):
    import duckdb

    path = os.path.join(workdir, "duckdb.db")
    con = duckdb.connect(path)
    t = time.perf_counter()
    if tables is not None:
        spans, logs, samples = tables
        con.register("spans_in", spans)
        con.register("logs_in", logs)
        con.register("samples_in", samples)
        con.execute("CREATE TABLE spans AS SELECT * FROM spans_in ORDER BY start_time")
        con.execute("CREATE INDEX spans_trace ON spans (trace_id)")
        con.execute("CREATE TABLE logs AS SELECT * FROM logs_in ORDER BY time")
        con.execute("CREATE TABLE samples AS SELECT * FROM samples_in ORDER BY metric_name, series_id, ts")
        con.execute("CHECKPOINT")
    load_s = time.perf_counter() - t

    def run(sql):
        return con.execute(sql).fetchall()

    out = {"load_s": load_s, "bytes": os.path.getsize(path), "answers": {}}
    for qid, sql_for, digest in questions(p, "duckdb"):
        out["answers"][qid] = timed(run, sql_for, digest, repeats)
    con.close()
    return out


def chdb_peer(p, tables, workdir, repeats):
    from chdb import session

    sess = session.Session(os.path.join(workdir, "chdb"))
    t = time.perf_counter()
    if tables is not None:
        chdb_load(sess, tables, workdir)
    load_s = time.perf_counter() - t
    if tables is not None:
        chdb_full_load(sess, p["files"][0], p["files"][1], workdir)

    def run(sql):
        res = str(sess.query(sql, "JSONCompact"))
        return json.loads(res)["data"] if res.strip() else []

    out = {"load_s": load_s, "answers": {}}
    # Bytes on disk per table (every active part: columns, marks, indexes, compressed).
    parts = run("SELECT table, sum(bytes_on_disk) FROM system.parts "
                "WHERE database = 'b' AND active GROUP BY table")
    out["bytes"] = {r[0]: int(r[1]) for r in parts}
    for qid, sql_for, digest in questions(p, "chdb"):
        out["answers"][qid] = timed(run, sql_for, lambda rows, d=digest: d(
            [[float(x) if isinstance(x, str) and _num(x) else x for x in r] for r in rows]), repeats)
    return out


def chdb_load(sess, tables, workdir):
    sess.query("CREATE DATABASE IF NOT EXISTS b")
    sess.query(
        "CREATE TABLE b.spans (trace_id FixedString(16) CODEC(ZSTD(3)), "
        "span_id FixedString(8) CODEC(ZSTD(3)), service_name LowCardinality(String), "
        "span_name LowCardinality(String), start_time Int64 CODEC(Delta, ZSTD(3)), "
        "duration Int64 CODEC(ZSTD(3)), status_code UInt8, model LowCardinality(String), "
        "input_tokens Nullable(Int64), output_tokens Nullable(Int64), user_id String CODEC(ZSTD(3)), "
        "INDEX idx_trace trace_id TYPE bloom_filter(0.001) GRANULARITY 1, "
        "INDEX idx_user user_id TYPE bloom_filter(0.01) GRANULARITY 1) "
        "ENGINE = MergeTree PARTITION BY intDiv(start_time, 86400000000000) "
        "ORDER BY (service_name, span_name, start_time)")
    sess.query(
        "CREATE TABLE b.logs (time Int64 CODEC(Delta, ZSTD(3)), severity_number Int32, "
        "severity_text LowCardinality(String), service_name LowCardinality(String), "
        "body String CODEC(ZSTD(3)), trace_id Nullable(FixedString(16)), span_id Nullable(FixedString(8)), "
        "INDEX idx_body body TYPE tokenbf_v1(32768, 3, 0) GRANULARITY 1) "
        "ENGINE = MergeTree ORDER BY (service_name, time)")
    sess.query(
        "CREATE TABLE b.samples (series_id UInt64, metric_name LowCardinality(String), "
        "model LowCardinality(String), ts Int64 CODEC(DoubleDelta, ZSTD(3)), "
        "value Float64 CODEC(Gorilla, ZSTD(3))) "
        "ENGINE = MergeTree ORDER BY (metric_name, series_id, ts)")
    for name, table in zip(["spans", "logs", "samples"], tables):
        f = os.path.join(workdir, f"{name}.parquet")
        pq.write_table(table, f, compression="zstd")
        sess.query(f"INSERT INTO b.{name} SELECT * FROM file('{f}', Parquet)")
        sess.query(f"OPTIMIZE TABLE b.{name} FINAL")
        os.remove(f)


def str_map(m):
    """A typed attribute map (Map<Utf8, Struct<kind, str, int, double, bool, bytes>>) as the
    Map<Utf8, Utf8> an exporter writes: every value as text."""
    if isinstance(m, pa.ChunkedArray):
        m = m.combine_chunks()
    items = m.items
    text = pc.coalesce(
        pc.struct_field(items, "str"),
        pc.cast(pc.struct_field(items, "int"), pa.string()),
        pc.cast(pc.struct_field(items, "double"), pa.string()),
        pc.cast(pc.struct_field(items, "bool"), pa.string()),
        pc.binary_join_element_wise(pc.cast(pc.struct_field(items, "bytes"), pa.string()), ""),
        pa.scalar(""),
    )
    return pa.MapArray.from_arrays(m.offsets, m.keys, text)


def zero_id(n):
    """An all-zero id of `n` bytes, for the null ids of a non-Nullable FixedString column."""
    return pa.scalar(b"\0" * n, pa.binary(n))


def map_indexes(*columns):
    """The exporter's bloom-filter indexes on the keys and values of attribute map columns."""
    return "".join(
        f"INDEX idx_{c}_{part} map{part.capitalize()}s({c}) TYPE bloom_filter(0.01) GRANULARITY 1, "
        for c in columns for part in ("key", "value"))


def list_of(lst, values):
    """A list column with `lst`'s offsets over `values` (one per flattened item)."""
    return pa.ListArray.from_arrays(lst.offsets, values)


def full_spans(files):
    t = pa.concat_tables(pq.read_table(f) for f in files).combine_chunks()
    n = t.num_rows
    events = t["events"].chunk(0) if t["events"].num_chunks else pa.array([[]] * n, t.schema.field("events").type)
    links = t["links"].chunk(0) if t["links"].num_chunks else pa.array([[]] * n, t.schema.field("links").type)
    ev, lk = events.flatten(), links.flatten()
    cols = {
        "start_time": pc.cast(t["start_time_unix_nano"], pa.int64()),
        "trace_id": t["trace_id"],
        "span_id": t["span_id"],
        "parent_span_id": pc.fill_null(t["parent_span_id"], zero_id(8)),
        "trace_state": t["trace_state"],
        "flags": t["flags"],
        "span_name": t["span_name"],
        "span_kind": t["span_kind"],
        "service_name": t["service_name"],
        "resource_attributes": str_map(t["resource_attributes"]),
        "scope_name": t["scope_name"],
        "scope_version": t["scope_version"],
        "span_attributes": str_map(t["attributes"]),
        "duration": t["duration_nano"],
        "status_code": t["status_code"],
        "status_message": t["status_message"],
        "events_time": list_of(events, pc.cast(pc.struct_field(ev, "time_unix_nano"), pa.int64())),
        "events_name": list_of(events, pc.struct_field(ev, "name")),
        "events_attributes": list_of(events, str_map(pc.struct_field(ev, "attributes"))),
        "links_trace_id": list_of(links, pc.struct_field(lk, "trace_id")),
        "links_span_id": list_of(links, pc.struct_field(lk, "span_id")),
        "links_trace_state": list_of(links, pc.struct_field(lk, "trace_state")),
        "links_attributes": list_of(links, str_map(pc.struct_field(lk, "attributes"))),
    }
    for name in GENAI_COLUMNS:
        cols[name] = t[name]
    return pa.table(cols)


# Sightline's promoted GenAI span fields with the chDB type each is stored as.
GENAI_COLUMNS = {
    "gen_ai_operation_name": "LowCardinality(Nullable(String))",
    "gen_ai_provider_name": "LowCardinality(Nullable(String))",
    "gen_ai_request_model": "LowCardinality(Nullable(String))",
    "gen_ai_response_model": "LowCardinality(Nullable(String))",
    "gen_ai_usage_input_tokens": "Nullable(Int64)",
    "gen_ai_usage_output_tokens": "Nullable(Int64)",
    "gen_ai_usage_total_tokens": "Nullable(Int64)",
    "gen_ai_usage_cache_read_input_tokens": "Nullable(Int64)",
    "gen_ai_usage_cost": "Nullable(Float64)",
    "gen_ai_request_temperature": "Nullable(Float64)",
    "gen_ai_response_finish_reasons": "Array(LowCardinality(String))",
    "gen_ai_conversation_id": "Nullable(String) CODEC(ZSTD(3))",
    "token_entropy_mean": "Nullable(Float64)",
    "token_entropy_max": "Nullable(Float64)",
    "low_confidence_tokens": "Nullable(Int64)",
    "hallucination_index": "Nullable(Float64)",
}


def full_logs(files):
    t = pa.concat_tables(pq.read_table(f) for f in files).combine_chunks()
    return pa.table({
        "time": pc.cast(t["time_unix_nano"], pa.int64()),
        "observed_time": pc.cast(t["observed_time_unix_nano"], pa.int64()),
        "trace_id": pc.fill_null(t["trace_id"], zero_id(16)),
        "span_id": pc.fill_null(t["span_id"], zero_id(8)),
        "flags": t["flags"],
        "severity_text": t["severity_text"],
        "severity_number": t["severity_number"],
        "service_name": t["service_name"],
        "body": t["body"],
        "body_kind": t["body_kind"],
        "resource_attributes": str_map(t["resource_attributes"]),
        "scope_name": t["scope_name"],
        "event_name": t["event_name"],
        "log_attributes": str_map(t["attributes"]),
    })


MAP = "Map(LowCardinality(String), String) CODEC(ZSTD(3))"


def chdb_full_load(sess, spans_files, logs_files, workdir):
    """Every field of the same rows, for the bytes comparison (see the module doc)."""
    genai = "".join(f"{k} {v}, " for k, v in GENAI_COLUMNS.items())
    sess.query(
        "CREATE TABLE b.otel_traces (start_time Int64 CODEC(Delta, ZSTD(3)), "
        "trace_id FixedString(16) CODEC(ZSTD(3)), span_id FixedString(8) CODEC(ZSTD(3)), "
        "parent_span_id FixedString(8) CODEC(ZSTD(3)), trace_state String CODEC(ZSTD(3)), "
        "flags UInt32 CODEC(ZSTD(3)), span_name LowCardinality(String), span_kind UInt8, "
        f"service_name LowCardinality(String), resource_attributes {MAP}, "
        "scope_name LowCardinality(String), scope_version LowCardinality(String), "
        f"span_attributes {MAP}, duration Int64 CODEC(ZSTD(3)), status_code UInt8, "
        "status_message String CODEC(ZSTD(3)), "
        "events_time Array(Int64) CODEC(ZSTD(3)), events_name Array(LowCardinality(String)), "
        f"events_attributes Array({MAP.split(' CODEC')[0]}) CODEC(ZSTD(3)), "
        "links_trace_id Array(FixedString(16)) CODEC(ZSTD(3)), "
        "links_span_id Array(FixedString(8)) CODEC(ZSTD(3)), "
        "links_trace_state Array(String) CODEC(ZSTD(3)), "
        f"links_attributes Array({MAP.split(' CODEC')[0]}) CODEC(ZSTD(3)), {genai}"
        "INDEX idx_trace_id trace_id TYPE bloom_filter(0.001) GRANULARITY 1, "
        f"{map_indexes('resource_attributes', 'span_attributes')}"
        "INDEX idx_duration duration TYPE minmax GRANULARITY 1) "
        "ENGINE = MergeTree PARTITION BY intDiv(start_time, 86400000000000) "
        "ORDER BY (service_name, span_name, start_time)")
    sess.query(
        "CREATE TABLE b.otel_logs (time Int64 CODEC(Delta, ZSTD(3)), "
        "observed_time Int64 CODEC(Delta, ZSTD(3)), trace_id FixedString(16) CODEC(ZSTD(3)), "
        "span_id FixedString(8) CODEC(ZSTD(3)), flags UInt32, "
        "severity_text LowCardinality(String), severity_number Int32, "
        "service_name LowCardinality(String), body String CODEC(ZSTD(3)), body_kind UInt8, "
        f"resource_attributes {MAP}, scope_name LowCardinality(String), "
        f"event_name LowCardinality(String), log_attributes {MAP}, "
        "INDEX idx_trace_id trace_id TYPE bloom_filter(0.001) GRANULARITY 1, "
        f"{map_indexes('resource_attributes', 'log_attributes')}"
        "INDEX idx_body body TYPE tokenbf_v1(32768, 3, 0) GRANULARITY 8) "
        "ENGINE = MergeTree PARTITION BY intDiv(time, 86400000000000) "
        "ORDER BY (service_name, time)")
    for name, table in [("otel_traces", full_spans(spans_files)), ("otel_logs", full_logs(logs_files))]:
        f = os.path.join(workdir, f"{name}.parquet")
        pq.write_table(table, f, compression="zstd")
        del table
        sess.query(f"INSERT INTO b.{name} SELECT * FROM file('{f}', Parquet)")
        sess.query(f"OPTIMIZE TABLE b.{name} FINAL")
        os.remove(f)


def _num(x):
    try:
        float(x)
        return True
    except ValueError:
        return False


def main():
    params_path, workdir, out_path = sys.argv[1:4]
    repeats = int(sys.argv[4]) if len(sys.argv) > 4 else 5
    p = json.load(open(params_path))
    # The peers' databases are kept next to a copy of the parameters they were loaded with and
    # reused while those stay the same (the same files, so the same rows).
    marker = os.path.join(workdir, "loaded.json")
    tables = None
    if os.path.exists(marker) and json.load(open(marker)) == p["files"]:
        print("  peers: reusing the loaded DuckDB and chDB databases", file=sys.stderr)
    else:
        shutil.rmtree(workdir, ignore_errors=True)
        os.makedirs(workdir)
        t = time.perf_counter()
        spans_files, logs_files, samples_files = p["files"]
        tables = (spans_table(spans_files), logs_table(logs_files), samples_table(samples_files))
        print(f"  peers: read {tables[0].num_rows} spans, {tables[1].num_rows} logs, "
              f"{tables[2].num_rows} samples from Sightline's Parquet in {time.perf_counter() - t:.0f}s",
              file=sys.stderr)
    out = {}
    out["duckdb"] = duckdb_peer(p, tables, workdir, repeats)
    print(f"  peers: duckdb done (load {out['duckdb']['load_s']:.0f}s)", file=sys.stderr)
    out["chdb"] = chdb_peer(p, tables, workdir, repeats)
    print(f"  peers: chdb done (load {out['chdb']['load_s']:.0f}s)", file=sys.stderr)
    json.dump(out, open(out_path, "w"), indent=1)
    if tables is not None:
        json.dump(p["files"], open(marker, "w"))


if __name__ == "__main__":
    main()
