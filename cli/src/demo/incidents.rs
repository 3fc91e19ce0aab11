//! The incidents injected into the demo's history, placed at fixed fractions of the timeline
//! (so every `--days` gets all four), their effects on the generator, and the ground truth
//! written next to the data (`demo-truth.json`, see docs/demo.md).

use serde::Serialize;

/// Minutes after the rollout before conversion reacts (the lag of the quality -> KPI edge).
pub const CONVERSION_LAG_MIN: i64 = 8;
/// Minutes after bad answers before CSAT reacts.
pub const CSAT_LAG_MIN: i64 = 12;

/// Kind of an incident.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IncidentKind {
    /// A new model version raises the hallucination index; conversion drops later.
    ModelRollout,
    /// The prompt cache degrades: hit ratio decays, p50 latency drifts, p99 stays under SLO.
    KvCacheDegradation,
    /// One provider fails a large share of calls.
    ProviderErrorBurst,
    /// A prompt change re-injects documents every turn: context expansion rises.
    PromptChange,
}

/// One injected incident.
#[derive(Clone, Debug, Serialize)]
pub struct Incident {
    /// Stable id.
    pub id: &'static str,
    /// Kind.
    pub kind: IncidentKind,
    /// Start, ms since the epoch.
    pub start_ms: i64,
    /// End (the effect is gone), ms since the epoch.
    pub end_ms: i64,
    /// What is affected (model, provider or route).
    pub target: &'static str,
    /// Human description.
    pub description: String,
    /// Series (PromQL) where the incident shows, as the demo's detectors watch them.
    pub signals: Vec<String>,
}

/// An expected causal edge from a quality series to a KPI.
#[derive(Clone, Debug, Serialize)]
pub struct ExpectedEdge {
    /// Quality series (PromQL).
    pub cause: String,
    /// KPI series (PromQL).
    pub effect: String,
    /// Lag in steps of `step_s`.
    pub lag_steps: usize,
    /// Step of the series, seconds.
    pub step_s: i64,
}

/// The ground truth of a demo run.
#[derive(Clone, Debug, Serialize)]
pub struct Truth {
    /// Seed of the generator.
    pub seed: u64,
    /// History start, ms.
    pub start_ms: i64,
    /// History end, ms.
    pub end_ms: i64,
    /// Incidents, by start.
    pub incidents: Vec<Incident>,
    /// Causal edges built into the KPI model.
    pub edges: Vec<ExpectedEdge>,
}

/// The incident timeline of a run.
#[derive(Clone, Debug)]
pub struct Timeline {
    /// The incidents.
    pub incidents: Vec<Incident>,
    /// History end, ms.
    pub end_ms: i64,
}

const MIN_MS: i64 = 60_000;

impl Timeline {
    /// Places the four incidents in `[start_ms, end_ms)`.
    pub fn new(start_ms: i64, end_ms: i64) -> Self {
        let span = (end_ms - start_ms).max(MIN_MS);
        let at = |f: f64| start_ms + ((span as f64 * f) as i64 / MIN_MS) * MIN_MS;
        let minutes = |m: i64| m * MIN_MS;
        let err = at(0.40);
        let kv = at(0.52);
        let roll = at(0.68);
        let prompt = at(0.84);
        let incidents = vec![
            Incident {
                id: "provider-error-burst",
                kind: IncidentKind::ProviderErrorBurst,
                start_ms: err,
                end_ms: err + minutes(15),
                target: "anthropic",
                description: "anthropic answers 529 overloaded_error to ~60% of calls for 15 min"
                    .into(),
                signals: vec![
                    "1 - sum(rate(gen_ai_client_operation_duration_seconds_count{gen_ai_provider_name=\"anthropic\",error_type=\"\"}[5m])) / sum(rate(gen_ai_client_operation_duration_seconds_count{gen_ai_provider_name=\"anthropic\"}[5m]))".into(),
                ],
            },
            Incident {
                id: "kv-cache-degradation",
                kind: IncidentKind::KvCacheDegradation,
                start_ms: kv,
                end_ms: kv + minutes(60),
                target: "gpt-4o",
                description: "gpt-4o prompt-cache hit ratio decays from ~0.6 towards 0.1 over 60 min; \
                              p50 latency drifts up while p99 stays under 10 s"
                    .into(),
                signals: vec![
                    "sightline_quality_cache_hit_ratio{model=\"gpt-4o\"}".into(),
                    "histogram_quantile(0.5, sum by (le) (rate(gen_ai_client_operation_duration_seconds_bucket{gen_ai_request_model=\"gpt-4o\"}[10m])))".into(),
                ],
            },
            Incident {
                id: "model-rollout",
                kind: IncidentKind::ModelRollout,
                start_ms: roll,
                end_ms: roll + minutes(45),
                target: "gpt-4o",
                description: format!(
                    "gpt-4o rolls out {}; ~75% of its answers contain made-up facts until the \
                     rollback 45 min later; conversion follows {CONVERSION_LAG_MIN} min later",
                    super::app::ROLLOUT_VERSION
                ),
                signals: vec!["sightline_quality_hallucination_index{model=\"gpt-4o\"}".into()],
            },
            Incident {
                id: "prompt-change",
                kind: IncidentKind::PromptChange,
                start_ms: prompt,
                end_ms: prompt + minutes(40),
                target: "/chat/support",
                description: "the /chat/support prompt re-injects all retrieved documents on \
                              every turn for 40 min: context expansion rises"
                    .into(),
                signals: vec!["sightline_quality_context_expansion{route=\"/chat/support\"}".into()],
            },
        ];
        Self { incidents, end_ms }
    }

    fn active(&self, kind: IncidentKind, t_ms: i64) -> Option<&Incident> {
        self.incidents
            .iter()
            .find(|i| i.kind == kind && i.start_ms <= t_ms && t_ms < i.end_ms)
    }

    /// Share of calls to `provider` that fail at `t_ms` beyond the base rate.
    pub fn error_rate(&self, provider: &str, t_ms: i64) -> f64 {
        match self.active(IncidentKind::ProviderErrorBurst, t_ms) {
            Some(i) if i.target == provider => 0.6,
            _ => 0.0,
        }
    }

    /// Prompt-cache hit ratio multiplier for `model` at `t_ms` (1 = healthy).
    pub fn cache_factor(&self, model: &str, t_ms: i64) -> f64 {
        match self.active(IncidentKind::KvCacheDegradation, t_ms) {
            Some(i) if i.target == model => {
                let minutes = (t_ms - i.start_ms) as f64 / MIN_MS as f64;
                0.15 + 0.85 * (-minutes / 12.0).exp()
            }
            _ => 1.0,
        }
    }

    /// The rolled-out version's extra hallucination share for `model`, if rolled out.
    pub fn rollout(&self, model: &str, t_ms: i64) -> Option<f64> {
        match self.active(IncidentKind::ModelRollout, t_ms) {
            Some(i) if i.target == model => Some(0.75),
            _ => None,
        }
    }

    /// Whether `route` re-injects documents every turn at `t_ms`.
    pub fn prompt_change(&self, route: &str, t_ms: i64) -> bool {
        self.active(IncidentKind::PromptChange, t_ms)
            .is_some_and(|i| i.target == route)
    }
}
