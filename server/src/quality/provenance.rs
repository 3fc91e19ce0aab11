//! RAG provenance from the stored evaluation spans ([`crate::assembly::evaluate`]): which
//! answers used a document, which have unsupported sentences, and how much each document and
//! each retrieval is used.

use serde::Serialize;
use serde_json::Value;
use sightline_storage::columnar::spans_from_batch;
use sightline_storage::{
    AttrValue, Deadline, Matcher, Predicate, ScanRequest, Signal, SpanRecord, Store, TenantId,
    TimeRange, UnixNanos,
};

use super::{QualityError, SpanFilters};
use crate::assembly::evaluate::{EVALUATION_SPAN, TARGET_KEY};

/// Most evaluation spans one provenance question reads.
pub const MAX_EVALUATIONS: usize = 200_000;
/// Most answers listed.
pub const MAX_ANSWERS: usize = 10_000;

/// What to read: evaluations of answers in `[start_ns, end_ns)` matching the filters.
#[derive(Clone, Debug)]
pub struct ProvenanceQuery {
    /// Start, Unix nanoseconds (inclusive).
    pub start_ns: i64,
    /// End, Unix nanoseconds (exclusive).
    pub end_ns: i64,
    /// Service, model and provider filters.
    pub filters: SpanFilters,
    /// Only answers whose context held this document.
    pub document: Option<String>,
    /// Only answers with at least one unsupported sentence.
    pub unsupported_only: bool,
    /// Most answers listed (at most [`MAX_ANSWERS`]).
    pub limit: usize,
}

/// One scored answer.
#[derive(Clone, Debug, Serialize)]
pub struct AnswerProvenance {
    /// Trace id (hex).
    pub trace_id: String,
    /// The answer's span id (hex).
    pub span_id: String,
    /// When the answer ended, Unix milliseconds.
    pub time_ms: i64,
    /// `service.name`.
    pub service: String,
    /// Request model (response model when none).
    pub model: Option<String>,
    /// Hallucination index.
    pub hallucination_index: Option<f64>,
    /// `low`, `medium` or `high`.
    pub label: Option<String>,
    /// Ids of the context documents.
    pub documents: Vec<String>,
    /// Ids of the documents that support a sentence.
    pub supporting_documents: Vec<String>,
    /// Sentences no document supports.
    pub unsupported_sentences: i64,
    /// With a `document` question: sentences that document is the supporting passage of.
    pub sentences_supported_by_document: Option<usize>,
}

/// How much one document is used.
#[derive(Clone, Debug, Default, Serialize)]
pub struct DocumentUsage {
    /// Document id.
    pub document_id: String,
    /// Answers whose context held it.
    pub answers: u64,
    /// Of those, answers it supports at least one sentence of.
    pub supporting_answers: u64,
    /// Answer sentences it is the supporting passage of.
    pub supported_sentences: u64,
    /// Last answer that used it, Unix milliseconds.
    pub last_used_ms: i64,
}

/// Per-retrieval measures over the scored answers.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RetrievalSummary {
    /// Scored answers.
    pub answers: u64,
    /// Mean number of context documents per answer.
    pub mean_documents: f64,
    /// Mean number of documents that support a sentence, per answer.
    pub mean_supporting_documents: f64,
    /// Share of context documents that support a sentence.
    pub used_share: f64,
    /// Answers with at least one unsupported sentence.
    pub answers_with_unsupported_sentences: u64,
}

fn attr<'a>(s: &'a SpanRecord, key: &str) -> Option<&'a AttrValue> {
    s.attributes.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

fn strs(v: Option<&AttrValue>) -> Vec<String> {
    match v {
        Some(AttrValue::Array(items)) => items
            .iter()
            .filter_map(|i| match i {
                AttrValue::Str(s) => Some(s.clone()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Sentences whose supporting passage comes from `document`, from the evidence JSON.
fn supported_by(evidence: Option<&AttrValue>, document: &str) -> usize {
    let Some(AttrValue::Str(text)) = evidence else {
        return 0;
    };
    let Ok(Value::Array(sentences)) = serde_json::from_str::<Value>(text) else {
        return 0;
    };
    sentences
        .iter()
        .filter(|s| s["supported"] == true && s["best"]["document_id"].as_str() == Some(document))
        .count()
}

/// Calls `f` with every evaluation span of the range and filters, oldest first.
fn each_evaluation(
    store: &Store,
    tenant: &TenantId,
    q: &ProvenanceQuery,
    deadline: &Deadline,
    mut f: impl FnMut(&SpanRecord),
) -> Result<(), QualityError> {
    let time = TimeRange::new(UnixNanos(q.start_ns), UnixNanos(q.end_ns))
        .map_err(|e| QualityError::BadRequest(e.to_string()))?;
    let mut req = ScanRequest::new(tenant.clone(), Signal::Spans, time).until(deadline.clone());
    req.predicates = q.filters.predicates();
    req.predicates
        .push(Predicate::Attr(Matcher::eq("name", EVALUATION_SPAN)));
    let res = store
        .scan(&req)
        .map_err(|e| QualityError::Query(e.into()))?;
    // Refused before any row is decoded.
    let n: usize = res.batches.iter().map(|b| b.num_rows()).sum();
    if n > MAX_EVALUATIONS {
        return Err(QualityError::BadRequest(format!(
            "{n} scored answers in the range, at most {MAX_EVALUATIONS}; shorten it"
        )));
    }
    for b in &res.batches {
        deadline
            .check()
            .map_err(|e| QualityError::Query(e.into()))?;
        for s in spans_from_batch(b).map_err(|e| QualityError::Query(e.into()))? {
            f(&s);
        }
    }
    Ok(())
}

/// The scored answers of `q`, newest first.
pub fn answers(
    store: &Store,
    tenant: &TenantId,
    q: &ProvenanceQuery,
    deadline: &Deadline,
) -> Result<Vec<AnswerProvenance>, QualityError> {
    let mut out = Vec::new();
    each_evaluation(store, tenant, q, deadline, |e| {
        let documents = strs(attr(e, "sightline.evaluation.documents"));
        if let Some(d) = &q.document
            && !documents.contains(d)
        {
            return;
        }
        let unsupported = match attr(e, "sightline.evaluation.unsupported_sentences") {
            Some(AttrValue::Int(n)) => *n,
            _ => 0,
        };
        if q.unsupported_only && unsupported == 0 {
            return;
        }
        let label = match attr(e, "sightline.evaluation.label") {
            Some(AttrValue::Str(s)) => Some(s.clone()),
            _ => None,
        };
        let span_id = match attr(e, TARGET_KEY) {
            Some(AttrValue::Str(s)) => s.clone(),
            _ => String::new(),
        };
        out.push(AnswerProvenance {
            trace_id: e.trace_id.to_hex(),
            span_id,
            time_ms: e.end.0.div_euclid(1_000_000),
            service: e.service_name.clone(),
            model: e
                .gen_ai
                .request_model
                .clone()
                .or_else(|| e.gen_ai.response_model.clone()),
            hallucination_index: e.quality.hallucination_index,
            label,
            supporting_documents: strs(attr(e, "sightline.evaluation.supporting_documents")),
            documents,
            unsupported_sentences: unsupported,
            sentences_supported_by_document: q
                .document
                .as_ref()
                .map(|d| supported_by(attr(e, "sightline.evaluation.evidence"), d)),
        });
    })?;
    out.sort_by(|a, b| b.time_ms.cmp(&a.time_ms).then(a.span_id.cmp(&b.span_id)));
    out.truncate(q.limit.min(MAX_ANSWERS));
    Ok(out)
}

/// Usage per document (most used first) and per-retrieval measures over `q`'s answers.
pub fn documents(
    store: &Store,
    tenant: &TenantId,
    q: &ProvenanceQuery,
    deadline: &Deadline,
) -> Result<(Vec<DocumentUsage>, RetrievalSummary), QualityError> {
    let mut usage: std::collections::HashMap<String, DocumentUsage> =
        std::collections::HashMap::new();
    let mut sum = RetrievalSummary::default();
    let (mut docs_total, mut supporting_total) = (0u64, 0u64);
    each_evaluation(store, tenant, q, deadline, |e| {
        let documents = strs(attr(e, "sightline.evaluation.documents"));
        let supporting = strs(attr(e, "sightline.evaluation.supporting_documents"));
        let evidence = attr(e, "sightline.evaluation.evidence");
        let time_ms = e.end.0.div_euclid(1_000_000);
        sum.answers += 1;
        docs_total += documents.len() as u64;
        supporting_total += supporting.len() as u64;
        if matches!(attr(e, "sightline.evaluation.unsupported_sentences"), Some(AttrValue::Int(n)) if *n > 0)
        {
            sum.answers_with_unsupported_sentences += 1;
        }
        for d in &documents {
            let u = usage.entry(d.clone()).or_insert_with(|| DocumentUsage {
                document_id: d.clone(),
                ..DocumentUsage::default()
            });
            u.answers += 1;
            u.last_used_ms = u.last_used_ms.max(time_ms);
            if supporting.contains(d) {
                u.supporting_answers += 1;
                u.supported_sentences += supported_by(evidence, d) as u64;
            }
        }
    })?;
    if sum.answers > 0 {
        sum.mean_documents = docs_total as f64 / sum.answers as f64;
        sum.mean_supporting_documents = supporting_total as f64 / sum.answers as f64;
    }
    if docs_total > 0 {
        sum.used_share = supporting_total as f64 / docs_total as f64;
    }
    let mut out: Vec<DocumentUsage> = usage.into_values().collect();
    out.sort_by(|a, b| {
        b.answers
            .cmp(&a.answers)
            .then(a.document_id.cmp(&b.document_id))
    });
    out.truncate(q.limit.min(MAX_ANSWERS));
    Ok((out, sum))
}
