//! The token-level view of one response (`GET /api/v1/quality/tokens`): the stored
//! `gen_ai.response.logprobs` of a span (attribute or event, the forms ingest accepts), each
//! token with its log-probability, its entropy ([`token_uncertainty`]) and its alternatives.

use serde::Serialize;
use sightline_detect::entropy::{UncertaintyOptions, token_uncertainty};
use sightline_detect::logprobs::parse_logprobs;
use sightline_query::traces::trace::trace_by_id;
use sightline_storage::{Deadline, SpanId, Store, TenantId, TraceId};

use super::QualityError;
use crate::otlp::genai::logprobs_text;

/// Most tokens returned for one response.
pub const MAX_TOKENS: usize = 100_000;

/// One alternative token.
#[derive(Clone, Debug, Serialize)]
pub struct TopToken {
    /// Token text.
    pub token: String,
    /// Natural-log probability.
    pub logprob: f64,
}

/// One generated token.
#[derive(Clone, Debug, Serialize)]
pub struct TokenView {
    /// Token text.
    pub token: String,
    /// Natural-log probability of the sampled token.
    pub logprob: f64,
    /// Entropy at this position in nats (`null` without alternatives).
    pub entropy: Option<f64>,
    /// The alternatives as stored.
    pub top: Vec<TopToken>,
}

/// The answer of `/api/v1/quality/tokens`.
#[derive(Clone, Debug, Serialize)]
pub struct TokensView {
    /// Trace id (hex).
    pub trace_id: String,
    /// Span id (hex).
    pub span_id: String,
    /// `gen_ai.request.model` (or the response model when no request model is stored).
    pub model: Option<String>,
    /// Mean token entropy computed at ingest.
    pub entropy_mean: Option<f64>,
    /// Hallucination index computed at ingest.
    pub hallucination_index: Option<f64>,
    /// The tokens, in order.
    pub tokens: Vec<TokenView>,
}

/// The tokens of span `span_id` of trace `trace_id` (both hex).
pub fn response_tokens(
    store: &Store,
    tenant: &TenantId,
    trace_id: &str,
    span_id: &str,
    deadline: &Deadline,
) -> Result<TokensView, QualityError> {
    let tid = TraceId::from_hex(trace_id)
        .map_err(|e| QualityError::BadRequest(format!("trace_id: {e}")))?;
    let sid =
        SpanId::from_hex(span_id).map_err(|e| QualityError::BadRequest(format!("span_id: {e}")))?;
    let view = trace_by_id(store, tenant, tid, deadline)?
        .ok_or_else(|| QualityError::NotFound(format!("trace {trace_id} not found")))?;
    let span = view
        .spans
        .iter()
        .find(|s| s.span_id == sid)
        .ok_or_else(|| QualityError::NotFound(format!("span {span_id} not in trace {trace_id}")))?;
    let text = logprobs_text(&span.attributes, &span.events).ok_or_else(|| {
        QualityError::NotFound(format!(
            "span {span_id} carries no gen_ai.response.logprobs"
        ))
    })?;
    let parsed = parse_logprobs(&text).map_err(|e| QualityError::Logprobs(e.to_string()))?;
    if parsed.content.len() > MAX_TOKENS {
        return Err(QualityError::Logprobs(format!(
            "{} tokens; at most {MAX_TOKENS} are shown",
            parsed.content.len()
        )));
    }
    let opts = UncertaintyOptions::default();
    let mut tokens = Vec::with_capacity(parsed.content.len());
    let mut top = Vec::new();
    for (i, t) in parsed.content.iter().enumerate() {
        top.clear();
        top.extend(t.top_logprobs.iter().map(|a| a.logprob));
        let u = token_uncertainty(i, t.logprob, &top, t.sampled_in_top(), &opts)
            .map_err(|e| QualityError::Logprobs(e.to_string()))?;
        tokens.push(TokenView {
            token: t.token.clone(),
            logprob: t.logprob,
            entropy: u.entropy,
            top: t
                .top_logprobs
                .iter()
                .map(|a| TopToken {
                    token: a.token.clone(),
                    logprob: a.logprob,
                })
                .collect(),
        });
    }
    Ok(TokensView {
        trace_id: tid.to_hex(),
        span_id: sid.to_hex(),
        model: span
            .gen_ai
            .request_model
            .clone()
            .or_else(|| span.gen_ai.response_model.clone()),
        entropy_mean: span.quality.entropy_mean,
        hallucination_index: span.quality.hallucination_index,
        tokens,
    })
}
