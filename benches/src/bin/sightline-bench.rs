//! `sightline-bench`: the storage benchmark runner. Each subcommand prints its figures and the
//! command line that reproduces them; `--json` adds a machine-readable line.
//!
//! ```text
//! cargo run -p sightline-bench --release -- ingest --signal samples
//! cargo run -p sightline-bench --release -- ingest --signal spans
//! cargo run -p sightline-bench --release -- bytes --python .venv/bin/python
//! cargo run -p sightline-bench --release -- trace-lookup --spans 10000000
//! cargo run -p sightline-bench --release -- scan
//! cargo run -p sightline-bench --release -- --dir /tmp/qb query --shape wide --python .venv/bin/python
//! cargo run -p sightline-bench --release -- index --users 100000 --names 50
//! ```

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand, ValueEnum};

/// The server's allocator, so that memory figures (peak RSS) are the server's.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;
use sightline_bench::workload::TraceGen;
use sightline_bench::{index_bench, query_bench, workload};
use sightline_storage::{
    FsyncPolicy, MetricBatch, Predicate, ScanRequest, Signal, SpanRecord, Store, StoreConfig,
    TenantId, TimeRange, UnixNanos,
};

#[derive(Parser, Debug)]
#[command(
    name = "sightline-bench",
    about = "Storage benchmarks of Sightline",
    version
)]
struct Cli {
    /// Working directory for data (a temporary directory when omitted).
    #[arg(long, global = true)]
    dir: Option<PathBuf>,
    /// Also print a JSON summary line.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum SignalArg {
    Samples,
    Spans,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Durable append throughput from concurrent writers (fsync on every acknowledgement).
    Ingest {
        /// Which signal to append.
        #[arg(long, value_enum, default_value = "samples")]
        signal: SignalArg,
        /// Concurrent writer threads.
        #[arg(long, default_value_t = 8)]
        writers: usize,
        /// Seconds to run.
        #[arg(long, default_value_t = 10)]
        seconds: u64,
        /// Rows per append (samples: a batch of scrapes; spans: an OTLP export batch).
        #[arg(long)]
        batch: Option<usize>,
    },
    /// Bytes per metric sample on disk next to Parquet (pyarrow defaults) and chDB MergeTree.
    Bytes {
        /// Number of series.
        #[arg(long, default_value_t = 2000)]
        series: usize,
        /// Scrapes per series (10 s apart; 8640 = one day).
        #[arg(long, default_value_t = 8640)]
        points: usize,
        /// Python with pyarrow and chdb (skip the peers when omitted).
        #[arg(long)]
        python: Option<PathBuf>,
    },
    /// Trace-by-id lookup latency over many stored spans.
    TraceLookup {
        /// Spans to store (5 per trace).
        #[arg(long, default_value_t = 10_000_000)]
        spans: usize,
        /// Lookups to time.
        #[arg(long, default_value_t = 1000)]
        lookups: usize,
    },
    /// Full scan of one partition of samples: decoded samples per second.
    Scan {
        /// Number of series.
        #[arg(long, default_value_t = 2000)]
        series: usize,
        /// Scrapes per series.
        #[arg(long, default_value_t = 8640)]
        points: usize,
        /// Repetitions (the median is reported).
        #[arg(long, default_value_t = 7)]
        repeat: usize,
    },
    /// Index and rollup bytes per span of a workload shape, and a user lookup and a count per
    /// service over the day with them.
    Index {
        /// Spans in all.
        #[arg(long, default_value_t = 2_000_000)]
        spans: usize,
        /// Spans per trace.
        #[arg(long, default_value_t = 10)]
        spans_per_trace: usize,
        /// Distinct services.
        #[arg(long, default_value_t = 10)]
        services: usize,
        /// Distinct span names.
        #[arg(long, default_value_t = 50)]
        names: usize,
        /// Distinct models.
        #[arg(long, default_value_t = 6)]
        models: usize,
        /// Distinct users (one per trace).
        #[arg(long, default_value_t = 100_000)]
        users: usize,
        /// Spans per flushed segment.
        #[arg(long, default_value_t = 500_000)]
        segment_spans: usize,
    },
    /// The ten query-benchmark questions, answered by Sightline and (with `--python`) by
    /// DuckDB and chDB over the same rows; prints medians, ratios and whether answers agree.
    Query {
        /// Which spans: `llm` (5 services, 5 names, 5 models, 10,000 users, 5 spans per trace)
        /// or `wide` (10 services, 50 names, 6 models, 100,000 users, 10 spans per trace).
        #[arg(long, value_enum, default_value = "llm")]
        shape: query_bench::Shape,
        /// Spans over one day.
        #[arg(long, default_value_t = 10_000_000)]
        spans: usize,
        /// Log lines over the same day.
        #[arg(long, default_value_t = 1_000_000)]
        logs: usize,
        /// Metric samples (10 s scrapes over the day).
        #[arg(long, default_value_t = 50_000_000)]
        samples: usize,
        /// Timed repetitions of each question (after one warm-up); medians are reported.
        #[arg(long, default_value_t = 5)]
        repeat: usize,
        /// Python with duckdb, chdb and pyarrow (benches/python/requirements.txt); Sightline
        /// alone when omitted.
        #[arg(long)]
        python: Option<PathBuf>,
        /// Only these questions (q1..q10, repeatable); all when omitted.
        #[arg(long = "only", value_name = "Q")]
        only: Vec<String>,
    },
}

fn tenant() -> TenantId {
    TenantId::new("bench").unwrap_or_else(|_| unreachable!("valid tenant id"))
}

const DAY_START_MS: i64 = 1_795_910_400_000; // 2026-11-29T00:00Z

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return f64::NAN;
    }
    v[v.len() / 2]
}

fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return f64::NAN;
    }
    let idx = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[idx.min(v.len() - 1)]
}

fn load_samples(store: &Store, series: usize, points: usize) -> Result<u64, String> {
    let mut generator = workload::series(series, 42);
    let defs: Vec<_> = generator.iter().map(|s| s.def.clone()).collect();
    let chunk_points = 360; // one hour of scrapes per append
    let mut total = 0u64;
    let mut first = true;
    for (i, start) in (0..points).step_by(chunk_points).enumerate() {
        let n = chunk_points.min(points - start);
        let samples = workload::samples(
            &mut generator,
            DAY_START_MS + start as i64 * 10_000,
            n,
            150,
            7 + i as u64,
        );
        total += samples.len() as u64;
        let batch = MetricBatch {
            series: if first { defs.clone() } else { Vec::new() },
            samples,
        };
        first = false;
        store
            .append_metrics(&tenant(), &batch)
            .map_err(|e| e.to_string())?;
    }
    store.flush().map_err(|e| e.to_string())?;
    while store.compact().map_err(|e| e.to_string())? > 0 {}
    Ok(total)
}

/// Appends batches from `pool` round-robin until `stop`, backing off when the store refuses
/// for memory; returns the acknowledgement latencies (ms).
fn writer_loop<T>(
    stop: &AtomicBool,
    rows: &AtomicU64,
    rejected: &AtomicU64,
    pool: &[T],
    mut append: impl FnMut(&T) -> Result<usize, sightline_storage::StorageError>,
) -> Vec<f64> {
    let mut lat = Vec::new();
    let mut i = 0usize;
    while !stop.load(Ordering::Relaxed) {
        let t = Instant::now();
        match append(&pool[i % pool.len()]) {
            Ok(n) => {
                lat.push(t.elapsed().as_secs_f64() * 1e3);
                rows.fetch_add(n as u64, Ordering::Relaxed);
            }
            Err(sightline_storage::StorageError::OverBudget { retry_after, .. }) => {
                rejected.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(retry_after.min(Duration::from_millis(20)));
            }
            Err(e) => panic!("append failed: {e}"),
        }
        i += 1;
    }
    lat
}

fn config(fsync: FsyncPolicy) -> StoreConfig {
    StoreConfig {
        fsync,
        ..StoreConfig::default()
    }
}

fn run_ingest(
    dir: &Path,
    signal: SignalArg,
    writers: usize,
    seconds: u64,
    batch: Option<usize>,
) -> Result<serde_json::Value, String> {
    let store = Arc::new(Store::open(dir, config(FsyncPolicy::Always)).map_err(|e| e.to_string())?);
    let stop = Arc::new(AtomicBool::new(false));
    let rows = Arc::new(AtomicU64::new(0));
    let rejected = Arc::new(AtomicU64::new(0));
    let mut lat_all: Vec<f64> = Vec::new();
    let mut handles = Vec::new();
    // Pre-generate the payloads so the measurement is the store, not the generator.
    for w in 0..writers {
        let store = store.clone();
        let stop = stop.clone();
        let rows = rows.clone();
        let rejected = rejected.clone();
        let handle = match signal {
            SignalArg::Samples => {
                let per = batch.unwrap_or(10_000);
                let mut generator = workload::series(1250, 100 + w as u64);
                // Distinct series per writer: relabel with the writer number.
                for s in generator.iter_mut() {
                    let mut labels = s.def.labels.clone();
                    labels.push(("writer".into(), w.to_string()));
                    s.def = sightline_storage::SeriesDef::new(
                        s.def.metric_name.clone(),
                        s.def.kind,
                        labels,
                    );
                }
                let defs: Vec<_> = generator.iter().map(|s| s.def.clone()).collect();
                let scrapes = per.div_ceil(generator.len());
                let pool: Vec<MetricBatch> = (0..64)
                    .map(|i| MetricBatch {
                        series: defs.clone(),
                        samples: workload::samples(
                            &mut generator,
                            DAY_START_MS + i as i64 * scrapes as i64 * 10_000,
                            scrapes,
                            150,
                            i as u64,
                        ),
                    })
                    .collect();
                std::thread::spawn(move || {
                    writer_loop(&stop, &rows, &rejected, &pool, |b| {
                        store.append_metrics(&tenant(), b).map(|()| b.samples.len())
                    })
                })
            }
            SignalArg::Spans => {
                let per = batch.unwrap_or(512);
                let mut generator = workload::SpanGen::new(1000 + w as u64);
                let pool: Vec<Vec<SpanRecord>> = (0..40)
                    .map(|i| {
                        let mut v = generator.traces(
                            per / 5 + 1,
                            UnixNanos(DAY_START_MS * 1_000_000 + i * 1_000_000_000),
                            1_000_000_000,
                        );
                        v.truncate(per);
                        v
                    })
                    .collect();
                std::thread::spawn(move || {
                    writer_loop(&stop, &rows, &rejected, &pool, |b| {
                        store.append_spans(&tenant(), b).map(|()| b.len())
                    })
                })
            }
        };
        handles.push(handle);
    }
    let start = Instant::now();
    std::thread::sleep(Duration::from_secs(seconds));
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        lat_all.extend(h.join().map_err(|_| "writer panicked".to_string())?);
    }
    let elapsed = start.elapsed().as_secs_f64();
    let stats = store.stats();
    let total = rows.load(Ordering::Relaxed);
    let per_sec = total as f64 / elapsed;
    let p50 = percentile(&mut lat_all, 0.5);
    let p99 = percentile(&mut lat_all, 0.99);
    let fsyncs = stats.wal.fsyncs;
    println!(
        "ingest {signal:?}: {total} rows in {elapsed:.1}s = {per_sec:.0} rows/s from {writers} writers; \
         {} appends, {fsyncs} fsyncs ({:.1} appends/fsync, mean fsync {:.2} ms); ack latency p50 {p50:.2} ms p99 {p99:.2} ms; \
         {} flushes; {} appends refused for memory",
        lat_all.len(),
        lat_all.len() as f64 / fsyncs.max(1) as f64,
        stats.wal.fsync_micros_total as f64 / fsyncs.max(1) as f64 / 1e3,
        stats.flushes,
        rejected.load(Ordering::Relaxed),
    );
    Ok(serde_json::json!({
        "bench": "ingest", "signal": format!("{signal:?}").to_lowercase(), "writers": writers,
        "rows": total, "seconds": elapsed, "rows_per_sec": per_sec, "p50_ms": p50, "p99_ms": p99,
        "fsyncs": fsyncs, "appends": lat_all.len(),
    }))
}

fn run_bytes(
    dir: &Path,
    series: usize,
    points: usize,
    python: Option<&Path>,
) -> Result<serde_json::Value, String> {
    let store = Store::open(dir.join("sightline"), config(FsyncPolicy::Never))
        .map_err(|e| e.to_string())?;
    let t = Instant::now();
    let total = load_samples(&store, series, points)?;
    let load_s = t.elapsed().as_secs_f64();
    let segs: Vec<_> = store
        .segments()
        .into_iter()
        .filter(|s| s.signal == Signal::Samples)
        .collect();
    let all_bytes: u64 = segs.iter().map(|s| s.bytes()).sum();
    let data_bytes: u64 = segs
        .iter()
        .flat_map(|s| s.files.iter())
        .filter(|f| f.name == "data.parquet")
        .map(|f| f.len)
        .sum();
    let ours = all_bytes as f64 / total as f64;
    let ours_data = data_bytes as f64 / total as f64;
    println!(
        "bytes/sample: sightline {ours:.3} (segments incl. series catalog and postings), {ours_data:.3} (data.parquet only); \
         {total} samples of {series} series in {} segments, loaded in {load_s:.1}s",
        segs.len()
    );
    let mut out = serde_json::json!({
        "bench": "bytes_per_sample", "samples": total, "series": series,
        "sightline_bytes_per_sample": ours, "sightline_data_only_bytes_per_sample": ours_data,
    });
    if let Some(py) = python {
        // Hand the very same samples to the peers via one Parquet file of our own segments.
        let files = store.parquet_files(&tenant(), Signal::Samples);
        let list = dir.join("segments.txt");
        std::fs::write(
            &list,
            files
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join("\n"),
        )
        .map_err(|e| e.to_string())?;
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("python/bytes_per_sample.py");
        let o = Command::new(py)
            .arg(&script)
            .arg(&list)
            .arg(dir.join("peers"))
            .output()
            .map_err(|e| format!("running {}: {e}", py.display()))?;
        if !o.status.success() {
            return Err(format!(
                "peer script failed: {}",
                String::from_utf8_lossy(&o.stderr)
            ));
        }
        let peers: serde_json::Value =
            serde_json::from_slice(&o.stdout).map_err(|e| e.to_string())?;
        let rows = peers["rows"].as_u64().unwrap_or(0);
        if rows != total {
            return Err(format!(
                "peers saw {rows} samples, sightline stored {total}"
            ));
        }
        for (name, key) in [
            ("pyarrow parquet (defaults)", "pyarrow_default"),
            ("pyarrow parquet (zstd)", "pyarrow_zstd"),
            ("chDB MergeTree DoubleDelta/Gorilla+ZSTD", "chdb"),
        ] {
            let b = peers[key]["bytes"].as_f64().unwrap_or(f64::NAN);
            println!(
                "bytes/sample: {name} {:.3} (ratio sightline/peer {:.2})",
                b / total as f64,
                all_bytes as f64 / b
            );
            out[key] = serde_json::json!(b / total as f64);
        }
    }
    Ok(out)
}

fn run_trace_lookup(dir: &Path, spans: usize, lookups: usize) -> Result<serde_json::Value, String> {
    let cfg = StoreConfig {
        fsync: FsyncPolicy::Never,
        flush_threshold_bytes: 256 << 20,
        ..StoreConfig::default()
    };
    let store = Store::open(dir, cfg).map_err(|e| e.to_string())?;
    let mut generator = workload::SpanGen::new(9);
    let first_seq = generator.next_sequence();
    let traces = spans / 5;
    let day_ns = 86_400_000_000_000i64;
    let per_batch = 1000; // traces per append
    let t = Instant::now();
    let mut done = 0usize;
    if store.stats().segment_rows >= spans as u64 {
        eprintln!(
            "  reusing the {} spans already in {}",
            store.stats().segment_rows,
            dir.display()
        );
        done = traces;
    }
    while done < traces {
        let n = per_batch.min(traces - done);
        // i128: done * day_ns overflows i64 past ~100k traces.
        let offset = (done as i128 * day_ns as i128 / traces as i128) as i64;
        let start = UnixNanos(DAY_START_MS * 1_000_000 + offset);
        let batch = generator.traces(
            n,
            start,
            (n as i128 * day_ns as i128 / traces as i128) as i64,
        );
        loop {
            match store.append_spans(&tenant(), &batch) {
                Ok(()) => break,
                Err(sightline_storage::StorageError::OverBudget { .. }) => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                Err(e) => return Err(e.to_string()),
            }
        }
        done += n;
        if done.is_multiple_of(200_000) {
            eprintln!(
                "  loaded {} spans ({:.0}s)",
                done * 5,
                t.elapsed().as_secs_f64()
            );
        }
    }
    store.flush().map_err(|e| e.to_string())?;
    while store.compact().map_err(|e| e.to_string())? > 0 {}
    let load_s = t.elapsed().as_secs_f64();
    let stats = store.stats();
    println!(
        "trace-lookup: stored {} spans in {} segments ({:.1} MB) in {load_s:.0}s",
        stats.segment_rows,
        stats.segments,
        stats.segment_bytes as f64 / 1e6
    );
    let mut lat = Vec::with_capacity(lookups);
    let mut rng_state = 0x1234_5678u64;
    for _ in 0..lookups {
        rng_state = rng_state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        let k = (rng_state >> 33) as usize % traces;
        let id = workload::trace_id(first_seq + k as u64);
        let t = Instant::now();
        let found = store.trace(&tenant(), id).map_err(|e| e.to_string())?;
        lat.push(t.elapsed().as_secs_f64() * 1e3);
        if found.len() != 5 {
            return Err(format!(
                "trace {id} returned {} spans, expected 5",
                found.len()
            ));
        }
    }
    let p50 = percentile(&mut lat, 0.5);
    let p99 = percentile(&mut lat, 0.99);
    println!(
        "trace-lookup: {lookups} lookups over {} spans: median {p50:.2} ms, p99 {p99:.2} ms",
        stats.segment_rows
    );
    // The same lookups returning only ids and timing (what a trace list needs).
    let mut lat_ids = Vec::with_capacity(lookups);
    for k in 0..lookups {
        let id = workload::trace_id(first_seq + (k * 7919 % traces) as u64);
        let req = ScanRequest::new(tenant(), Signal::Spans, TimeRange::ALL)
            .with(Predicate::TraceId(id))
            .project(&[
                "span_id",
                "parent_span_id",
                "start_time_unix_nano",
                "duration_nano",
            ]);
        let t = Instant::now();
        let res = store.scan(&req).map_err(|e| e.to_string())?;
        lat_ids.push(t.elapsed().as_secs_f64() * 1e3);
        if res.num_rows() != 5 {
            return Err(format!("trace {id} returned {} rows", res.num_rows()));
        }
    }
    let q50 = percentile(&mut lat_ids, 0.5);
    let q99 = percentile(&mut lat_ids, 0.99);
    println!("trace-lookup (ids and timing only): median {q50:.2} ms, p99 {q99:.2} ms");
    Ok(
        serde_json::json!({"bench": "trace_lookup", "spans": stats.segment_rows,
        "median_ms": p50, "p99_ms": p99, "ids_only_median_ms": q50, "ids_only_p99_ms": q99}),
    )
}

fn run_scan(
    dir: &Path,
    series: usize,
    points: usize,
    repeat: usize,
) -> Result<serde_json::Value, String> {
    let store = Store::open(dir, config(FsyncPolicy::Never)).map_err(|e| e.to_string())?;
    load_samples(&store, series, points)?;
    // One partition: samples are partitioned by day.
    let start = UnixNanos(DAY_START_MS * 1_000_000);
    let range = TimeRange::new(start, UnixNanos(start.0 + 86_400_000_000_000))
        .map_err(|e| e.to_string())?;
    let mut rates = Vec::new();
    let mut rows = 0;
    for _ in 0..repeat {
        let t = Instant::now();
        let res = store
            .scan(&ScanRequest::new(tenant(), Signal::Samples, range))
            .map_err(|e| e.to_string())?;
        let s = t.elapsed().as_secs_f64();
        rows = res.stats.rows_decoded;
        rates.push(rows as f64 / s);
    }
    let m = median(&mut rates);
    println!(
        "scan: one partition, {rows} samples decoded per scan, median {m:.0} samples/s over {repeat} runs"
    );
    // And with a label matcher, to show pruning.
    let req = ScanRequest::new(tenant(), Signal::Samples, range).with(Predicate::Attr(
        sightline_storage::Matcher::eq("model", "gpt-4o"),
    ));
    let t = Instant::now();
    let res = store.scan(&req).map_err(|e| e.to_string())?;
    println!(
        "scan: same partition with model=\"gpt-4o\": {} samples in {:.2} ms ({} decoded)",
        res.num_rows(),
        t.elapsed().as_secs_f64() * 1e3,
        res.stats.rows_decoded
    );
    Ok(serde_json::json!({"bench": "scan_partition", "samples": rows, "samples_per_sec": m}))
}

fn run_query(
    dir: &Path,
    sizes: query_bench::Sizes,
    repeat: usize,
    python: Option<&Path>,
    only: &[String],
) -> Result<serde_json::Value, String> {
    let t = Instant::now();
    // Each shape has its own data and peer databases (reused by the next run of that shape).
    let dir = &dir.join(sizes.shape.name());
    let (store, params) = query_bench::load(&dir.join("sightline"), sizes)?;
    let stats = store.stats();
    println!(
        "query: {} rows in {} segments ({:.1} MB) ready in {:.0}s",
        stats.segment_rows,
        stats.segments,
        stats.segment_bytes as f64 / 1e6,
        t.elapsed().as_secs_f64()
    );
    // Peak RSS while loading (this process: generator, store, flush and compaction) and, from
    // a fresh peak, while answering.
    let load_rss = sightline_bench::rss::peak_bytes();
    // jemalloc hands freed pages back within seconds of the load.
    std::thread::sleep(Duration::from_secs(12));
    let reset = sightline_bench::rss::reset_peak();
    let idle_rss = sightline_bench::rss::peak_bytes().filter(|_| reset);
    let ours = query_bench::answer_all(&store, &params, repeat, only)?;
    let query_rss = sightline_bench::rss::peak_bytes().filter(|_| reset);
    let gib = |b: Option<u64>| {
        b.map_or("-".to_owned(), |b| {
            format!("{:.2} GiB", b as f64 / f64::from(1u32 << 30))
        })
    };
    println!(
        "query: peak RSS {} while loading, {} before answering, {} while answering (memory budget {:.2} GiB)",
        gib(load_rss),
        gib(idle_rss),
        gib(query_rss),
        sightline_storage::StoreConfig::default().memory_budget_bytes as f64
            / f64::from(1u32 << 30)
    );
    println!(
        "query: {:.1} MB of span rollups kept in memory",
        sightline_storage::rollup::cached_bytes() as f64 / 1e6
    );
    let peers: serde_json::Value = match python {
        None => serde_json::Value::Null,
        Some(py) => {
            let params_path = dir.join("params.json");
            let out_path = dir.join("peers.json");
            std::fs::write(
                &params_path,
                serde_json::to_vec(&params).map_err(|e| e.to_string())?,
            )
            .map_err(|e| e.to_string())?;
            let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("python/query_peers.py");
            let status = Command::new(py)
                .arg(&script)
                .arg(&params_path)
                .arg(dir.join("peers"))
                .arg(&out_path)
                .arg(repeat.to_string())
                .status()
                .map_err(|e| format!("cannot run {}: {e}", py.display()))?;
            if !status.success() {
                return Err(format!("{} failed: {status}", script.display()));
            }
            let text = std::fs::read(&out_path).map_err(|e| e.to_string())?;
            serde_json::from_slice(&text).map_err(|e| e.to_string())?
        }
    };
    // Bytes per span and per log line, Sightline's by role, next to chDB's tables.
    let root = dir
        .join("sightline/data")
        .join(query_bench::tenant().as_str());
    let ours_bytes = [("spans", sizes.spans), ("logs", sizes.logs)].map(|(signal, n)| {
        let b = sightline_bench::disk::SignalBytes::of(&root.join(signal));
        // chDB's narrow table (the queried columns) and the one with every field.
        let full_table = if signal == "spans" {
            "otel_traces"
        } else {
            "otel_logs"
        };
        let ch_bytes = |table: &str| {
            peers
                .get("chdb")
                .and_then(|c| c.get("bytes"))
                .and_then(|b| b.get(table))
                .and_then(serde_json::Value::as_u64)
        };
        let (ch, ch_full) = (ch_bytes(signal), ch_bytes(full_table));
        let per = |x: u64| x as f64 / n.max(1) as f64;
        let show = |c: Option<u64>| c.map_or("-".to_owned(), |c| format!("{:.1}", per(c)));
        println!(
            "bytes per {}: sightline {:.1} (data {:.1}, indexes {:.1}, rollups {:.1}); chDB {} \
             (queried columns), {} (every field)",
            if signal == "spans" {
                "span"
            } else {
                "log line"
            },
            per(b.total()),
            per(b.data),
            per(b.index),
            per(b.rollups),
            show(ch),
            show(ch_full),
        );
        serde_json::json!({"signal": signal, "sightline": b, "chdb": ch, "chdb_every_field": ch_full, "items": n})
    });
    println!(
        "{:<4} {:<58} {:>10} {:>10} {:>10} {:>7}  agree",
        "q", "question", "sightline", "duckdb", "chdb", "ratio"
    );
    let mut table = Vec::new();
    for (q, ans) in &ours {
        let desc = query_bench::QUESTIONS
            .iter()
            .find(|(id, _)| id == q)
            .map_or("", |(_, d)| *d);
        let peer = |name: &str| -> Option<query_bench::Answer> {
            serde_json::from_value(peers.get(name)?.get("answers")?.get(q)?.clone()).ok()
        };
        let (duck, ch) = (peer("duckdb"), peer("chdb"));
        let fastest = [&duck, &ch]
            .iter()
            .filter_map(|a| a.as_ref().map(|a| a.median_ms))
            .fold(f64::INFINITY, f64::min);
        let ratio = ans.median_ms / fastest;
        // q7's peers compute a plain (last - first) / 5m, not Prometheus' extrapolated rate:
        // there only the number of points must agree.
        let tol = if q == "q7" { f64::INFINITY } else { 1e-6 };
        let agree = [&duck, &ch].iter().all(|a| {
            a.as_ref().is_none_or(|a| {
                a.rows == ans.rows
                    && (a.digest - ans.digest).abs() <= tol * ans.digest.abs().max(1.0)
            })
        });
        let ms = |a: &Option<query_bench::Answer>| {
            a.as_ref()
                .map_or("-".to_owned(), |a| format!("{:.2}", a.median_ms))
        };
        println!(
            "{q:<4} {desc:<58} {:>10.2} {:>10} {:>10} {:>7.2}  {}",
            ans.median_ms,
            ms(&duck),
            ms(&ch),
            ratio,
            if agree { "yes" } else { "NO" }
        );
        if !agree {
            eprintln!(
                "  {q}: sightline rows {} digest {}; duckdb {:?}; chdb {:?}",
                ans.rows, ans.digest, duck, ch
            );
        }
        table.push(
            serde_json::json!({"q": q, "sightline": ans, "duckdb": duck, "chdb": ch,
            "ratio_vs_fastest_peer": ratio, "answers_agree": agree}),
        );
    }
    Ok(
        serde_json::json!({"bench": "query", "sizes": sizes, "questions": table, "bytes": ours_bytes,
        "peak_rss_bytes": {"load": load_rss, "before_queries": idle_rss, "queries": query_rss},
        "peers_load": peers.as_object().map(|o| o.iter().map(|(k, v)| (k.clone(), v.get("load_s").cloned().unwrap_or_default())).collect::<serde_json::Map<_, _>>())}),
    )
}

fn main() {
    let cli = Cli::parse();
    let tmp;
    let dir = match &cli.dir {
        Some(d) => d.clone(),
        None => {
            tmp = tempfile::tempdir().unwrap_or_else(|e| {
                eprintln!("cannot create a temporary directory: {e}");
                std::process::exit(2)
            });
            tmp.path().to_owned()
        }
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    println!(
        "# reproduce: cargo run -p sightline-bench --release -- {}",
        args.join(" ")
    );
    let result = match cli.cmd {
        Cmd::Ingest {
            signal,
            writers,
            seconds,
            batch,
        } => run_ingest(&dir, signal, writers, seconds, batch),
        Cmd::Bytes {
            series,
            points,
            python,
        } => run_bytes(&dir, series, points, python.as_deref()),
        Cmd::TraceLookup { spans, lookups } => run_trace_lookup(&dir, spans, lookups),
        Cmd::Index {
            spans,
            spans_per_trace,
            services,
            names,
            models,
            users,
            segment_spans,
        } => index_bench::run(
            &dir,
            index_bench::Shape {
                spans,
                span: workload::SpanShape {
                    spans_per_trace,
                    services,
                    names,
                    models,
                    users,
                },
                segment_spans,
            },
        ),
        Cmd::Scan {
            series,
            points,
            repeat,
        } => run_scan(&dir, series, points, repeat),
        Cmd::Query {
            shape,
            spans,
            logs,
            samples,
            repeat,
            python,
            only,
        } => run_query(
            &dir,
            query_bench::Sizes {
                shape,
                spans,
                logs,
                samples,
            },
            repeat,
            python.as_deref(),
            &only,
        ),
    };
    match result {
        Ok(v) => {
            if cli.json {
                println!("{v}");
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
