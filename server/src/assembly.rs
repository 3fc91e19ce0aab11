//! Trace-level assembly of LLM quality: an LLM span's answer is scored against the documents
//! its trace retrieved, when the two arrive as different spans, in different requests, in any
//! order, over either transport.
//!
//! Ingest stores every span as it comes (acknowledged = durable) and tells the [`Assembler`]
//! which traces hold an LLM span with an answer and which hold retrieved documents. A trace
//! with both is evaluated once no span of it has arrived for `assembly_settle_secs`: the
//! assembler reads the trace back from the store, scores each LLM span against the documents
//! retrieved before it ([`evaluate`]) and stores one evaluation span per scored answer. A
//! trace whose pieces do not come together within `assembly_timeout_secs` is forgotten;
//! spans of an evaluated trace that arrive later are counted, not evaluated (the evaluation
//! spans have ids derived from the answer's span, and a trace is evaluated once).
//!
//! Memory is bounded: at most `max_assembling_traces` traces (a few dozen bytes each) are
//! tracked, the rest are counted as dropped. Nothing is lost on a crash: the spans are in the
//! store, and at start [`recover`] reads the last `assembly_recovery_secs` of spans and
//! queues the traces that have both pieces and no evaluation. Shutdown evaluates what is
//! ready first.
//!
//! Counters and the number of traces assembling are in `/metrics`
//! (`sightline_assembly_*`).

pub mod context;
pub mod evaluate;
pub mod recover;

/// Span builders the assembly tests share.
#[cfg(test)]
pub(crate) mod test_spans {
    use sightline_storage::{AttrValue, SpanId, SpanRecord, TraceId, UnixNanos};

    /// A string attribute value.
    pub(crate) fn s(v: &str) -> AttrValue {
        AttrValue::Str(v.into())
    }

    /// Span `id` of trace `[9; 16]` under `parent`, starting at `start` ns, 10 ns long.
    pub(crate) fn span(
        id: u8,
        parent: Option<u8>,
        start: i64,
        attrs: Vec<(&str, AttrValue)>,
    ) -> SpanRecord {
        let mut r = SpanRecord::new(
            TraceId([9; 16]),
            SpanId([id; 8]),
            "rag",
            format!("span {id}"),
            UnixNanos(start),
            UnixNanos(start + 10),
        );
        r.parent_span_id = parent.map(|p| SpanId([p; 8]));
        r.attributes = attrs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        r
    }
}

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use sightline_storage::{
    Deadline, LogRecord, Predicate, ScanRequest, Signal, SpanRecord, Store, TenantId, TimeRange,
    TraceId, UnixNanos,
};

use crate::limits::Limits;
use crate::otlp::genai::answer_text;
use crate::otlp::genai::log_events::log_event;
use crate::otlp::genai::prompt::has_tool_results;
use context::has_context;
use evaluate::{EVALUATION_SPAN, evaluate_trace};

/// How often the worker looks for traces that are due.
const TICK: Duration = Duration::from_millis(250);
/// Longest read of one trace for its evaluation.
const TRACE_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// How far outside its spans' time extent a trace's correlated log records are looked for.
const LOG_MARGIN_NANOS: i64 = 600_000_000_000;

/// The assembler's settings (from [`Limits`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AssemblyConfig {
    /// Most traces tracked at once.
    pub max_traces: usize,
    /// Quiet time before a trace with both pieces is evaluated.
    pub settle: Duration,
    /// Longest a trace is tracked.
    pub timeout: Duration,
    /// How far back [`recover`] looks at start.
    pub recovery_window: Duration,
}

impl From<&Limits> for AssemblyConfig {
    fn from(l: &Limits) -> Self {
        Self {
            max_traces: l.max_assembling_traces,
            settle: Duration::from_secs(l.assembly_settle_secs),
            timeout: Duration::from_secs(l.assembly_timeout_secs),
            recovery_window: Duration::from_secs(l.assembly_recovery_secs),
        }
    }
}

/// What the assembler knows of one trace.
#[derive(Clone, Copy, Debug)]
struct Entry {
    first_seen: Instant,
    last_seen: Instant,
    /// An LLM span with an answer (and no documents of its own) has arrived, or a GenAI log
    /// record with an answer.
    llm: bool,
    /// A span with retrieved documents or a tool result has arrived.
    context: bool,
    /// Evaluated (kept until the timeout so late spans are recognised).
    done: bool,
}

type Key = (TenantId, TraceId);

#[derive(Debug, Default)]
struct Counters {
    evaluated_traces: AtomicU64,
    evaluations: AtomicU64,
    dropped: AtomicU64,
    expired: AtomicU64,
    late_spans: AtomicU64,
    errors: AtomicU64,
    recovered: AtomicU64,
}

/// Tracks traces until their LLM spans and documents are together (see the module docs).
#[derive(Debug)]
pub struct Assembler {
    store: Arc<Store>,
    config: AssemblyConfig,
    traces: Mutex<HashMap<Key, Entry>>,
    wake: Condvar,
    stopping: AtomicBool,
    counters: Counters,
    worker: Mutex<Option<std::thread::JoinHandle<()>>>,
}

/// Whether a span is an answer to assemble and whether it carries context (documents, a tool
/// result).
fn role(s: &SpanRecord) -> (bool, bool) {
    if s.name == EVALUATION_SPAN {
        return (false, false);
    }
    // Cheap first: only spans with GenAI-ish keys can hold an answer or context.
    let genai = s.attributes.iter().any(|(k, _)| {
        k.starts_with("gen_ai.")
            || k.starts_with("llm.")
            || k.starts_with("output.")
            || k.starts_with("openinference.")
            || k.starts_with("retrieval.")
    }) || s.events.iter().any(|e| e.name.starts_with("gen_ai."));
    if !genai {
        return (false, false);
    }
    let docs = crate::otlp::genai::content::has_documents(&s.attributes);
    let answer = !docs
        && s.quality.hallucination_index.is_none()
        && answer_text(&s.attributes, &s.events).is_some();
    (answer, has_context(s, &s.events))
}

/// Whether a log record is a GenAI event holding an answer and whether it holds a tool
/// result (for the trace of its span).
fn log_role(l: &LogRecord) -> (bool, bool) {
    if l.span_id.is_none() {
        return (false, false);
    }
    match log_event(l) {
        Some(e) => {
            let events = std::slice::from_ref(&e);
            (
                answer_text(&Vec::new(), events).is_some(),
                has_tool_results(&Vec::new(), events),
            )
        }
        None => (false, false),
    }
}

impl Assembler {
    /// An assembler over `store`; [`Assembler::start`] runs its worker.
    pub fn new(store: Arc<Store>, config: AssemblyConfig) -> Arc<Self> {
        Arc::new(Self {
            store,
            config,
            traces: Mutex::new(HashMap::new()),
            wake: Condvar::new(),
            stopping: AtomicBool::new(false),
            counters: Counters::default(),
            worker: Mutex::new(None),
        })
    }

    /// Starts the worker thread, which first runs [`recover`].
    pub fn start(self: &Arc<Self>) -> std::io::Result<()> {
        let me = Arc::clone(self);
        let handle = std::thread::Builder::new()
            .name("sightline-assembly".into())
            .spawn(move || {
                match recover::recover(&me.store, me.config.recovery_window) {
                    Ok(keys) => {
                        let n = keys.len();
                        me.queue_recovered(keys);
                        if n > 0 {
                            tracing::info!(traces = n, "queued traces left unevaluated");
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "assembly recovery scan failed"),
                }
                me.run();
            })?;
        *self.worker.lock() = Some(handle);
        Ok(())
    }

    /// Notes the spans of one stored request.
    pub fn observe(&self, tenant: &TenantId, spans: &[SpanRecord]) {
        self.note(tenant, spans.iter().map(|s| (s.trace_id, role(s))));
    }

    /// Notes the log records of one stored request (GenAI events correlated to a span).
    pub fn observe_logs(&self, tenant: &TenantId, logs: &[LogRecord]) {
        self.note(
            tenant,
            logs.iter().filter_map(|l| Some((l.trace_id?, log_role(l)))),
        );
    }

    /// Notes items of one request by trace: `(trace, (answer, context))`.
    fn note(&self, tenant: &TenantId, items: impl Iterator<Item = (TraceId, (bool, bool))>) {
        let now = Instant::now();
        let mut roles: HashMap<TraceId, (bool, bool, u64)> = HashMap::new();
        for (trace, (llm, docs)) in items {
            let r = roles.entry(trace).or_default();
            r.0 |= llm;
            r.1 |= docs;
            r.2 += 1;
        }
        let mut traces = self.traces.lock();
        for (trace, (llm, docs, n)) in roles {
            let key = (tenant.clone(), trace);
            if let Some(e) = traces.get_mut(&key) {
                if e.done {
                    if llm || docs {
                        self.counters.late_spans.fetch_add(n, Ordering::Relaxed);
                    }
                    continue;
                }
                e.last_seen = now;
                e.llm |= llm;
                e.context |= docs;
                continue;
            }
            if !(llm || docs) {
                continue;
            }
            if traces.len() >= self.config.max_traces {
                self.counters.dropped.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            traces.insert(
                key,
                Entry {
                    first_seen: now,
                    last_seen: now,
                    llm,
                    context: docs,
                    done: false,
                },
            );
        }
    }

    fn queue_recovered(&self, keys: Vec<Key>) {
        let now = Instant::now();
        let mut traces = self.traces.lock();
        for key in keys {
            if traces.len() >= self.config.max_traces {
                self.counters.dropped.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            self.counters.recovered.fetch_add(1, Ordering::Relaxed);
            traces.entry(key).or_insert(Entry {
                first_seen: now,
                last_seen: now,
                llm: true,
                context: true,
                done: false,
            });
        }
    }

    /// Traces due now: ready ones (both pieces, quiet for `settle`), or all ready ones when
    /// `flush`. Expired entries are removed.
    fn due(&self, flush: bool) -> Vec<Key> {
        let now = Instant::now();
        let mut traces = self.traces.lock();
        let mut out = Vec::new();
        traces.retain(|key, e| {
            let expired = now.duration_since(e.first_seen) >= self.config.timeout;
            if e.done {
                return !expired;
            }
            let ready = e.llm
                && e.context
                && (flush || now.duration_since(e.last_seen) >= self.config.settle);
            if ready {
                e.done = true;
                out.push(key.clone());
                return !expired;
            }
            if expired {
                self.counters.expired.fetch_add(1, Ordering::Relaxed);
            }
            !expired
        });
        out
    }

    fn evaluate(&self, (tenant, trace): &Key) {
        let deadline = Deadline::after(TRACE_READ_TIMEOUT);
        let view = match sightline_query::traces::trace::trace_by_id(
            &self.store,
            tenant,
            *trace,
            &deadline,
        ) {
            Ok(Some(v)) => v,
            Ok(None) => return,
            Err(e) => {
                self.counters.errors.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(%trace, error = %e, "reading a trace to evaluate failed");
                return;
            }
        };
        let logs = match self.trace_logs(tenant, *trace, &view.spans, &deadline) {
            Ok(l) => l,
            Err(e) => {
                self.counters.errors.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(%trace, error = %e, "reading a trace's log records failed");
                return;
            }
        };
        let evaluations = evaluate_trace(&view.spans, &logs);
        self.counters
            .evaluated_traces
            .fetch_add(1, Ordering::Relaxed);
        if evaluations.is_empty() {
            return;
        }
        match self.store.append_spans(tenant, &evaluations) {
            Ok(()) => {
                self.counters
                    .evaluations
                    .fetch_add(evaluations.len() as u64, Ordering::Relaxed);
            }
            Err(e) => {
                self.counters.errors.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(%trace, error = %e, "storing evaluations failed (recomputed at the next start)");
            }
        }
    }

    /// The trace's log records correlated to a span, within [`LOG_MARGIN_NANOS`] of its
    /// spans' time extent (pruned by time and by the trace id's bloom filter).
    fn trace_logs(
        &self,
        tenant: &TenantId,
        trace: TraceId,
        spans: &[SpanRecord],
        deadline: &Deadline,
    ) -> Result<Vec<LogRecord>, sightline_storage::StorageError> {
        let (Some(min), Some(max)) = (
            spans.iter().map(|s| s.start.0).min(),
            spans.iter().map(|s| s.end.0.max(s.start.0)).max(),
        ) else {
            return Ok(Vec::new());
        };
        let time = TimeRange::new(
            UnixNanos(min.saturating_sub(LOG_MARGIN_NANOS)),
            UnixNanos(max.saturating_add(LOG_MARGIN_NANOS)),
        )?;
        let req = ScanRequest::new(tenant.clone(), Signal::Logs, time)
            .with(Predicate::TraceId(trace))
            .until(deadline.clone());
        let res = self.store.scan(&req)?;
        let mut out = Vec::new();
        for b in &res.batches {
            deadline.check()?;
            out.extend(
                sightline_storage::columnar::logs_from_batch(b)?
                    .into_iter()
                    .filter(|l| l.span_id.is_some()),
            );
        }
        Ok(out)
    }

    fn run(&self) {
        while !self.stopping.load(Ordering::Acquire) {
            for key in self.due(false) {
                self.evaluate(&key);
            }
            let mut traces = self.traces.lock();
            if !self.stopping.load(Ordering::Acquire) {
                self.wake.wait_for(&mut traces, TICK);
            }
        }
    }

    /// Stops the worker, then evaluates every trace that has both pieces (bounded by the
    /// number tracked). Call before the store closes.
    pub fn shutdown(&self) {
        self.stopping.store(true, Ordering::Release);
        self.wake.notify_all();
        if let Some(h) = self.worker.lock().take() {
            let _ = h.join();
        }
        for key in self.due(true) {
            self.evaluate(&key);
        }
    }

    /// Traces being tracked (assembling or recently evaluated).
    pub fn tracked(&self) -> usize {
        self.traces.lock().len()
    }

    /// The `sightline_assembly_*` families in the Prometheus text format.
    pub fn render(&self, o: &mut String) {
        let c = &self.counters;
        let families: [(&str, &str, &str, u64); 9] = [
            (
                "sightline_assembly_traces",
                "gauge",
                "Traces tracked for trace-level LLM quality (assembling or recently evaluated).",
                self.tracked() as u64,
            ),
            (
                "sightline_assembly_max_traces",
                "gauge",
                "Most traces tracked (max_assembling_traces).",
                self.config.max_traces as u64,
            ),
            (
                "sightline_assembly_evaluated_traces_total",
                "counter",
                "Traces read back and evaluated.",
                c.evaluated_traces.load(Ordering::Relaxed),
            ),
            (
                "sightline_assembly_evaluations_total",
                "counter",
                "Evaluation spans stored (one per scored answer).",
                c.evaluations.load(Ordering::Relaxed),
            ),
            (
                "sightline_assembly_dropped_traces_total",
                "counter",
                "Traces not tracked because max_assembling_traces were.",
                c.dropped.load(Ordering::Relaxed),
            ),
            (
                "sightline_assembly_expired_traces_total",
                "counter",
                "Traces whose answer or documents never arrived within assembly_timeout_secs.",
                c.expired.load(Ordering::Relaxed),
            ),
            (
                "sightline_assembly_late_spans_total",
                "counter",
                "Answer or context spans (and GenAI log records) that arrived after their trace was evaluated.",
                c.late_spans.load(Ordering::Relaxed),
            ),
            (
                "sightline_assembly_errors_total",
                "counter",
                "Evaluations that failed to read the trace or store their result.",
                c.errors.load(Ordering::Relaxed),
            ),
            (
                "sightline_assembly_recovered_traces_total",
                "counter",
                "Traces queued at start because a previous run left them unevaluated.",
                c.recovered.load(Ordering::Relaxed),
            ),
        ];
        for (name, kind, help, v) in families {
            let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {v}");
        }
    }
}
