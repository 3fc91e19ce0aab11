//! Index and rollup bytes of a span workload shape, and what they buy: spans with a chosen
//! number of services, span names, models and users (one user per trace) over one day are
//! appended and flushed into segments of a chosen size; reported are the bytes per span of the
//! data, the postings, the attribute blooms and the rollups (with the index share of the
//! data), the rollup rows per span, and the time and row groups read by a lookup of one user
//! and by a count per service over the whole day (from rollups when the segments have them).

use std::path::Path;
use std::time::Instant;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use sightline_storage::schema::col;
use sightline_storage::{
    AttrValue, FsyncPolicy, Matcher, Predicate, ScanRequest, Signal, SpanId, SpanRecord, Store,
    StoreConfig, TenantId, TimeRange, TraceId, UnixNanos,
};

/// The workload's shape.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    /// Spans in all.
    pub spans: usize,
    /// Spans per trace.
    pub spans_per_trace: usize,
    /// Distinct services.
    pub services: usize,
    /// Distinct span names.
    pub names: usize,
    /// Distinct models (one span in five is an LLM call).
    pub models: usize,
    /// Distinct `user.id` values (one per trace).
    pub users: usize,
    /// Spans per flushed segment.
    pub segment_spans: usize,
}

const DAY_START_NS: i64 = 1_795_910_400_000_000_000; // 2026-11-29T00:00Z
const DAY_NS: i64 = 86_400_000_000_000;

fn tenant() -> TenantId {
    TenantId::new("bench").unwrap_or_else(|_| unreachable!("valid tenant id"))
}

fn trace(shape: &Shape, rng: &mut StdRng, t: u64, traces: u64) -> Vec<SpanRecord> {
    let start = DAY_START_NS + (t as i64).saturating_mul(DAY_NS / traces.max(1) as i64);
    let user = rng.random_range(0..shape.users.max(1));
    let mut out = Vec::with_capacity(shape.spans_per_trace);
    let mut id = [0u8; 16];
    id[..8].copy_from_slice(&(t + 1).to_be_bytes());
    id[15] = 1;
    for i in 0..shape.spans_per_trace {
        let offset = i as i64 * 1_000_000;
        let mut s = SpanRecord::new(
            TraceId(id),
            SpanId(((t << 8) | i as u64 | 1 << 63).to_be_bytes()),
            format!("service-{}", rng.random_range(0..shape.services.max(1))),
            format!("operation-{}", rng.random_range(0..shape.names.max(1))),
            UnixNanos(start + offset),
            UnixNanos(start + offset + rng.random_range(100_000..50_000_000)),
        );
        s.parent_span_id = (i > 0).then(|| SpanId(((t << 8) | 1 << 63).to_be_bytes()));
        s.attributes = vec![
            ("user.id".into(), AttrValue::Str(format!("user-{user:06}"))),
            (
                "http.status_code".into(),
                AttrValue::Int([200, 200, 200, 404, 500][rng.random_range(0..5)]),
            ),
        ];
        if rng.random_range(0..5) == 0 {
            s.gen_ai.operation_name = Some("chat".into());
            s.gen_ai.request_model = Some(format!(
                "model-{}",
                rng.random_range(0..shape.models.max(1))
            ));
            s.gen_ai.input_tokens = Some(rng.random_range(10..4_000));
            s.gen_ai.output_tokens = Some(rng.random_range(10..1_000));
        }
        out.push(s);
    }
    out
}

/// Bytes of the files named `name` under `dir`, recursively.
fn bytes_named(dir: &Path, name: &str) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut n = 0;
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            n += bytes_named(&p, name);
        } else if p.file_name().is_some_and(|f| f == name) {
            n += e.metadata().map_or(0, |m| m.len());
        }
    }
    n
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
    let mut rng = StdRng::seed_from_u64(7);
    let traces = (shape.spans / shape.spans_per_trace.max(1)) as u64;
    let started = Instant::now();
    let (mut batch, mut since_flush, mut stored) = (Vec::new(), 0usize, 0usize);
    for t in 0..traces {
        batch.extend(trace(&shape, &mut rng, t, traces));
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
    let user = format!("user-{:06}", shape.users / 3);
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
        shape.spans_per_trace,
        shape.services,
        shape.names,
        shape.models,
        shape.users,
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
