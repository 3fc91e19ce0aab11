//! The server's own telemetry: structured logs via `tracing`, and counters rendered in the
//! Prometheus text format at `/metrics` (ingest by signal and transport, rejections by
//! reason, acknowledgement latency, and the store's WAL, memtable, flush and compaction stats).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use sightline_storage::StoreStats;

use crate::config::LogConfig;
use crate::error::ConfigError;
use crate::otlp::SignalKind;

/// The transport a request came in on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Transport {
    /// OTLP/HTTP.
    Http,
    /// OTLP/gRPC.
    Grpc,
    /// Prometheus remote write 1.0.
    RemoteWrite,
}

impl Transport {
    /// Lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Http => "http",
            Self::Grpc => "grpc",
            Self::RemoteWrite => "prometheus_remote_write",
        }
    }
}

/// Installs the global `tracing` subscriber (stderr, text or JSON).
pub fn init_logging(cfg: &LogConfig) -> Result<(), ConfigError> {
    let filter = tracing_subscriber::EnvFilter::try_new(&cfg.level)
        .map_err(|e| ConfigError::Invalid(format!("log level {:?}: {e}", cfg.level)))?;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let result = match cfg.format {
        crate::config::LogFormat::Json => builder.json().try_init(),
        crate::config::LogFormat::Text => builder.try_init(),
    };
    result.map_err(|e| ConfigError::Invalid(format!("logging already initialised: {e}")))
}

/// Upper bounds (seconds) of the acknowledgement latency histogram.
const LATENCY_BOUNDS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
];

#[derive(Default)]
struct Latency {
    buckets: [u64; LATENCY_BOUNDS.len()],
    count: u64,
    sum_secs: f64,
}

type Key = (&'static str, &'static str, &'static str);

/// Counters of the server itself.
pub struct Telemetry {
    started: Instant,
    /// (signal, transport, outcome) -> requests.
    requests: Mutex<BTreeMap<Key, u64>>,
    /// (signal, transport, "") -> accepted items.
    items: Mutex<BTreeMap<Key, u64>>,
    /// (signal, reason, "") -> rejected items.
    rejected: Mutex<BTreeMap<Key, u64>>,
    /// (signal, transport) -> bytes received (before decompression).
    bytes: Mutex<BTreeMap<Key, u64>>,
    latency: Mutex<BTreeMap<Key, Latency>>,
    logprobs_spans: AtomicU64,
    logprobs_errors: AtomicU64,
    hallucination_scored: AtomicU64,
    /// (signal, "", "") -> items whose LLM content was truncated.
    truncated: Mutex<BTreeMap<Key, u64>>,
}

impl Default for Telemetry {
    fn default() -> Self {
        Self::new()
    }
}

fn bump(map: &Mutex<BTreeMap<Key, u64>>, key: Key, n: u64) {
    if n > 0 {
        *map.lock().entry(key).or_default() += n;
    }
}

impl Telemetry {
    /// Fresh counters.
    pub fn new() -> Self {
        Self {
            started: Instant::now(),
            requests: Mutex::default(),
            items: Mutex::default(),
            rejected: Mutex::default(),
            bytes: Mutex::default(),
            latency: Mutex::default(),
            logprobs_spans: AtomicU64::new(0),
            logprobs_errors: AtomicU64::new(0),
            hallucination_scored: AtomicU64::new(0),
            truncated: Mutex::default(),
        }
    }

    /// Counts a finished export request.
    pub fn request(
        &self,
        signal: SignalKind,
        transport: Transport,
        outcome: &'static str,
        elapsed: Duration,
    ) {
        let key = (signal.as_str(), transport.as_str(), outcome);
        bump(&self.requests, key, 1);
        if outcome == "ok" || outcome == "partial" {
            let secs = elapsed.as_secs_f64();
            let mut lat = self.latency.lock();
            let l = lat
                .entry((signal.as_str(), transport.as_str(), ""))
                .or_default();
            l.count += 1;
            l.sum_secs += secs;
            for (b, bound) in l.buckets.iter_mut().zip(LATENCY_BOUNDS) {
                if secs <= bound {
                    *b += 1;
                }
            }
        }
    }

    /// Counts accepted items and received bytes.
    pub fn accepted(&self, signal: SignalKind, transport: Transport, items: u64) {
        bump(
            &self.items,
            (signal.as_str(), transport.as_str(), ""),
            items,
        );
    }

    /// Counts body bytes.
    pub fn received_bytes(&self, signal: SignalKind, transport: Transport, bytes: u64) {
        bump(
            &self.bytes,
            (signal.as_str(), transport.as_str(), ""),
            bytes,
        );
    }

    /// Counts rejected items.
    pub fn rejected(&self, signal: SignalKind, reason: &'static str, items: u64) {
        bump(&self.rejected, (signal.as_str(), reason, ""), items);
    }

    /// Counts items whose LLM content was truncated (`max_content_bytes_per_span`).
    pub fn truncated(&self, signal: SignalKind, items: u64) {
        bump(&self.truncated, (signal.as_str(), "", ""), items);
    }

    /// Counts quality computations.
    pub fn quality(&self, logprobs: u64, errors: u64, hallucination: u64) {
        self.logprobs_spans.fetch_add(logprobs, Ordering::Relaxed);
        self.logprobs_errors.fetch_add(errors, Ordering::Relaxed);
        self.hallucination_scored
            .fetch_add(hallucination, Ordering::Relaxed);
    }

    /// Renders everything (plus the store's stats) in the Prometheus text format 0.0.4.
    pub fn render(&self, store: Option<&StoreStats>) -> String {
        let mut o = String::with_capacity(4096);
        let family = |o: &mut String, name: &str, kind: &str, help: &str| {
            let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} {kind}");
        };
        family(
            &mut o,
            "sightline_uptime_seconds",
            "gauge",
            "Seconds since the server started.",
        );
        let _ = writeln!(
            o,
            "sightline_uptime_seconds {}",
            self.started.elapsed().as_secs_f64()
        );
        if let Some(rss) = resident_bytes() {
            family(
                &mut o,
                "sightline_process_resident_bytes",
                "gauge",
                "Resident set size of the server process (Linux /proc/self/status VmRSS).",
            );
            let _ = writeln!(o, "sightline_process_resident_bytes {rss}");
        }

        family(
            &mut o,
            "sightline_ingest_requests_total",
            "counter",
            "Export requests by signal, transport and outcome.",
        );
        for ((s, t, outcome), n) in self.requests.lock().iter() {
            let _ = writeln!(
                o,
                "sightline_ingest_requests_total{{signal=\"{s}\",transport=\"{t}\",outcome=\"{outcome}\"}} {n}"
            );
        }
        family(
            &mut o,
            "sightline_ingest_items_total",
            "counter",
            "Accepted spans, log records and metric data points.",
        );
        for ((s, t, _), n) in self.items.lock().iter() {
            let _ = writeln!(
                o,
                "sightline_ingest_items_total{{signal=\"{s}\",transport=\"{t}\"}} {n}"
            );
        }
        family(
            &mut o,
            "sightline_ingest_bytes_total",
            "counter",
            "Request body bytes received (before decompression).",
        );
        for ((s, t, _), n) in self.bytes.lock().iter() {
            let _ = writeln!(
                o,
                "sightline_ingest_bytes_total{{signal=\"{s}\",transport=\"{t}\"}} {n}"
            );
        }
        family(
            &mut o,
            "sightline_ingest_rejected_items_total",
            "counter",
            "Rejected items by signal and reason (a request refused whole counts its items once they are counted, else 1).",
        );
        for ((s, r, _), n) in self.rejected.lock().iter() {
            let _ = writeln!(
                o,
                "sightline_ingest_rejected_items_total{{signal=\"{s}\",reason=\"{r}\"}} {n}"
            );
        }
        family(
            &mut o,
            "sightline_ingest_truncated_items_total",
            "counter",
            "Accepted items whose LLM content was over max_content_bytes_per_span and truncated.",
        );
        for ((s, _, _), n) in self.truncated.lock().iter() {
            let _ = writeln!(
                o,
                "sightline_ingest_truncated_items_total{{signal=\"{s}\"}} {n}"
            );
        }
        family(
            &mut o,
            "sightline_ingest_ack_seconds",
            "histogram",
            "Time from request start to durable acknowledgement.",
        );
        for ((s, t, _), l) in self.latency.lock().iter() {
            for (b, bound) in l.buckets.iter().zip(LATENCY_BOUNDS) {
                let _ = writeln!(
                    o,
                    "sightline_ingest_ack_seconds_bucket{{signal=\"{s}\",transport=\"{t}\",le=\"{bound}\"}} {b}"
                );
            }
            let _ = writeln!(
                o,
                "sightline_ingest_ack_seconds_bucket{{signal=\"{s}\",transport=\"{t}\",le=\"+Inf\"}} {}",
                l.count
            );
            let _ = writeln!(
                o,
                "sightline_ingest_ack_seconds_sum{{signal=\"{s}\",transport=\"{t}\"}} {}",
                l.sum_secs
            );
            let _ = writeln!(
                o,
                "sightline_ingest_ack_seconds_count{{signal=\"{s}\",transport=\"{t}\"}} {}",
                l.count
            );
        }
        let counters = [
            (
                "sightline_quality_logprobs_spans_total",
                "Spans that carried token logprobs.",
                &self.logprobs_spans,
            ),
            (
                "sightline_quality_logprobs_errors_total",
                "Spans whose logprobs could not be scored.",
                &self.logprobs_errors,
            ),
            (
                "sightline_quality_hallucination_scored_total",
                "Spans given a hallucination index.",
                &self.hallucination_scored,
            ),
        ];
        for (name, help, v) in counters {
            family(&mut o, name, "counter", help);
            let _ = writeln!(o, "{name} {}", v.load(Ordering::Relaxed));
        }
        if let Some(st) = store {
            let fsync_avg = if st.wal.fsyncs == 0 {
                0.0
            } else {
                st.wal.fsync_micros_total as f64 / st.wal.fsyncs as f64 / 1e6
            };
            let gauges: [(&str, &str, &str, f64); 22] = [
                (
                    "sightline_wal_fsyncs_total",
                    "counter",
                    "WAL fdatasync calls.",
                    st.wal.fsyncs as f64,
                ),
                (
                    "sightline_wal_fsync_seconds_total",
                    "counter",
                    "Time spent in WAL fdatasync.",
                    st.wal.fsync_micros_total as f64 / 1e6,
                ),
                (
                    "sightline_wal_fsync_seconds_max",
                    "gauge",
                    "Longest WAL fdatasync since start.",
                    st.wal.fsync_micros_max as f64 / 1e6,
                ),
                (
                    "sightline_wal_fsync_seconds_avg",
                    "gauge",
                    "Mean WAL fdatasync latency since start.",
                    fsync_avg,
                ),
                (
                    "sightline_wal_bytes_written_total",
                    "counter",
                    "Bytes written to the WAL.",
                    st.wal.bytes_written as f64,
                ),
                (
                    "sightline_store_appends_total",
                    "counter",
                    "Store appends.",
                    st.appends as f64,
                ),
                (
                    "sightline_store_rows_appended_total",
                    "counter",
                    "Rows appended to the store.",
                    st.rows_appended as f64,
                ),
                (
                    "sightline_store_rejected_over_budget_total",
                    "counter",
                    "Appends refused by the memory budget.",
                    st.rejected_over_budget as f64,
                ),
                (
                    "sightline_memtable_bytes",
                    "gauge",
                    "Bytes of unflushed data.",
                    st.memtable_bytes as f64,
                ),
                (
                    "sightline_memory_budget_bytes",
                    "gauge",
                    "Memory budget of unflushed data.",
                    st.memory_budget_bytes as f64,
                ),
                (
                    "sightline_segment_index_bytes",
                    "gauge",
                    "Bytes the open segments' indexes hold in memory (postings, blooms).",
                    st.segment_index_bytes as f64,
                ),
                (
                    "sightline_rollup_cache_bytes",
                    "gauge",
                    "Bytes of span rollup rows cached in memory.",
                    st.rollup_cache_bytes as f64,
                ),
                (
                    "sightline_token_dictionary_cache_bytes",
                    "gauge",
                    "Bytes of searched log segments' token dictionaries kept in memory.",
                    st.token_dictionary_cache_bytes as f64,
                ),
                (
                    "sightline_scan_memory_bytes",
                    "gauge",
                    "Bytes of rows held by running queries' scans.",
                    st.scan_memory_bytes as f64,
                ),
                (
                    "sightline_scan_memory_budget_bytes",
                    "gauge",
                    "Budget of the rows running queries' scans may hold.",
                    st.scan_memory_budget_bytes as f64,
                ),
                (
                    "sightline_flushes_total",
                    "counter",
                    "Memtable flushes.",
                    st.flushes as f64,
                ),
                (
                    "sightline_flush_errors_total",
                    "counter",
                    "Failed flushes.",
                    st.flush_errors as f64,
                ),
                (
                    "sightline_compactions_total",
                    "counter",
                    "Segment compactions.",
                    st.compactions as f64,
                ),
                (
                    "sightline_segments",
                    "gauge",
                    "Live segments.",
                    st.segments as f64,
                ),
                (
                    "sightline_segment_bytes",
                    "gauge",
                    "Bytes in live segments.",
                    st.segment_bytes as f64,
                ),
                (
                    "sightline_segment_rows",
                    "gauge",
                    "Rows in live segments.",
                    st.segment_rows as f64,
                ),
                (
                    "sightline_quarantined_segments_total",
                    "counter",
                    "Segments moved to quarantine.",
                    st.quarantined_segments as f64,
                ),
            ];
            for (name, kind, help, v) in gauges {
                family(&mut o, name, kind, help);
                let _ = writeln!(o, "{name} {v}");
            }
        }
        o
    }
}

/// The process's resident set size, from `/proc/self/status` (`None` off Linux).
fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}
