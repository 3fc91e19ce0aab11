//! LLM quality over time, computed from stored spans: the numbers behind `/api/v1/quality*`.
//!
//! * [`series`]: one metric per group per time bucket. Token entropy, hallucination index and
//!   low-confidence token counts are the columns computed at ingest ([`crate::otlp::genai`]),
//!   averaged per bucket by a `sightline_query::plan` aggregation; context expansion pairs
//!   consecutive turns of each conversation and pools them with
//!   [`sightline_detect::context::context_expansion`]; cache hit ratio is
//!   `sum(cache_read_input_tokens) / sum(input_tokens)` over the spans that report cache reads.
//! * [`tokens`]: the token-level view of one response from its stored
//!   `gen_ai.response.logprobs`, scored with [`sightline_detect::entropy`].
//! * [`values`]: the distinct values of a grouping field (for Grafana template variables).
//! * [`provenance`]: RAG provenance from the evaluation spans: answers that used a document,
//!   answers with unsupported sentences, usage per document and per retrieval.
//! * [`empty`]: why an answer is empty (what the range lacks) and where the docs say how to
//!   send it.
//!
//! Everything here reads through `sightline_query::plan` / `trace_by_id`; no scan loop of its
//! own.

pub mod empty;
pub mod provenance;
pub mod series;
pub mod tokens;

use sightline_query::QueryError;
use sightline_query::plan::{AggFunc, Aggregate, Cell, GroupBy, Plan, execute};
use sightline_storage::{
    Deadline, Matcher, Predicate, Signal, Store, TenantId, TimeRange, UnixNanos,
};

pub use series::{QualityMetric, QualityQuery, QualitySeries, quality_series};
pub use tokens::{TokenView, TokensView, response_tokens};

/// Why a quality question could not be answered.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QualityError {
    /// A parameter is missing or out of range (400).
    #[error("{0}")]
    BadRequest(String),
    /// The span (or its logprobs) is not stored (404).
    #[error("{0}")]
    NotFound(String),
    /// The stored logprobs could not be parsed or scored (422).
    #[error("stored logprobs cannot be scored: {0}")]
    Logprobs(String),
    /// The underlying plan failed.
    #[error(transparent)]
    Query(#[from] QueryError),
}

/// A grouping of the quality series (`by=`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GroupKey {
    /// `gen_ai.request.model`.
    Model,
    /// `gen_ai.provider.name`.
    Provider,
    /// `gen_ai.operation.name`.
    Operation,
    /// `service.name`.
    Service,
    /// The span attribute `app.route`.
    Route,
    /// Any span or resource attribute (`attr.<key>`).
    Attr(String),
}

impl GroupKey {
    /// Parses `model`, `provider`, `operation`, `service`, `route` or `attr.<key>`.
    pub fn parse(s: &str) -> Result<Self, QualityError> {
        Ok(match s {
            "model" => GroupKey::Model,
            "provider" => GroupKey::Provider,
            "operation" => GroupKey::Operation,
            "service" => GroupKey::Service,
            "route" => GroupKey::Route,
            other => match other.strip_prefix("attr.") {
                Some(k) if !k.is_empty() && k.len() <= 256 => GroupKey::Attr(k.to_owned()),
                _ => {
                    return Err(QualityError::BadRequest(format!(
                        "by: expected model, provider, operation, service, route or attr.<key>, got {other:?}"
                    )));
                }
            },
        })
    }

    /// The OpenTelemetry key it reads.
    pub fn key(&self) -> &str {
        match self {
            GroupKey::Model => "gen_ai.request.model",
            GroupKey::Provider => "gen_ai.provider.name",
            GroupKey::Operation => "gen_ai.operation.name",
            GroupKey::Service => "service.name",
            GroupKey::Route => "app.route",
            GroupKey::Attr(k) => k,
        }
    }

    /// The name used in answers (`model`, ..., `attr.<key>`).
    pub fn name(&self) -> String {
        match self {
            GroupKey::Model => "model".into(),
            GroupKey::Provider => "provider".into(),
            GroupKey::Operation => "operation".into(),
            GroupKey::Service => "service".into(),
            GroupKey::Route => "route".into(),
            GroupKey::Attr(k) => format!("attr.{k}"),
        }
    }
}

/// Equality filters on spans (`service=`, `model=`, `provider=`).
#[derive(Clone, Debug, Default)]
pub struct SpanFilters {
    /// `service.name`.
    pub service: Option<String>,
    /// `gen_ai.request.model` or `gen_ai.response.model` (a request for `gpt-4o` answered by
    /// `gpt-4o-2024-08-06` is found by either name).
    pub model: Option<String>,
    /// `gen_ai.provider.name`.
    pub provider: Option<String>,
}

impl SpanFilters {
    /// The storage predicates of the filters: an equality matcher each for `service` and
    /// `provider`, and for `model` a [`Predicate::AnyOf`] of the request and the response
    /// model.
    pub(crate) fn predicates(&self) -> Vec<Predicate> {
        let eq = |k: &str, v: &Option<String>| v.as_ref().map(|v| Matcher::eq(k, v.clone()));
        let model = self.model.as_ref().map(|v| {
            Predicate::AnyOf(vec![
                Matcher::eq("gen_ai.request.model", v.clone()),
                Matcher::eq("gen_ai.response.model", v.clone()),
            ])
        });
        [
            eq("service.name", &self.service).map(Predicate::Attr),
            model,
            eq("gen_ai.provider.name", &self.provider).map(Predicate::Attr),
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}

/// Distinct non-empty values of `key` among spans in `[start_ns, end_ns)`, sorted.
pub fn values(
    store: &Store,
    tenant: &TenantId,
    key: &GroupKey,
    start_ns: i64,
    end_ns: i64,
    deadline: &Deadline,
) -> Result<Vec<String>, QualityError> {
    let time = TimeRange::new(UnixNanos(start_ns), UnixNanos(end_ns))
        .map_err(|e| QualityError::BadRequest(e.to_string()))?;
    let mut plan = Plan::new(tenant.clone(), Signal::Spans, time);
    plan.deadline = deadline.clone();
    plan.group_by = vec![GroupBy::Key(key.key().to_owned())];
    plan.aggregates = vec![Aggregate {
        func: AggFunc::Count,
        field: None,
    }];
    let table = execute(store, &plan)?;
    let mut out: Vec<String> = table
        .rows
        .into_iter()
        .filter_map(|r| match r.into_iter().next() {
            Some(Cell::Str(s)) if !s.is_empty() => Some(s),
            _ => None,
        })
        .collect();
    out.sort();
    out.dedup();
    Ok(out)
}
