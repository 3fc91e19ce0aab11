//! Criterion benches of the storage hot paths: Arrow encoding of rows, WAL framing, durable
//! appends, segment writes and scans.

#![allow(missing_docs)] // criterion_group! generates an undocumented function.

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use sightline_bench::workload::{self, TraceGen};
use sightline_storage::{
    FsyncPolicy, MetricBatch, Predicate, ScanRequest, Signal, Store, StoreConfig, TenantId,
    TimeRange, UnixNanos, columnar,
};

const T0_MS: i64 = 1_795_910_400_000;

fn tenant() -> TenantId {
    TenantId::new("bench").expect("valid tenant")
}

fn encode(c: &mut Criterion) {
    let mut g = c.benchmark_group("encode");
    let spans = workload::SpanGen::new(1).traces(103, UnixNanos(T0_MS * 1_000_000), 1_000_000_000);
    g.throughput(Throughput::Elements(spans.len() as u64));
    g.bench_function("spans_to_arrow_515", |b| {
        b.iter(|| columnar::spans_to_batch(&spans).expect("encode"))
    });
    let mut series = workload::series(1000, 1);
    let samples = workload::samples(&mut series, T0_MS, 10, 150, 1);
    g.throughput(Throughput::Elements(samples.len() as u64));
    g.bench_function("samples_to_arrow_10k", |b| {
        b.iter(|| columnar::samples_to_batch(&samples).expect("encode"))
    });
    let mut buf = Vec::with_capacity(1 << 20);
    let payload = vec![7u8; 64 * 1024];
    g.throughput(Throughput::Bytes(payload.len() as u64));
    g.bench_function("wal_frame_64k", |b| {
        b.iter(|| {
            buf.clear();
            sightline_storage::wal::frame::encode(sightline_storage::Lsn(1), &payload, &mut buf);
        })
    });
    g.finish();
}

fn append(c: &mut Criterion) {
    let mut g = c.benchmark_group("append");
    g.sample_size(20);
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(
        dir.path(),
        StoreConfig {
            fsync: FsyncPolicy::Always,
            ..StoreConfig::default()
        },
    )
    .expect("open");
    let mut series = workload::series(1000, 2);
    let defs: Vec<_> = series.iter().map(|s| s.def.clone()).collect();
    let batch = MetricBatch {
        series: defs,
        samples: workload::samples(&mut series, T0_MS, 10, 150, 2),
    };
    g.throughput(Throughput::Elements(batch.samples.len() as u64));
    g.bench_function("durable_samples_10k", |b| {
        b.iter(|| store.append_metrics(&tenant(), &batch).expect("append"))
    });
    let spans = workload::SpanGen::new(3).traces(103, UnixNanos(T0_MS * 1_000_000), 1_000_000_000);
    g.throughput(Throughput::Elements(spans.len() as u64));
    g.bench_function("durable_spans_515", |b| {
        b.iter(|| store.append_spans(&tenant(), &spans).expect("append"))
    });
    g.finish();
}

fn flush_and_scan(c: &mut Criterion) {
    let mut g = c.benchmark_group("segment");
    g.sample_size(10);
    let spans =
        workload::SpanGen::new(4).traces(10_000, UnixNanos(T0_MS * 1_000_000), 3_000_000_000_000);
    g.throughput(Throughput::Elements(spans.len() as u64));
    g.bench_function("flush_50k_spans", |b| {
        b.iter_batched(
            || {
                let dir = tempfile::tempdir().expect("tempdir");
                let store = Store::open(
                    dir.path(),
                    StoreConfig {
                        fsync: FsyncPolicy::Never,
                        background: false,
                        ..StoreConfig::default()
                    },
                )
                .expect("open");
                store.append_spans(&tenant(), &spans).expect("append");
                (dir, store)
            },
            |(_dir, store)| store.flush().expect("flush"),
            BatchSize::PerIteration,
        )
    });
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(
        dir.path(),
        StoreConfig {
            fsync: FsyncPolicy::Never,
            background: false,
            ..StoreConfig::default()
        },
    )
    .expect("open");
    store.append_spans(&tenant(), &spans).expect("append");
    store.flush().expect("flush");
    let id = spans[spans.len() / 2].trace_id;
    g.bench_function("trace_by_id_50k", |b| {
        b.iter(|| store.trace(&tenant(), id).expect("trace"))
    });
    let req = ScanRequest::new(tenant(), Signal::Spans, TimeRange::ALL).with(Predicate::Attr(
        sightline_storage::Matcher::eq("gen_ai.request.model", "gpt-4o"),
    ));
    g.bench_function("scan_model_eq_50k", |b| {
        b.iter(|| store.scan(&req).expect("scan"))
    });
    g.finish();
}

criterion_group!(benches, encode, append, flush_and_scan);
criterion_main!(benches);
