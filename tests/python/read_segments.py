#!/usr/bin/env python3
"""Read Sightline segment Parquet files with pyarrow and with DuckDB; print what each saw as JSON.

Usage: read_segments.py SIGNAL FILE [FILE ...]      SIGNAL is spans, logs or samples

Called by the Rust interop test (tests/e2e/interop.rs), which compares the output with what it
appended, exactly. Output (one JSON object on stdout):

    {
      "files":   [{"path", "pyarrow_rows", "row_groups", "created_by", "duckdb_rows"}, ...],
      "pyarrow": [row, ...],      every row of every file, read with pyarrow
      "duckdb":  [row, ...],      the same rows, read with DuckDB SQL over all files at once
      "duckdb_aggregates": {...}  a few GROUP BY / SUM answers computed by DuckDB
    }

Rows carry ids as lowercase hex, timestamps as integers (ns for spans and logs, ms for samples),
and floats as their IEEE-754 bit pattern (an unsigned integer) so the comparison can be exact.
Attribute values are looked up in the map column by key (`attributes['user.id'].str` in DuckDB);
a missing key yields null.
"""

import json
import struct
import sys

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq


def f64_bits(v):
    """IEEE-754 bits of a float, or None."""
    if v is None:
        return None
    return struct.unpack("<Q", struct.pack("<d", v))[0]


def hex_or_none(b):
    return None if b is None else b.hex()


def map_str(entries, key):
    """The `str` child of the value of `key` in one row of an attribute map column."""
    for k, v in entries or []:
        if k == key:
            return v["str"]
    return None


def ints(table, name):
    """A timestamp or integer column as Python ints (timestamps in their stored unit)."""
    return table.column(name).cast(pa.int64()).to_pylist()


def pyarrow_rows(signal, table):
    n = table.num_rows
    if signal == "spans":
        trace = table.column("trace_id").to_pylist()
        span = table.column("span_id").to_pylist()
        start = ints(table, "start_time_unix_nano")
        dur = table.column("duration_nano").to_pylist()
        model = table.column("gen_ai_request_model").to_pylist()
        tokens = table.column("gen_ai_usage_input_tokens").to_pylist()
        temp = table.column("gen_ai_request_temperature").to_pylist()
        attrs = table.column("attributes").to_pylist()
        return [
            {
                "trace_id": hex_or_none(trace[i]),
                "span_id": hex_or_none(span[i]),
                "start_ns": start[i],
                "duration_ns": dur[i],
                "model": model[i],
                "input_tokens": tokens[i],
                "temperature_bits": f64_bits(temp[i]),
                "user_id": map_str(attrs[i], "user.id"),
            }
            for i in range(n)
        ]
    if signal == "logs":
        trace = table.column("trace_id").to_pylist()
        time = ints(table, "time_unix_nano")
        observed = ints(table, "observed_time_unix_nano")
        sev = table.column("severity_number").to_pylist()
        sev_text = table.column("severity_text").to_pylist()
        body = table.column("body").to_pylist()
        attrs = table.column("attributes").to_pylist()
        return [
            {
                "trace_id": hex_or_none(trace[i]),
                "time_ns": time[i],
                "observed_ns": observed[i],
                "severity_number": sev[i],
                "severity_text": sev_text[i],
                "body": body[i],
                "user_id": map_str(attrs[i], "user.id"),
            }
            for i in range(n)
        ]
    if signal == "samples":
        series = table.column("series_id").to_pylist()
        ts = ints(table, "timestamp")
        value = table.column("value").to_pylist()
        return [
            {"series_id": series[i], "timestamp_ms": ts[i], "value_bits": f64_bits(value[i])}
            for i in range(n)
        ]
    raise SystemExit(f"unknown signal {signal!r}")


DUCKDB_ROWS = {
    "spans": """
        SELECT lower(hex(trace_id)) AS trace_id, lower(hex(span_id)) AS span_id,
               epoch_ns(start_time_unix_nano) AS start_ns, duration_nano AS duration_ns,
               gen_ai_request_model AS model, gen_ai_usage_input_tokens AS input_tokens,
               gen_ai_request_temperature AS temperature,
               attributes['user.id'].str AS user_id
        FROM read_parquet($files)""",
    "logs": """
        SELECT lower(hex(trace_id)) AS trace_id, epoch_ns(time_unix_nano) AS time_ns,
               epoch_ns(observed_time_unix_nano) AS observed_ns, severity_number, severity_text,
               body, attributes['user.id'].str AS user_id
        FROM read_parquet($files)""",
    "samples": """
        SELECT series_id, epoch_ms("timestamp") AS timestamp_ms, "value"
        FROM read_parquet($files)""",
}

# Single-value answers (an integer each).
DUCKDB_SCALARS = {
    "spans": {
        "count": "SELECT count(*) FROM read_parquet($files)",
        "sum_duration_ns": "SELECT sum(duration_nano)::BIGINT FROM read_parquet($files)",
        "sum_input_tokens": "SELECT sum(gen_ai_usage_input_tokens)::BIGINT FROM read_parquet($files)",
    },
    "logs": {
        "count": "SELECT count(*) FROM read_parquet($files)",
        "max_time_ns": "SELECT max(epoch_ns(time_unix_nano)) FROM read_parquet($files)",
    },
    "samples": {
        "count": "SELECT count(*) FROM read_parquet($files)",
        "max_timestamp_ms": 'SELECT max(epoch_ms("timestamp")) FROM read_parquet($files)',
    },
}

# Grouped answers: [[key, count], ...] ordered by key.
DUCKDB_GROUPS = {
    "spans": {
        "count_by_model": """
            SELECT gen_ai_request_model, count(*) FROM read_parquet($files)
            GROUP BY ALL ORDER BY 1""",
        "count_by_user": """
            SELECT coalesce(attributes['user.id'].str, '<missing>'), count(*)
            FROM read_parquet($files) GROUP BY ALL ORDER BY 1""",
    },
    "logs": {
        "count_by_severity": """
            SELECT severity_text, count(*) FROM read_parquet($files) GROUP BY ALL ORDER BY 1""",
    },
    "samples": {
        "count_by_series": """
            SELECT series_id, count(*) FROM read_parquet($files) GROUP BY ALL ORDER BY 1""",
    },
}


def duckdb_rows(con, signal, files):
    cur = con.execute(DUCKDB_ROWS[signal], {"files": files})
    names = [d[0] for d in cur.description]
    rows = []
    for values in cur.fetchall():
        row = dict(zip(names, values))
        if "temperature" in row:
            row["temperature_bits"] = f64_bits(row.pop("temperature"))
        if "value" in row:
            row["value_bits"] = f64_bits(row.pop("value"))
        rows.append(row)
    return rows


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    signal, files = sys.argv[1], sys.argv[2:]
    con = duckdb.connect()
    out = {"files": [], "pyarrow": [], "duckdb": [], "duckdb_aggregates": {}}
    for path in files:
        meta = pq.ParquetFile(path).metadata
        table = pq.read_table(path)
        (duck_count,) = con.execute("SELECT count(*) FROM read_parquet(?)", [path]).fetchone()
        out["files"].append(
            {
                "path": path,
                "pyarrow_rows": table.num_rows,
                "row_groups": meta.num_row_groups,
                "created_by": meta.created_by,
                "duckdb_rows": duck_count,
            }
        )
        out["pyarrow"].extend(pyarrow_rows(signal, table))
    out["duckdb"] = duckdb_rows(con, signal, files)
    aggregates = out["duckdb_aggregates"]
    for name, sql in DUCKDB_SCALARS[signal].items():
        (aggregates[name],) = con.execute(sql, {"files": files}).fetchone()
    for name, sql in DUCKDB_GROUPS[signal].items():
        aggregates[name] = [list(r) for r in con.execute(sql, {"files": files}).fetchall()]
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
