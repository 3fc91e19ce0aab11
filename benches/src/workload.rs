//! Deterministic generators of realistic telemetry for benchmarks and tests.
//!
//! * Metric series of four shapes, sampled every 10 s with millisecond jitter: monotonic
//!   counters (integer increments at a per-series rate), integer gauges (random walk), noisy
//!   float gauges (daily seasonality plus Gaussian noise, rounded to what an exporter would send)
//!   and constant or step series.
//! * LLM application spans: a gateway request with retrieval, rerank and model-call children,
//!   GenAI attributes, lognormal durations, occasional errors.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, LogNormal, Normal};

use sightline_storage::model::AttrValue;
use sightline_storage::{
    GenAiFields, MetricKind, QualityFields, Sample, SeriesDef, SpanId, SpanKind, SpanRecord,
    StatusCode, TraceId, UnixNanos,
};

/// Shape of a generated metric series.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// Monotonic counter.
    Counter,
    /// Integer-valued gauge.
    IntGauge,
    /// Noisy float gauge.
    FloatGauge,
    /// Constant, with a rare step.
    Step,
}

/// One generated series and its generator state.
#[derive(Clone, Debug)]
pub struct GenSeries {
    /// Definition.
    pub def: SeriesDef,
    /// Shape.
    pub shape: Shape,
    value: f64,
    rate: f64,
    phase: f64,
}

/// Models, services and operations of the generated LLM application.
pub const MODELS: &[(&str, &str)] = &[
    ("gpt-4o", "openai"),
    ("gpt-4o-mini", "openai"),
    ("claude-3-5-sonnet", "anthropic"),
    ("llama-3.1-70b", "vllm"),
    ("mistral-large", "mistral"),
];
/// Services of the generated application.
pub const SERVICES: &[&str] = &[
    "gateway",
    "retriever",
    "reranker",
    "llm-router",
    "guardrail",
];

/// Builds `n` series across the four shapes, with labels like a real exporter's.
pub fn series(n: usize, seed: u64) -> Vec<GenSeries> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n)
        .map(|i| {
            let shape = match i % 4 {
                0 => Shape::Counter,
                1 => Shape::IntGauge,
                2 => Shape::FloatGauge,
                _ => Shape::Step,
            };
            let (name, kind) = match shape {
                Shape::Counter => ("gen_ai_client_token_usage_total", MetricKind::Counter),
                Shape::IntGauge => ("llm_queue_depth", MetricKind::Gauge),
                Shape::FloatGauge => ("llm_latency_p50_seconds", MetricKind::Gauge),
                Shape::Step => ("llm_replicas", MetricKind::Gauge),
            };
            let (model, provider) = MODELS[i % MODELS.len()];
            let labels = vec![
                ("instance".to_owned(), format!("node-{:03}", i / 20)),
                ("model".to_owned(), model.to_owned()),
                ("provider".to_owned(), provider.to_owned()),
                (
                    "service".to_owned(),
                    SERVICES[(i / 4) % SERVICES.len()].to_owned(),
                ),
                ("series".to_owned(), i.to_string()),
            ];
            GenSeries {
                def: SeriesDef::new(name, kind, labels),
                shape,
                value: match shape {
                    Shape::Counter => rng.random_range(0.0..1e6_f64).round(),
                    Shape::IntGauge => rng.random_range(0..50) as f64,
                    Shape::FloatGauge => rng.random_range(0.2..2.0),
                    Shape::Step => rng.random_range(1..8) as f64,
                },
                rate: rng.random_range(1.0..500.0),
                phase: rng.random_range(0.0..std::f64::consts::TAU),
            }
        })
        .collect()
}

/// Samples of every series for `points` scrapes starting at `start_ms`, 10 s apart with up to
/// ±`jitter_ms` of jitter, in scrape order (all series of scrape 0, then scrape 1, ...).
pub fn samples(
    series: &mut [GenSeries],
    start_ms: i64,
    points: usize,
    jitter_ms: i64,
    seed: u64,
) -> Vec<Sample> {
    let mut rng = StdRng::seed_from_u64(seed);
    let noise = Normal::new(0.0, 0.05).unwrap_or_else(|_| unreachable!("valid parameters"));
    let mut out = Vec::with_capacity(series.len() * points);
    for p in 0..points {
        let base = start_ms + p as i64 * 10_000;
        for s in series.iter_mut() {
            let ts = base
                + if jitter_ms > 0 {
                    rng.random_range(-jitter_ms..=jitter_ms)
                } else {
                    0
                };
            s.value = match s.shape {
                Shape::Counter => s.value + (s.rate * rng.random_range(0.5..1.5)).round(),
                Shape::IntGauge => (s.value + rng.random_range(-2..=2) as f64).max(0.0),
                Shape::FloatGauge => {
                    let day = (ts as f64 / 86_400_000.0) * std::f64::consts::TAU;
                    let v = 1.0 + 0.3 * (day + s.phase).sin() + noise.sample(&mut rng);
                    (v.max(0.01) * 1e4).round() / 1e4
                }
                Shape::Step => {
                    if rng.random_bool(0.001) {
                        rng.random_range(1..8) as f64
                    } else {
                        s.value
                    }
                }
            };
            out.push(Sample {
                series: s.def.id,
                timestamp_ms: ts,
                value: s.value,
            });
        }
    }
    out
}

/// The trace id of trace number `seq` (see [`TraceGen::next_sequence`]).
pub fn trace_id(seq: u64) -> TraceId {
    let mut t = [0u8; 16];
    t[..8].copy_from_slice(&seq.to_be_bytes());
    t[8..].copy_from_slice(&seq.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_be_bytes());
    t[15] |= 1;
    TraceId(t)
}

/// The id of span `idx` of trace number `seq`.
pub fn span_id(seq: u64, idx: u64) -> SpanId {
    SpanId(((seq << 8 | idx).wrapping_mul(0x2545_f491_4f6c_dd1d) | 1).to_be_bytes())
}

/// A generator of traces, one after another, with ids [`trace_id`] of consecutive sequence
/// numbers.
pub trait TraceGen {
    /// Spans in each trace.
    fn spans_per_trace(&self) -> usize;

    /// Sequence number of the next trace (the first is `seed * 1_000_003 + 1`).
    fn next_sequence(&self) -> u64;

    /// One trace starting at `start`.
    fn trace(&mut self, start: UnixNanos) -> Vec<SpanRecord>;

    /// `n` traces spread evenly from `start` over `span_nanos`.
    fn traces(&mut self, n: usize, start: UnixNanos, span_nanos: i64) -> Vec<SpanRecord> {
        let step = span_nanos / n.max(1) as i64;
        (0..n)
            .flat_map(|i| self.trace(UnixNanos(start.0 + i as i64 * step)))
            .collect()
    }
}

/// Generates LLM-application traces.
#[derive(Debug)]
pub struct SpanGen {
    rng: StdRng,
    next_trace: u64,
    duration: LogNormal<f64>,
    llm_duration: LogNormal<f64>,
}

impl SpanGen {
    /// A generator with a seed.
    pub fn new(seed: u64) -> Self {
        Self {
            rng: StdRng::seed_from_u64(seed),
            next_trace: seed.wrapping_mul(1_000_003) + 1,
            duration: LogNormal::new(16.0, 1.0)
                .unwrap_or_else(|_| unreachable!("valid parameters")),
            llm_duration: LogNormal::new(20.5, 0.6)
                .unwrap_or_else(|_| unreachable!("valid parameters")),
        }
    }

    fn ids(&mut self, trace: u64, idx: u64) -> (TraceId, SpanId) {
        (trace_id(trace), span_id(trace, idx))
    }
}

impl TraceGen for SpanGen {
    fn spans_per_trace(&self) -> usize {
        5
    }

    fn next_sequence(&self) -> u64 {
        self.next_trace
    }

    /// One trace of 5 spans starting at `start`.
    fn trace(&mut self, start: UnixNanos) -> Vec<SpanRecord> {
        let trace = self.next_trace;
        self.next_trace += 1;
        let user = self.rng.random_range(0..10_000u32);
        let conv = self.rng.random_range(0..50_000u32);
        let (model, provider) = MODELS[self.rng.random_range(0..MODELS.len())];
        let error = self.rng.random_bool(0.02);
        let mut out = Vec::with_capacity(5);
        let (tid, root_id) = self.ids(trace, 0);
        let names = [
            ("gateway", "POST /chat", SpanKind::Server),
            ("retriever", "retrieve", SpanKind::Internal),
            ("reranker", "rerank", SpanKind::Internal),
            ("guardrail", "check_output", SpanKind::Internal),
            ("llm-router", "chat", SpanKind::Client),
        ];
        let mut t = start.0;
        let mut total = 0i64;
        for (i, (service, name, kind)) in names.iter().enumerate().skip(1) {
            let (_, sid) = self.ids(trace, i as u64);
            let d = if *name == "chat" {
                self.llm_duration.sample(&mut self.rng)
            } else {
                self.duration.sample(&mut self.rng)
            } as i64;
            let mut s = SpanRecord::new(tid, sid, *service, *name, UnixNanos(t), UnixNanos(t + d));
            s.parent_span_id = Some(root_id);
            s.kind = *kind;
            s.scope_name = "sightline.workload".into();
            s.status_code = StatusCode::Ok;
            s.attributes = vec![
                ("user.id".into(), AttrValue::Str(format!("user-{user}"))),
                ("http.route".into(), AttrValue::Str("/chat".into())),
            ];
            s.resource_attributes = vec![
                (
                    "deployment.environment".into(),
                    AttrValue::Str("prod".into()),
                ),
                (
                    "host.name".into(),
                    AttrValue::Str(format!("{service}-{}", trace % 8)),
                ),
            ];
            if *name == "chat" {
                let input = self.rng.random_range(200..8000i64);
                let output = self.rng.random_range(20..1200i64);
                s.gen_ai = GenAiFields {
                    operation_name: Some("chat".into()),
                    provider_name: Some(provider.into()),
                    request_model: Some(model.into()),
                    response_model: Some(format!("{model}-2026-06-01")),
                    input_tokens: Some(input),
                    output_tokens: Some(output),
                    total_tokens: Some(input + output),
                    cache_read_input_tokens: Some(self.rng.random_range(0..input)),
                    cost: Some((input as f64 * 2.5 + output as f64 * 10.0) / 1e6),
                    temperature: Some(0.7),
                    finish_reasons: vec!["stop".into()],
                    conversation_id: Some(format!("conv-{conv}")),
                };
                s.quality = QualityFields {
                    entropy_mean: Some(self.rng.random_range(0.05..1.5)),
                    entropy_max: Some(self.rng.random_range(1.5..4.0)),
                    low_confidence_tokens: Some(self.rng.random_range(0..40)),
                    hallucination_index: Some(self.rng.random_range(0.0..1.0)),
                };
                if error {
                    s.status_code = StatusCode::Error;
                    s.status_message = "upstream 529 overloaded".into();
                }
            }
            t += d;
            total += d;
            out.push(s);
        }
        let mut root = SpanRecord::new(
            tid,
            root_id,
            "gateway",
            "POST /chat",
            start,
            UnixNanos(start.0 + total + 1_000_000),
        );
        root.kind = SpanKind::Server;
        root.status_code = if error {
            StatusCode::Error
        } else {
            StatusCode::Ok
        };
        root.attributes = vec![
            ("user.id".into(), AttrValue::Str(format!("user-{user}"))),
            ("http.request.method".into(), AttrValue::Str("POST".into())),
            (
                "http.response.status_code".into(),
                AttrValue::Int(if error { 502 } else { 200 }),
            ),
        ];
        root.resource_attributes = vec![(
            "deployment.environment".into(),
            AttrValue::Str("prod".into()),
        )];
        out.insert(0, root);
        out
    }
}

/// Cardinalities of a generated span workload of anonymous services (`service-3`), span
/// names (`operation-17`), models (`model-2`) and users (`user-000042`, one per trace).
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct SpanShape {
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
}

impl SpanShape {
    /// A wide, high-cardinality shape unlike [`SpanGen`]'s: 10 services, 50 span names,
    /// 6 models and 100,000 users, 10 spans per trace.
    pub const WIDE: SpanShape = SpanShape {
        spans_per_trace: 10,
        services: 10,
        names: 50,
        models: 6,
        users: 100_000,
    };
}

/// Generates traces of a [`SpanShape`]: every span picks its service and name at random, one
/// in five is an LLM call with token counts, one in a hundred fails; durations are lognormal
/// and spans start a millisecond apart.
#[derive(Debug)]
pub struct ShapedSpanGen {
    shape: SpanShape,
    rng: StdRng,
    next_trace: u64,
    duration: LogNormal<f64>,
}

impl ShapedSpanGen {
    /// A generator of `shape` with a seed.
    pub fn new(shape: SpanShape, seed: u64) -> Self {
        Self {
            shape,
            rng: StdRng::seed_from_u64(seed),
            next_trace: seed.wrapping_mul(1_000_003) + 1,
            duration: LogNormal::new(16.0, 1.0)
                .unwrap_or_else(|_| unreachable!("valid parameters")),
        }
    }
}

impl TraceGen for ShapedSpanGen {
    fn spans_per_trace(&self) -> usize {
        self.shape.spans_per_trace
    }

    fn next_sequence(&self) -> u64 {
        self.next_trace
    }

    fn trace(&mut self, start: UnixNanos) -> Vec<SpanRecord> {
        let shape = self.shape;
        let seq = self.next_trace;
        self.next_trace += 1;
        let tid = trace_id(seq);
        let user = self.rng.random_range(0..shape.users.max(1));
        let mut out = Vec::with_capacity(shape.spans_per_trace);
        for i in 0..shape.spans_per_trace {
            let begin = start.0 + i as i64 * 1_000_000;
            let d = self.duration.sample(&mut self.rng) as i64;
            let mut s = SpanRecord::new(
                tid,
                span_id(seq, i as u64),
                format!(
                    "service-{}",
                    self.rng.random_range(0..shape.services.max(1))
                ),
                format!("operation-{}", self.rng.random_range(0..shape.names.max(1))),
                UnixNanos(begin),
                UnixNanos(begin + d),
            );
            s.parent_span_id = (i > 0).then(|| span_id(seq, 0));
            s.kind = if i == 0 {
                SpanKind::Server
            } else {
                SpanKind::Internal
            };
            s.scope_name = "sightline.workload".into();
            let failed = self.rng.random_bool(0.01);
            s.status_code = if failed {
                StatusCode::Error
            } else {
                StatusCode::Ok
            };
            s.attributes = vec![
                ("user.id".into(), AttrValue::Str(format!("user-{user:06}"))),
                (
                    "http.status_code".into(),
                    AttrValue::Int(if failed { 500 } else { 200 }),
                ),
            ];
            if self.rng.random_range(0..5) == 0 {
                let input = self.rng.random_range(10..4_000i64);
                let output = self.rng.random_range(10..1_000i64);
                s.kind = SpanKind::Client;
                s.gen_ai.operation_name = Some("chat".into());
                s.gen_ai.request_model = Some(format!(
                    "model-{}",
                    self.rng.random_range(0..shape.models.max(1))
                ));
                s.gen_ai.input_tokens = Some(input);
                s.gen_ai.output_tokens = Some(output);
                s.gen_ai.total_tokens = Some(input + output);
            }
            out.push(s);
        }
        out
    }
}

/// Generates application log lines correlated to generated traces: what the services of the
/// LLM application log while serving a request (retrieval, model answers, guardrail verdicts,
/// cache misses, and the occasional upstream timeout), with trace and span ids set.
#[derive(Debug)]
pub struct LogGen {
    rng: StdRng,
}

impl LogGen {
    /// A generator with a seed.
    pub fn new(seed: u64) -> Self {
        Self {
            rng: StdRng::seed_from_u64(seed),
        }
    }

    /// Log lines for one trace's spans (as made by a [`TraceGen`]): `n` lines (0 to 5), each
    /// from one of the spans, stamped inside the span.
    pub fn lines(&mut self, trace: &[SpanRecord], n: usize) -> Vec<sightline_storage::LogRecord> {
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let Some(span) = trace.get(self.rng.random_range(0..trace.len().max(1))) else {
                break;
            };
            let dur = (span.end.0 - span.start.0).max(1);
            let t = UnixNanos(span.start.0 + self.rng.random_range(0..dur));
            let ms = dur / 1_000_000;
            let model = span.gen_ai.request_model.as_deref().unwrap_or("gpt-4o");
            let roll = self.rng.random_range(0..1000u32);
            let (sev, text, body) = if span.status_code == StatusCode::Error || roll < 25 {
                (
                    17,
                    "ERROR",
                    format!(
                        "upstream timeout after {ms} ms calling {} for model {model}; retrying",
                        span.gen_ai.provider_name.as_deref().unwrap_or("openai")
                    ),
                )
            } else {
                match span.service_name.as_str() {
                    "retriever" => (
                        9,
                        "INFO",
                        format!(
                            "retrieved {} documents from index kb-{} in {ms} ms",
                            self.rng.random_range(1..20),
                            self.rng.random_range(0..4)
                        ),
                    ),
                    "reranker" => (
                        9,
                        "INFO",
                        format!(
                            "reranked candidates, top score {:.3}",
                            self.rng.random_range(0.2..1.0f64)
                        ),
                    ),
                    "guardrail" if roll < 120 => (
                        13,
                        "WARN",
                        "guardrail flagged output: possible personal data, redacted".to_owned(),
                    ),
                    "guardrail" => (9, "INFO", "guardrail passed output".to_owned()),
                    "llm-router" => (
                        9,
                        "INFO",
                        format!(
                            "model {model} answered in {ms} ms with {} output tokens",
                            span.gen_ai.output_tokens.unwrap_or(0)
                        ),
                    ),
                    _ if roll < 300 => (
                        5,
                        "DEBUG",
                        format!(
                            "prompt cache miss for prefix {:016x}",
                            self.rng.random::<u64>()
                        ),
                    ),
                    _ => (9, "INFO", format!("handled POST /chat in {ms} ms")),
                }
            };
            out.push(sightline_storage::LogRecord {
                time: t,
                observed_time: t,
                severity_number: sev,
                severity_text: text.into(),
                body: AttrValue::Str(body),
                trace_id: Some(span.trace_id),
                span_id: Some(span.span_id),
                flags: 1,
                service_name: span.service_name.clone(),
                scope_name: "sightline.workload".into(),
                event_name: String::new(),
                attributes: span
                    .attributes
                    .iter()
                    .filter(|(k, _)| k == "user.id")
                    .cloned()
                    .collect(),
                resource_attributes: vec![(
                    "deployment.environment".into(),
                    AttrValue::Str("prod".into()),
                )],
            });
        }
        out
    }
}
