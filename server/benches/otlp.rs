//! Ingest CPU per request before storage: decode of a 512-item OTLP protobuf request, mapping
//! to storage records, and (spans) the conversion to the Arrow batch the WAL and memtable take.
//! Payloads are `otlp-load`'s (`sightline_server::loadgen`).
//!
//! ```text
//! cargo bench -p sightline-server --bench otlp
//! ```
#![allow(missing_docs)] // criterion_group! generates undocumented items

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use sightline_server::limits::Limits;
use sightline_server::loadgen::{logs_body, metrics_body, traces_body};
use sightline_server::otlp::{self, Encoding, MapContext};

const BATCH: usize = 512;

fn ctx() -> MapContext {
    MapContext::at(&Limits::default(), sightline_query::time::now())
}

fn traces(c: &mut Criterion) {
    let body = traces_body(7, BATCH);
    let ctx = ctx();
    let mut g = c.benchmark_group("otlp_traces_512");
    g.throughput(Throughput::Elements(BATCH as u64));
    g.bench_function("decode", |b| {
        b.iter(|| otlp::decode_traces(&body, Encoding::Protobuf))
    });
    g.bench_function("map", |b| {
        b.iter_batched(
            || otlp::decode_traces(&body, Encoding::Protobuf).expect("decodes"),
            |req| otlp::traces::map_traces(&req, &ctx),
            BatchSize::SmallInput,
        )
    });
    g.bench_function("decode_map_to_arrow", |b| {
        b.iter(|| {
            let req = otlp::decode_traces(&body, Encoding::Protobuf).expect("decodes");
            let (mapped, _) = otlp::traces::map_traces(&req, &ctx);
            sightline_storage::columnar::spans_to_batch(&mapped.rows).expect("converts")
        })
    });
    g.finish();
}

fn logs_and_metrics(c: &mut Criterion) {
    let ctx = ctx();
    let logs = logs_body(7, BATCH);
    let metrics = metrics_body(7, BATCH);
    let mut g = c.benchmark_group("otlp_other_512");
    g.throughput(Throughput::Elements(BATCH as u64));
    g.bench_function("logs_decode_map", |b| {
        b.iter(|| {
            let req = otlp::decode_logs(&logs, Encoding::Protobuf).expect("decodes");
            otlp::logs::map_logs(&req, &ctx)
        })
    });
    g.bench_function("metrics_decode_map", |b| {
        b.iter(|| {
            let req = otlp::decode_metrics(&metrics, Encoding::Protobuf).expect("decodes");
            otlp::metrics::map_metrics(&req, &ctx)
        })
    });
    g.finish();
}

criterion_group!(benches, traces, logs_and_metrics);
criterion_main!(benches);
