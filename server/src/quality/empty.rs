//! Why a quality answer is empty: what the range holds and what the metric needs that it
//! lacks, with the docs section that says how to send it.

use serde::Serialize;
use sightline_query::plan::{AggFunc, Aggregate, Cell, GroupBy, execute};
use sightline_storage::{Deadline, Store, TenantId, TimeRange, UnixNanos};

use super::QualityError;
use super::series::{QualityMetric, QualityQuery, cell_str};

/// The docs page on sending what the quality metrics read.
const DOCS: &str = "docs/llm-instrumentation.md";

/// The explanation of an empty answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EmptyReason {
    /// What is missing, in words.
    pub empty_reason: String,
    /// The docs section on how to send it.
    pub docs: String,
}

/// What `metric` reads from a span, and the docs anchor on sending it.
fn needs(metric: QualityMetric) -> (&'static str, &'static str) {
    match metric {
        QualityMetric::TokenEntropyMean | QualityMetric::LowConfidenceTokens => (
            "logprobs the server could read (gen_ai.response.logprobs, or OpenInference's output.value with logprobs); request logprobs from the model and record them",
            "logprobs",
        ),
        QualityMetric::HallucinationIndex => (
            "both an answer and retrieved documents (gen_ai.retrieval.documents or OpenInference retrieval.documents.*)",
            "documents",
        ),
        QualityMetric::CacheHitRatio => (
            "gen_ai.usage.cache_read.input_tokens with gen_ai.usage.input_tokens",
            "usage",
        ),
        QualityMetric::ContextExpansion => (
            "gen_ai.conversation.id with input and output token usage",
            "usage",
        ),
    }
}

/// Explains an empty answer to `q`: how many LLM spans (spans with `gen_ai.operation.name`)
/// the range and filters hold, and what none of them carries.
pub fn explain_empty(
    store: &Store,
    tenant: &TenantId,
    q: &QualityQuery,
    deadline: &Deadline,
) -> Result<EmptyReason, QualityError> {
    let time = TimeRange::new(UnixNanos(q.start_ns), UnixNanos(q.end_ns))
        .map_err(|e| QualityError::BadRequest(e.to_string()))?;
    let mut plan = q.plan(tenant, time);
    plan.deadline = deadline.clone();
    plan.group_by = vec![GroupBy::Key("gen_ai.operation.name".into())];
    plan.aggregates = vec![Aggregate {
        func: AggFunc::Count,
        field: None,
    }];
    let mut llm_spans = 0i64;
    let mut all_spans = 0i64;
    for row in execute(store, &plan)?.rows {
        if let [op, Cell::Int(n)] = row.as_slice() {
            all_spans += n;
            if !cell_str(op).is_empty() {
                llm_spans += n;
            }
        }
    }
    let (what, anchor) = needs(q.metric);
    let empty_reason = if llm_spans == 0 {
        format!(
            "no LLM spans (spans with gen_ai.operation.name) in the range and filters ({all_spans} spans in all); check the instrumentation and the time range"
        )
    } else {
        format!("{llm_spans} LLM spans in the range and filters, none with {what}",)
    };
    Ok(EmptyReason {
        empty_reason,
        docs: format!("{DOCS}#{anchor}"),
    })
}
