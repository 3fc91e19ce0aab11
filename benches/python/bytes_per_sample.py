"""Store the same metric samples as Sightline did, with the tools users would pick instead,
and print their on-disk sizes as JSON.

usage: bytes_per_sample.py SEGMENT_LIST WORKDIR

SEGMENT_LIST names Sightline's sample segment Parquet files (one per line); the samples are read
from them (so every tool stores exactly the same values) and written:
  * with pyarrow's defaults (snappy, dictionary) and with zstd,
  * into chDB (embedded ClickHouse) MergeTree ORDER BY (series_id, timestamp) with
    DoubleDelta+ZSTD on the timestamp, Gorilla+ZSTD on the value, ZSTD on the series id,
    merged to one part (OPTIMIZE FINAL) and measured by bytes_on_disk of its active parts.
"""
import json
import os
import shutil
import sys

import pyarrow as pa
import pyarrow.parquet as pq


def main():
    seg_list, workdir = sys.argv[1], sys.argv[2]
    files = [l.strip() for l in open(seg_list) if l.strip()]
    table = pa.concat_tables(pq.read_table(f) for f in files)
    table = table.sort_by([("series_id", "ascending"), ("timestamp", "ascending")])
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    out = {"rows": table.num_rows}

    p = os.path.join(workdir, "pyarrow_default.parquet")
    pq.write_table(table, p)
    out["pyarrow_default"] = {"bytes": os.path.getsize(p)}
    p = os.path.join(workdir, "pyarrow_zstd.parquet")
    pq.write_table(table, p, compression="zstd")
    out["pyarrow_zstd"] = {"bytes": os.path.getsize(p)}

    from chdb import session

    sess = session.Session(os.path.join(workdir, "chdb"))
    sess.query("CREATE DATABASE IF NOT EXISTS b")
    sess.query(
        "CREATE TABLE b.samples (series_id UInt64 CODEC(ZSTD(3)), "
        "timestamp DateTime64(3) CODEC(DoubleDelta, ZSTD(3)), "
        "value Float64 CODEC(Gorilla, ZSTD(3))) "
        "ENGINE = MergeTree ORDER BY (series_id, timestamp)"
    )
    src = os.path.join(workdir, "pyarrow_zstd.parquet")
    sess.query(
        f"INSERT INTO b.samples SELECT series_id, timestamp, value FROM file('{src}', Parquet)"
    )
    sess.query("OPTIMIZE TABLE b.samples FINAL")
    res = sess.query(
        "SELECT sum(rows), sum(bytes_on_disk), sum(data_compressed_bytes) FROM system.parts "
        "WHERE database = 'b' AND table = 'samples' AND active",
        "CSV",
    )
    rows, on_disk, compressed = [int(x) for x in str(res).strip().split(",")]
    if rows != table.num_rows:
        raise SystemExit(f"chDB holds {rows} rows, expected {table.num_rows}")
    out["chdb"] = {"bytes": on_disk, "data_compressed_bytes": compressed}
    sess.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
