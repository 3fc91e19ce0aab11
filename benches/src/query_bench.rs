//! The query benchmark: a generated workload of one of two [`Shape`]s (spans, correlated logs,
//! metric samples) loaded into Sightline, and the ten questions of the benchmark answered by
//! Sightline's query layer (three of them over a time range that starts and ends mid-minute). `benches/python/query_peers.py` loads the same rows (read from Sightline's own Parquet
//! segments) into DuckDB and chDB and answers the same questions in SQL; the runner
//! (`sightline-bench query`) compares medians and checks that every engine gave the same answer
//! (row counts and a digest of the values).

use std::path::Path;
use std::time::{Duration, Instant};

use serde::Serialize;
use sightline_query::logs::search::{Direction, LogFilter, SearchRequest, search};
use sightline_query::plan::{
    AggFunc, Aggregate, Cell, GroupBy, OrderBy, OrderKey, Plan, Table, execute,
};
use sightline_query::promql::{Budget, QueryResult, StoreSource, range_query};
use sightline_storage::{
    FsyncPolicy, MatchOp, Matcher, MetricBatch, Predicate, Signal, Store, StoreConfig, TenantId,
    TimeRange, TraceId, UnixNanos,
};

use crate::workload::{self, TraceGen};

/// 2026-06-01T00:00:00Z in nanoseconds: the start of the generated day.
pub const T0_NS: i64 = 1_780_272_000_000_000_000;
const HOUR: i64 = 3_600_000_000_000;
const DAY: i64 = 24 * HOUR;

/// Which spans to generate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Shape {
    /// The LLM application of [`workload::SpanGen`]: 5 spans per trace (gateway, retrieval,
    /// rerank, guardrail, model call), 5 services, 5 span names, 5 models, 10,000 users.
    Llm,
    /// [`workload::SpanShape::WIDE`]: 10 spans per trace of 10 services and 50 span names
    /// picked at random, 6 models, 100,000 users.
    Wide,
}

impl Shape {
    /// Its name on the command line and in directory names.
    pub fn name(self) -> &'static str {
        match self {
            Shape::Llm => "llm",
            Shape::Wide => "wide",
        }
    }

    fn generator(self, seed: u64) -> Box<dyn TraceGen> {
        match self {
            Shape::Llm => Box::new(workload::SpanGen::new(seed)),
            Shape::Wide => Box::new(workload::ShapedSpanGen::new(
                workload::SpanShape::WIDE,
                seed,
            )),
        }
    }

    /// Question 4's model and user.
    fn model_and_user(self) -> [String; 2] {
        match self {
            Shape::Llm => ["gpt-4o".into(), "user-42".into()],
            Shape::Wide => ["model-0".into(), "user-000042".into()],
        }
    }
}

/// How much to generate.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Sizes {
    /// Which spans.
    pub shape: Shape,
    /// Spans over one day.
    pub spans: usize,
    /// Log lines over the same day.
    pub logs: usize,
    /// Metric samples (series x scrapes every 10 s over the day).
    pub samples: usize,
}

/// The loaded dataset and the parameters of the questions.
#[derive(Debug, Serialize)]
pub struct Params {
    /// Start of the day (ns).
    pub t0_ns: i64,
    /// Trace ids looked up by question 1 (hex).
    pub trace_ids: Vec<String>,
    /// Question 2's hour.
    pub q2: [i64; 2],
    /// Question 4's model and user.
    pub q4: [String; 2],
    /// The unaligned range of questions 8 to 10: from 3:17:23.456 to 21:42:36.544 of the day.
    pub unaligned: [i64; 2],
    /// Question 6's hour and word.
    pub q6: (i64, i64, String),
    /// Question 7's range (ms) and step (s), and the metric.
    pub q7: (i64, i64, i64, String),
    /// Sightline's Parquet files per signal (spans, logs, samples).
    pub files: [Vec<String>; 3],
}

/// The benchmark's tenant.
pub fn tenant() -> TenantId {
    TenantId::new("bench").unwrap_or_else(|_| unreachable!("valid tenant name"))
}

fn retry<F: FnMut() -> sightline_storage::Result<()>>(mut f: F) -> Result<(), String> {
    loop {
        match f() {
            Ok(()) => return Ok(()),
            Err(sightline_storage::StorageError::OverBudget { .. }) => {
                std::thread::sleep(Duration::from_millis(20))
            }
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// Opens (or loads) the dataset in `dir`; a directory that already holds it is reused.
pub fn load(dir: &Path, sizes: Sizes) -> Result<(Store, Params), String> {
    let cfg = StoreConfig {
        fsync: FsyncPolicy::Never,
        flush_threshold_bytes: 256 << 20,
        ..StoreConfig::default()
    };
    let store = Store::open(dir, cfg).map_err(|e| e.to_string())?;
    let tenant = tenant();
    let mut spans = sizes.shape.generator(11);
    let per_trace = spans.spans_per_trace();
    let traces = sizes.spans / per_trace;
    let first_seq = spans.next_sequence();
    let loaded = store.stats().segment_rows > 0;
    let t = Instant::now();
    if loaded {
        eprintln!("  reusing the data already in {}", dir.display());
    } else {
        let mut logs = workload::LogGen::new(12);
        let per_batch = 1000usize;
        let mut done = 0usize;
        let mut logs_done = 0usize;
        while done < traces {
            let n = per_batch.min(traces - done);
            let offset = (done as i128 * DAY as i128 / traces as i128) as i64;
            let width = (n as i128 * DAY as i128 / traces as i128) as i64;
            let batch = spans.traces(n, UnixNanos(T0_NS + offset), width);
            // Spread the log lines evenly over the traces.
            let logs_target = (sizes.logs as u128 * (done + n) as u128 / traces as u128) as usize;
            let need = logs_target - logs_done;
            let mut lines = Vec::with_capacity(need);
            for (i, trace) in batch.chunks(per_trace).enumerate() {
                let k = need * (i + 1) / n - need * i / n;
                lines.extend(logs.lines(trace, k));
            }
            logs_done += lines.len();
            retry(|| store.append_spans(&tenant, &batch))?;
            retry(|| store.append_logs(&tenant, &lines))?;
            done += n;
            if done.is_multiple_of(100_000) {
                eprintln!(
                    "  loaded {} spans, {logs_done} log lines ({:.0}s)",
                    done * per_trace,
                    t.elapsed().as_secs_f64()
                );
            }
        }
        let points = 8640usize;
        let n_series = (sizes.samples / points).max(1);
        let mut series = workload::series(n_series, 13);
        let defs: Vec<_> = series.iter().map(|s| s.def.clone()).collect();
        let chunk = (2_000_000 / n_series).max(1);
        for start in (0..points).step_by(chunk) {
            let k = chunk.min(points - start);
            let samples = workload::samples(
                &mut series,
                T0_NS / 1_000_000 + start as i64 * 10_000,
                k,
                500,
                14 + start as u64,
            );
            let batch = MetricBatch {
                series: if start == 0 { defs.clone() } else { Vec::new() },
                samples,
            };
            retry(|| store.append_metrics(&tenant, &batch))?;
        }
        eprintln!(
            "  loaded {} samples of {n_series} series ({:.0}s)",
            n_series * points,
            t.elapsed().as_secs_f64()
        );
        store.flush().map_err(|e| e.to_string())?;
        while store.compact().map_err(|e| e.to_string())? > 0 {}
        eprintln!(
            "  flushed and compacted ({:.0}s)",
            t.elapsed().as_secs_f64()
        );
    }
    let mut state = 0x9e37_79b9u64;
    let trace_ids = (0..50)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            workload::trace_id(first_seq + (state >> 33) % traces.max(1) as u64).to_string()
        })
        .collect();
    let files = Signal::ALL.map(|s| {
        store
            .parquet_files(&tenant, s)
            .iter()
            .map(|p| p.display().to_string())
            .collect()
    });
    let params = Params {
        t0_ns: T0_NS,
        trace_ids,
        q2: [T0_NS + 10 * HOUR, T0_NS + 11 * HOUR],
        q4: sizes.shape.model_and_user(),
        unaligned: [
            T0_NS + 3 * HOUR + 1_043_456_000_000,
            T0_NS + 21 * HOUR + 2_556_544_000_000,
        ],
        q6: (T0_NS + 12 * HOUR, T0_NS + 13 * HOUR, "timeout".into()),
        q7: (
            (T0_NS + 6 * HOUR) / 1_000_000,
            (T0_NS + 12 * HOUR) / 1_000_000,
            60,
            "gen_ai_client_token_usage_total".into(),
        ),
        files,
    };
    Ok((store, params))
}

/// One engine's answer to one question: how long it took and what it said.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct Answer {
    /// Median wall time (ms).
    pub median_ms: f64,
    /// Rows in the answer.
    pub rows: u64,
    /// A digest of the answer's values (see the question).
    pub digest: f64,
}

/// The seven questions: id and description.
pub const QUESTIONS: &[(&str, &str)] = &[
    ("q1", "trace by id (all spans of one trace)"),
    ("q2", "p50/p99 duration by model per minute over one hour"),
    ("q3", "error ratio by service over the whole range"),
    ("q4", "10 slowest spans of one model for one user id"),
    ("q5", "token sums by model per hour"),
    ("q6", "full-text log search over one hour (newest 100)"),
    (
        "q7",
        "sum by (model) (rate(counter[5m])) over 6 h at 60 s step",
    ),
    (
        "q8",
        "error ratio by service over an unaligned 18.4 h range",
    ),
    (
        "q9",
        "token sums by model per hour over the unaligned range",
    ),
    ("q10", "span count by name over the unaligned range"),
];

fn num_sum(t: &Table, col: usize) -> f64 {
    t.rows
        .iter()
        .filter_map(|r| r.get(col).and_then(Cell::as_f64))
        .sum()
}

fn agg(func: AggFunc, field: Option<&str>) -> Aggregate {
    Aggregate {
        func,
        field: field.map(str::to_owned),
    }
}

/// Error ratio by service over `time`: (rows, sum of the ratios).
fn error_ratio_by_service(store: &Store, time: TimeRange) -> Result<(u64, f64), String> {
    let mut plan = Plan::new(tenant(), Signal::Spans, time);
    plan.group_by = vec![GroupBy::Key("service.name".into())];
    plan.aggregates = vec![agg(AggFunc::ErrorRatio, None)];
    let r = execute(store, &plan).map_err(|e| e.to_string())?;
    Ok((r.rows.len() as u64, num_sum(&r, 1)))
}

/// Input and output token sums of LLM spans by model per hour over `time`: (rows, the sums'
/// sum).
fn tokens_by_model_per_hour(store: &Store, time: TimeRange) -> Result<(u64, f64), String> {
    let mut plan = Plan::new(tenant(), Signal::Spans, time);
    plan.predicates.push(Predicate::Attr(
        Matcher::new("gen_ai.request.model", MatchOp::NotEq, "").map_err(|e| e.to_string())?,
    ));
    plan.group_by = vec![
        GroupBy::Key("gen_ai.request.model".into()),
        GroupBy::Time(HOUR),
    ];
    plan.aggregates = vec![
        agg(AggFunc::Sum, Some("gen_ai.usage.input_tokens")),
        agg(AggFunc::Sum, Some("gen_ai.usage.output_tokens")),
    ];
    let r = execute(store, &plan).map_err(|e| e.to_string())?;
    Ok((r.rows.len() as u64, num_sum(&r, 2) + num_sum(&r, 3)))
}

/// Answers question `q` once with Sightline: (rows, digest).
pub fn ask(store: &Store, p: &Params, q: &str, iteration: usize) -> Result<(u64, f64), String> {
    let e = |e: sightline_query::QueryError| e.to_string();
    let t = tenant();
    let range =
        |a: i64, b: i64| TimeRange::new(UnixNanos(a), UnixNanos(b)).map_err(|e| e.to_string());
    let model_re =
        || Matcher::new("gen_ai.request.model", MatchOp::NotEq, "").map_err(|e| e.to_string());
    match q {
        "q1" => {
            let id = TraceId::from_hex(&p.trace_ids[iteration % p.trace_ids.len()])
                .map_err(|e| e.to_string())?;
            let spans = store.trace(&t, id).map_err(|e| e.to_string())?;
            let d: i64 = spans.iter().map(|s| s.end.0 - s.start.0).sum();
            Ok((spans.len() as u64, d as f64))
        }
        "q2" => {
            let mut plan = Plan::new(t, Signal::Spans, range(p.q2[0], p.q2[1])?);
            plan.predicates.push(Predicate::Attr(model_re()?));
            plan.group_by = vec![
                GroupBy::Key("gen_ai.request.model".into()),
                GroupBy::Time(60_000_000_000),
            ];
            plan.aggregates = vec![
                agg(AggFunc::Quantile(0.5), Some("duration")),
                agg(AggFunc::Quantile(0.99), Some("duration")),
            ];
            let r = execute(store, &plan).map_err(e)?;
            Ok((r.rows.len() as u64, num_sum(&r, 3) / 1e6))
        }
        "q3" => error_ratio_by_service(store, TimeRange::ALL),
        "q8" => error_ratio_by_service(store, range(p.unaligned[0], p.unaligned[1])?),
        "q4" => {
            let mut plan = Plan::new(t, Signal::Spans, TimeRange::ALL);
            plan.predicates.push(Predicate::Attr(Matcher::eq(
                "gen_ai.request.model",
                &p.q4[0],
            )));
            plan.predicates
                .push(Predicate::Attr(Matcher::eq("user.id", &p.q4[1])));
            plan.columns = vec!["duration".into(), "service.name".into(), "name".into()];
            plan.order_by = Some(OrderBy {
                by: OrderKey::Field("duration".into()),
                descending: true,
            });
            plan.limit = Some(10);
            let r = execute(store, &plan).map_err(e)?;
            Ok((r.rows.len() as u64, num_sum(&r, 1)))
        }
        "q5" => tokens_by_model_per_hour(store, TimeRange::ALL),
        "q9" => tokens_by_model_per_hour(store, range(p.unaligned[0], p.unaligned[1])?),
        "q10" => {
            let mut plan = Plan::new(t, Signal::Spans, range(p.unaligned[0], p.unaligned[1])?);
            plan.group_by = vec![GroupBy::Key("name".into())];
            plan.aggregates = vec![agg(AggFunc::Count, None)];
            let r = execute(store, &plan).map_err(e)?;
            Ok((r.rows.len() as u64, num_sum(&r, 1)))
        }
        "q6" => {
            // What `GET /api/v1/logs/search?query=timeout&start=..&end=..&limit=100` runs.
            let mut filter = LogFilter::new(range(p.q6.0, p.q6.1)?);
            filter.full_text = Some(p.q6.2.clone());
            let req = SearchRequest {
                filter,
                limit: 100,
                direction: Direction::Backward,
            };
            let res = search(store, &t, &req).map_err(e)?;
            Ok((
                res.lines.len() as u64,
                res.lines
                    .iter()
                    .map(|l| (l.time.0 - T0_NS) as f64 / 1e9)
                    .sum(),
            ))
        }
        "q7" => {
            let src = StoreSource::new(store, t);
            let q = format!("sum by (model) (rate({}[5m]))", p.q7.3);
            let r = range_query(&src, &q, p.q7.0, p.q7.1, p.q7.2 * 1000, &Budget::default())
                .map_err(e)?;
            let QueryResult::Matrix(m) = r else {
                return Err("q7 did not return a matrix".into());
            };
            let rows: usize = m.iter().map(|s| s.points.len()).sum();
            let sum: f64 = m.iter().flat_map(|s| s.points.iter().map(|p| p.1)).sum();
            Ok((rows as u64, sum))
        }
        other => Err(format!("unknown question {other}")),
    }
}

/// Runs every question (or those in `only`) `repeats` times after one warm-up and returns the
/// medians.
pub fn answer_all(
    store: &Store,
    p: &Params,
    repeats: usize,
    only: &[String],
) -> Result<Vec<(String, Answer)>, String> {
    let mut out = Vec::new();
    for (q, _) in QUESTIONS {
        if !only.is_empty() && !only.iter().any(|o| o == q) {
            continue;
        }
        let (rows, digest) = ask(store, p, q, 0)?;
        let mut ms = Vec::with_capacity(repeats);
        for i in 0..repeats {
            let t = Instant::now();
            ask(store, p, q, i)?;
            ms.push(t.elapsed().as_secs_f64() * 1e3);
        }
        ms.sort_by(f64::total_cmp);
        out.push((
            (*q).to_owned(),
            Answer {
                median_ms: ms[ms.len() / 2],
                rows,
                digest,
            },
        ));
    }
    Ok(out)
}
