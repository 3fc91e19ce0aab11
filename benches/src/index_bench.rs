//! Index and rollup bytes of a span workload shape, and what they buy: spans with a chosen
//! number of services, span names, models and users (one user per trace) over one day are
//! appended and flushed into segments of a chosen size; reported are the bytes per span of the
//! data, the postings, the attribute blooms and the rollups (with the index share of the
//! data), the rollup rows per span, and the time and row groups read by a lookup of one user
//! and by a count per service over the whole day (from rollups when the segments have them).

use std::path::Path;
use std::time::Instant;

use serde_json::{Value, json};
use sightline_storage::schema::col;
use sightline_storage::{
    FsyncPolicy, Matcher, Predicate, ScanRequest, Signal, Store, StoreConfig, TenantId, TimeRange,
    UnixNanos,
};

use crate::disk::bytes_named;
use crate::workload::{ShapedSpanGen, SpanShape, TraceGen};

/// The workload: how many spans of which shape, flushed into segments of which size.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    /// Spans in all.
    pub spans: usize,
    /// Cardinalities of the spans.
    pub span: SpanShape,
    /// Spans per flushed segment.
    pub segment_spans: usize,
}

const DAY_START_NS: i64 = 1_795_910_400_000_000_000; // 2026-11-29T00:00Z
const DAY_NS: i64 = 86_400_000_000_000;

fn tenant() -> TenantId {
    TenantId::new("bench").unwrap_or_else(|_| unreachable!("valid tenant id"))
}

/// Runs the benchmark in `dir`; prints the figures and returns them as JSON.
pub fn run(dir: &Path, shape: Shape) -> Result<Value, String> {
    let store = Store::open(
        dir,
        StoreConfig {
            background: false,
            fsync: FsyncPolicy::Never,
            memory_budget_bytes: 8 << 30,
            ..StoreConfig::default()
        },
    )
    .map_err(|e| e.to_string())?;
    let mut generator = ShapedSpanGen::new(shape.span, 7);
    let traces = (shape.spans / shape.span.spans_per_trace.max(1)) as u64;
    let started = Instant::now();
    let (mut batch, mut since_flush, mut stored) = (Vec::new(), 0usize, 0usize);
    for t in 0..traces {
        let start = DAY_START_NS + (t as i64).saturating_mul(DAY_NS / traces.max(1) as i64);
        batch.extend(generator.trace(UnixNanos(start)));
        if batch.len() >= 10_000 || t + 1 == traces {
            store
                .append_spans(&tenant(), &batch)
                .map_err(|e| e.to_string())?;
            since_flush += batch.len();
            stored += batch.len();
            batch.clear();
            if since_flush >= shape.segment_spans || t + 1 == traces {
                store.flush().map_err(|e| e.to_string())?;
                since_flush = 0;
            }
        }
    }
    let load_s = started.elapsed().as_secs_f64();
    let per_span = |name: &str| bytes_named(dir, name) as f64 / stored.max(1) as f64;
    let data = per_span("data.parquet");
    let postings = per_span("postings.bin");
    let blooms = per_span("attr_blooms.bin");
    let rollup = per_span("rollup.parquet") + per_span("rollup_durations.parquet");

    let scan = |req: &ScanRequest| -> Result<(f64, sightline_storage::ScanResult), String> {
        let mut times = Vec::new();
        let mut last = None;
        for _ in 0..5 {
            let t = Instant::now();
            last = Some(store.scan(req).map_err(|e| e.to_string())?);
            times.push(t.elapsed().as_secs_f64() * 1e3);
        }
        times.sort_by(f64::total_cmp);
        let res = last.ok_or("no run")?;
        Ok((times[times.len() / 2], res))
    };
    let user = format!("user-{:06}", shape.span.users / 3);
    let lookup = ScanRequest::new(tenant(), Signal::Spans, TimeRange::ALL)
        .with(Predicate::Attr(Matcher::eq("user.id", user.clone())))
        .project(&[col::TRACE_ID, col::SPAN_ID]);
    let (lookup_ms, lookup_res) = scan(&lookup)?;
    let found: usize = lookup_res.batches.iter().map(|b| b.num_rows()).sum();
    let mut by_service = ScanRequest::new(tenant(), Signal::Spans, TimeRange::ALL).project(&[
        col::SERVICE_NAME,
        col::START_TIME,
        col::STATUS_CODE,
    ]);
    by_service.rollups = true;
    let (service_ms, service_res) = scan(&by_service)?;
    let rollup_rows: usize = service_res.rollups.iter().map(|b| b.num_rows()).sum();
    println!(
        "{} spans ({} per trace, {} services, {} names, {} models, {} users) in segments of {}: loaded in {load_s:.1} s",
        stored,
        shape.span.spans_per_trace,
        shape.span.services,
        shape.span.names,
        shape.span.models,
        shape.span.users,
        shape.segment_spans
    );
    println!(
        "bytes per span: data {data:.1}, postings {postings:.2}, attribute blooms {blooms:.2}, rollups {rollup:.2}; index share of the data {:.1} %",
        100.0 * (postings + blooms) / data.max(f64::MIN_POSITIVE)
    );
    println!(
        "user.id lookup: {found} spans, {lookup_ms:.1} ms, {} of {} row groups read",
        lookup_res.stats.row_groups_read, lookup_res.stats.row_groups_total
    );
    println!(
        "count by service (whole day): {service_ms:.1} ms, {} of {} segments from rollups ({rollup_rows} rollup rows for {stored} spans)",
        service_res.stats.segments_from_rollup, service_res.stats.segments_total
    );
    Ok(json!({
        "spans": stored, "load_s": load_s,
        "bytes_per_span": {"data": data, "postings": postings, "attr_blooms": blooms, "rollups": rollup},
        "lookup": {"ms": lookup_ms, "spans": found, "row_groups_read": lookup_res.stats.row_groups_read,
                   "row_groups_total": lookup_res.stats.row_groups_total},
        "by_service": {"ms": service_ms, "segments_from_rollup": service_res.stats.segments_from_rollup,
                       "segments_total": service_res.stats.segments_total, "rollup_rows": rollup_rows},
    }))
}
