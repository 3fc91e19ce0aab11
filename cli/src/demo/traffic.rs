//! Traffic: users, conversations and one trace per turn, minute by minute.
//!
//! Every simulated minute starts a Poisson number of conversations (daily wave around
//! `rate_per_min`, on the history's own clock: it ends at the wave's 15:00); each has 1..5 turns 20..80 s apart, on one route and one model. A turn is
//! one trace: `chat-gateway` `POST /v1/chat` (server) -> `guardrail` input check ->
//! `retriever` query embedding + vector search -> `reranker` -> `llm-router` route and model
//! call (`chat <model>`, GenAI attributes v1.37+, retrieved documents, output messages,
//! logprobs, cache reads, cost), sometimes a tool call -> output guardrail; plus correlated
//! logs. What each call did is kept per minute ([`Observation`]) for the metrics
//! ([`super::kpi`]).

use std::collections::BTreeMap;

use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::logs::v1::LogRecord;
use opentelemetry_proto::tonic::trace::v1::{Span, Status, span::SpanKind, status::StatusCode};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, LogNormal, Normal, Poisson};
use serde_json::json;

use super::app::{self, Document, MODELS, ROLLOUT_VERSION, ROUTES};
use super::incidents::Timeline;
use super::otlp_out::{f, i, s, sa};

/// Longest a conversation lasts, in minutes (its turns land at most this late).
pub const MAX_CONVERSATION_MIN: i64 = 6;
const MS: u64 = 1_000_000;

/// One model call, for the metrics.
#[derive(Clone, Debug)]
pub struct Observation {
    /// Index into [`MODELS`].
    pub model: usize,
    /// `gen_ai.response.model`.
    pub response_model: &'static str,
    /// Seconds.
    pub duration_s: f64,
    /// Input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// `error.type` when the call failed.
    pub error: Option<&'static str>,
    /// The answer was made up (ground truth).
    pub hallucinated: bool,
}

/// What one minute produced.
#[derive(Clone, Debug, Default)]
pub struct Minute {
    /// Conversations started.
    pub sessions: u64,
    /// Model calls that happened in this minute.
    pub calls: Vec<Observation>,
}

/// Spans and logs ready to export, tagged with their service.
#[derive(Default)]
pub struct Batch {
    /// Spans.
    pub spans: Vec<(&'static str, Span)>,
    /// Logs.
    pub logs: Vec<(&'static str, LogRecord)>,
}

/// The generator's state.
pub struct Traffic {
    rng: StdRng,
    corpus: Vec<Document>,
    timeline: Timeline,
    rate_per_min: f64,
    difficulty: f64,
    /// Minute index (since the start) -> what happened then.
    pub minutes: BTreeMap<i64, Minute>,
    start_ms: i64,
    next_id: u64,
}

/// Hour of the daily wave at which the history ends (traffic peaks at 09:00, is lowest at 21:00).
const WAVE_END_HOUR: i64 = 15;

fn ns(ms: i64) -> u64 {
    u64::try_from(ms).unwrap_or(0) * MS
}

impl Traffic {
    /// A generator for a history starting at `start_ms`.
    pub fn new(seed: u64, start_ms: i64, timeline: Timeline, rate_per_min: f64) -> Self {
        Self {
            rng: StdRng::seed_from_u64(seed),
            corpus: app::corpus(),
            timeline,
            rate_per_min,
            difficulty: 0.0,
            minutes: BTreeMap::new(),
            start_ms,
            next_id: seed.wrapping_mul(0x9E37_79B9_7F4A_7C15),
        }
    }

    fn id<const N: usize>(&mut self) -> Vec<u8> {
        self.next_id = self.next_id.wrapping_add(1);
        let mut out = [0u8; N];
        let hi: u64 = self.rng.random();
        let bytes: Vec<u8> = hi
            .to_be_bytes()
            .into_iter()
            .chain(self.next_id.to_be_bytes())
            .collect();
        out.copy_from_slice(&bytes[16 - N..]);
        if out.iter().all(|b| *b == 0) {
            out[0] = 1;
        }
        out.to_vec()
    }

    /// Generates the conversations starting in minute `m` (index since the start).
    pub fn minute(&mut self, m: i64) -> Batch {
        let t0 = self.start_ms + m * 60_000;
        // The daily wave keeps the history's own clock, whose end is 15:00, not the wall
        // clock's: a run's traffic (and what its detectors can see) is the same whenever it runs.
        let hour =
            (WAVE_END_HOUR + (t0 - self.timeline.end_ms).div_euclid(3_600_000)).rem_euclid(24);
        let wave = 1.0 + 0.35 * ((hour as f64 - 9.0) / 24.0 * std::f64::consts::TAU).cos();
        // Question difficulty drifts (AR(1)): bad-answer share varies minute to minute.
        let shock = Normal::new(0.0, 0.4)
            .map(|n| n.sample(&mut self.rng))
            .unwrap_or(0.0);
        self.difficulty = 0.5 * self.difficulty + shock;
        let n = Poisson::new((self.rate_per_min * wave).max(0.1))
            .map(|p| p.sample(&mut self.rng) as u64)
            .unwrap_or(0);
        self.minutes.entry(m).or_default().sessions += n;
        let mut batch = Batch::default();
        for _ in 0..n {
            let offset = self.rng.random_range(0..60_000);
            self.conversation(t0 + offset, &mut batch);
        }
        batch
    }

    fn conversation(&mut self, start_ms: i64, batch: &mut Batch) {
        let route_weights: Vec<((), f64)> = ROUTES.iter().map(|r| ((), r.share)).collect();
        let route = ROUTES[app::pick(&mut self.rng, &route_weights)];
        let model_idx = route.models[app::pick(&mut self.rng, route.models)].0;
        let turns = 1 + app::pick(
            &mut self.rng,
            &[((), 0.3), ((), 0.25), ((), 0.2), ((), 0.15), ((), 0.1)],
        );
        let conv = hex(&self.id::<8>());
        let user = format!("user-{:04}", self.rng.random_range(0..2000));
        let mut history = 0u64;
        let mut t = start_ms;
        for turn in 0..turns {
            let out = self.turn(t, route, model_idx, &conv, &user, turn, history, batch);
            history += out;
            t += self.rng.random_range(20_000..80_000);
            if t - start_ms > (MAX_CONVERSATION_MIN - 1) * 60_000 {
                break;
            }
        }
    }

    /// One turn; returns the tokens it adds to the conversation's history.
    #[allow(clippy::too_many_arguments)]
    fn turn(
        &mut self,
        t_ms: i64,
        route: app::Route,
        model_idx: usize,
        conv: &str,
        user: &str,
        turn: usize,
        history: u64,
        batch: &mut Batch,
    ) -> u64 {
        let model = MODELS[model_idx];
        let tl = self.timeline.clone();
        let trace_id = self.id::<16>();
        let root_id = self.id::<8>();
        let mut spans: Vec<(&'static str, Span)> = Vec::new();
        let mut clock = t_ms;
        let mut child = |this: &mut Self,
                         svc: &'static str,
                         name: &str,
                         kind: SpanKind,
                         parent: &[u8],
                         start: i64,
                         dur_ms: i64,
                         attrs: Vec<KeyValue>,
                         error: Option<&str>|
         -> Vec<u8> {
            let id = this.id::<8>();
            spans.push((
                svc,
                Span {
                    trace_id: trace_id.clone(),
                    span_id: id.clone(),
                    parent_span_id: parent.to_vec(),
                    name: name.to_owned(),
                    kind: kind as i32,
                    start_time_unix_nano: ns(start),
                    end_time_unix_nano: ns(start + dur_ms.max(1)),
                    attributes: attrs,
                    status: Some(match error {
                        Some(e) => Status {
                            code: StatusCode::Error as i32,
                            message: e.to_owned(),
                        },
                        None => Status::default(),
                    }),
                    ..Default::default()
                },
            ));
            id
        };
        // guardrail (input)
        let d = self.rng.random_range(8..30);
        child(
            self,
            "guardrail",
            "guardrail input",
            SpanKind::Internal,
            &root_id,
            clock,
            d,
            vec![
                s("guardrail.policy", "pii-and-jailbreak"),
                s("guardrail.decision", "allow"),
            ],
            None,
        );
        clock += d;
        // retrieval: query embedding, vector search, rerank
        let d = self.rng.random_range(25..70);
        let embed_tokens = self.rng.random_range(8..30);
        child(
            self,
            "retriever",
            "embeddings text-embedding-3-small",
            SpanKind::Client,
            &root_id,
            clock,
            d,
            vec![
                s("gen_ai.operation.name", "embeddings"),
                s("gen_ai.provider.name", "openai"),
                s("gen_ai.request.model", "text-embedding-3-small"),
                i("gen_ai.usage.input_tokens", embed_tokens),
            ],
            None,
        );
        clock += d;
        let d = self.rng.random_range(8..35);
        child(
            self,
            "retriever",
            "query knowledge_base",
            SpanKind::Client,
            &root_id,
            clock,
            d,
            vec![
                s("db.system.name", "qdrant"),
                s("db.collection.name", "knowledge_base"),
                s("db.operation.name", "query"),
                i("db.query.top_k", 20),
            ],
            None,
        );
        clock += d;
        let first = self.rng.random_range(0..self.corpus.len());
        let docs: Vec<Document> = (0..3)
            .map(|k| self.corpus[(first + k * 5) % self.corpus.len()].clone())
            .collect();
        let d = self.rng.random_range(40..110);
        child(
            self,
            "reranker",
            "rerank rerank-english-v3.0",
            SpanKind::Client,
            &root_id,
            clock,
            d,
            vec![
                s("gen_ai.operation.name", "rerank"),
                s("gen_ai.provider.name", "cohere"),
                s("gen_ai.request.model", "rerank-english-v3.0"),
                i("rerank.documents", 20),
                i("rerank.top_n", 3),
            ],
            None,
        );
        clock += d;
        // optional tool call on the sales route
        if route.path == "/chat/sales" && self.rng.random_bool(0.25) {
            let d = self.rng.random_range(60..240);
            let call_id = hex(&self.id::<8>());
            child(
                self,
                "llm-router",
                "execute_tool lookup_order",
                SpanKind::Internal,
                &root_id,
                clock,
                d,
                vec![
                    s("gen_ai.operation.name", "execute_tool"),
                    s("gen_ai.tool.name", "lookup_order"),
                    s("gen_ai.tool.type", "function"),
                    s("gen_ai.tool.call.id", call_id),
                ],
                None,
            );
            clock += d;
        }
        // the model call
        let rollout = tl.rollout(model.name, t_ms);
        let response_model = if rollout.is_some() {
            ROLLOUT_VERSION
        } else {
            model.version
        };
        let p_bad = (model.base_hallucination * self.difficulty.exp().clamp(0.4, 2.5)
            + rollout.unwrap_or(0.0))
        .min(0.95);
        let hallucinate = self.rng.random_bool(p_bad);
        let doc_refs: Vec<&Document> = docs.iter().collect();
        let answer = app::answer(
            &mut self.rng,
            &doc_refs,
            hallucinate,
            self.difficulty.max(0.0),
        );
        let user_tokens = self.rng.random_range(10..30);
        let docs_tokens: u64 = docs.iter().map(|d| d.text.split(' ').count() as u64).sum();
        let input_tokens = route.system_tokens + history + docs_tokens + user_tokens;
        let cached = if model.prompt_cache {
            let prefix = route.system_tokens + history;
            let hit = (0.9 * tl.cache_factor(model.name, t_ms) * self.rng.random_range(0.8..1.0))
                .min(1.0);
            Some((prefix as f64 * hit) as u64)
        } else {
            None
        };
        let uncached = input_tokens - cached.unwrap_or(0);
        let error = (self
            .rng
            .random_bool(0.01 + tl.error_rate(model.provider, t_ms)))
        .then_some(if tl.error_rate(model.provider, t_ms) > 0.0 {
            "overloaded_error"
        } else {
            "rate_limit_exceeded"
        });
        let noise = LogNormal::new(0.0, 0.2)
            .map(|l| l.sample(&mut self.rng))
            .unwrap_or(1.0);
        let output_tokens = if error.is_some() {
            0
        } else {
            answer.output_tokens
        };
        let dur_s = if error.is_some() {
            self.rng.random_range(0.2..1.5)
        } else {
            (model.ttft_s + 0.0009 * uncached as f64 + model.per_token_s * output_tokens as f64)
                * noise
        };
        let dur_ms = (dur_s * 1000.0) as i64;
        let question = app::question(&mut self.rng, &docs[0]);
        let router_id = child(
            self,
            "llm-router",
            "route chat",
            SpanKind::Internal,
            &root_id,
            clock,
            dur_ms + 3,
            vec![
                s("app.route", route.path),
                s("router.selected_model", model.name),
                s("router.strategy", "weighted"),
            ],
            None,
        );
        let mut attrs = vec![
            s("gen_ai.operation.name", "chat"),
            s("gen_ai.provider.name", model.provider),
            s("gen_ai.request.model", model.name),
            f("gen_ai.request.temperature", 0.3),
            i("gen_ai.request.max_tokens", 512),
            s("gen_ai.conversation.id", conv),
            s("app.route", route.path),
            s("user.id", user),
            i("gen_ai.usage.input_tokens", input_tokens as i64),
            s("server.address", provider_host(model.provider)),
            s(
                "gen_ai.input.messages",
                json!([{"role": "user", "parts": [{"type": "text", "content": question}]}])
                    .to_string(),
            ),
        ];
        if let Some(c) = cached {
            attrs.push(i("gen_ai.usage.cache_read.input_tokens", c as i64));
        }
        let response_id = format!("resp-{}", hex(&self.id::<8>()));
        match error {
            Some(e) => attrs.push(s("error.type", e)),
            None => {
                let cost = (input_tokens as f64 * model.price.0
                    + output_tokens as f64 * model.price.1)
                    / 1e6;
                attrs.extend([
                    s("gen_ai.response.model", response_model),
                    s("gen_ai.response.id", response_id),
                    sa("gen_ai.response.finish_reasons", &["stop"]),
                    i("gen_ai.usage.output_tokens", output_tokens as i64),
                    f("gen_ai.usage.cost", cost),
                    s("gen_ai.output.messages", json!([{"role": "assistant", "parts": [{"type": "text", "content": answer.text}], "finish_reason": "stop"}]).to_string()),
                    s("gen_ai.retrieval.documents", json!(docs.iter().map(|d| json!({"id": d.id, "text": d.text})).collect::<Vec<_>>()).to_string()),
                    s("gen_ai.response.logprobs", answer.logprobs.to_string()),
                ]);
            }
        }
        let chat_start = clock + 1;
        let chat_id = child(
            self,
            "llm-router",
            &format!("chat {}", model.name),
            SpanKind::Client,
            &router_id,
            chat_start,
            dur_ms,
            attrs,
            error.map(|e| format!("{}: {e}", model.provider)).as_deref(),
        );
        clock += dur_ms + 3;
        let d = self.rng.random_range(5..25);
        child(
            self,
            "guardrail",
            "guardrail output",
            SpanKind::Internal,
            &root_id,
            clock,
            d,
            vec![
                s("guardrail.policy", "toxicity"),
                s("guardrail.decision", "allow"),
            ],
            None,
        );
        clock += d;
        // the root
        let http_status = if error.is_some() { 502 } else { 200 };
        spans.push((
            "chat-gateway",
            Span {
                trace_id: trace_id.clone(),
                span_id: root_id.clone(),
                name: "POST /v1/chat".into(),
                kind: SpanKind::Server as i32,
                start_time_unix_nano: ns(t_ms - 2),
                end_time_unix_nano: ns(clock + 2),
                attributes: vec![
                    s("http.request.method", "POST"),
                    s("http.route", "/v1/chat"),
                    s("app.route", route.path),
                    i("http.response.status_code", http_status),
                    s("user.id", user),
                    s("gen_ai.conversation.id", conv),
                    i("chat.turn", turn as i64 + 1),
                ],
                status: Some(if error.is_some() {
                    Status {
                        code: StatusCode::Error as i32,
                        message: "upstream model error".into(),
                    }
                } else {
                    Status::default()
                }),
                ..Default::default()
            },
        ));
        batch.spans.extend(spans);
        // logs correlated to the spans
        let log = |svc: &'static str,
                   at: i64,
                   sev: i32,
                   text: &str,
                   span: &[u8],
                   attrs: Vec<KeyValue>| {
            (
                svc,
                LogRecord {
                    time_unix_nano: ns(at),
                    observed_time_unix_nano: ns(at),
                    severity_number: sev,
                    severity_text: match sev {
                        17 => "ERROR",
                        13 => "WARN",
                        _ => "INFO",
                    }
                    .into(),
                    body: Some(opentelemetry_proto::tonic::common::v1::AnyValue {
                        value: Some(
                            opentelemetry_proto::tonic::common::v1::any_value::Value::StringValue(
                                text.to_owned(),
                            ),
                        ),
                    }),
                    attributes: attrs,
                    trace_id: trace_id.clone(),
                    span_id: span.to_vec(),
                    ..Default::default()
                },
            )
        };
        match error {
            Some(e) => batch.logs.push(log("llm-router", clock, 17,
                &format!("{} call failed: {e} (model {}, route {})", model.provider, model.name, route.path),
                &chat_id, vec![s("error.type", e), s("gen_ai.provider.name", model.provider)])),
            None => batch.logs.push(log("chat-gateway", clock + 1, 9,
                &format!("chat served route={} model={} input_tokens={input_tokens} output_tokens={output_tokens} latency_ms={dur_ms}", route.path, model.name),
                &root_id, vec![s("app.route", route.path), s("gen_ai.request.model", model.name)])),
        }
        if cached.is_some_and(|c| c * 4 < route.system_tokens + history) && history > 0 {
            batch.logs.push(log("llm-router", clock, 13,
                &format!("prompt cache mostly missed for conversation {conv} ({} of {} prefix tokens cached)",
                    cached.unwrap_or(0), route.system_tokens + history),
                &chat_id, vec![s("gen_ai.request.model", model.name)]));
        }
        // the minute of the model call (what the quality API buckets by)
        let minute = (chat_start - self.start_ms).div_euclid(60_000);
        self.minutes
            .entry(minute)
            .or_default()
            .calls
            .push(Observation {
                model: model_idx,
                response_model,
                duration_s: dur_s,
                input_tokens,
                output_tokens,
                error,
                hallucinated: error.is_none() && answer.hallucinated,
            });
        // What the next turn carries over: the user message and the answer, plus (after the
        // prompt change) the retrieved documents re-injected into the history.
        let mut carried = user_tokens + output_tokens;
        if tl.prompt_change(route.path, t_ms) {
            carried += docs_tokens + 120;
        }
        carried
    }
}

fn provider_host(provider: &str) -> &'static str {
    match provider {
        "openai" => "api.openai.com",
        "anthropic" => "api.anthropic.com",
        _ => "generativelanguage.googleapis.com",
    }
}

/// Lowercase hex.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
