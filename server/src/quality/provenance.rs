//! RAG provenance from the stored evidence ([`crate::otlp::genai::evidence`], on evaluation
//! spans and on answer spans scored at ingest): which
//! answers used a document, which have unsupported sentences (with, per sentence, the
//! supporting passage or none), the same counted per model, route or prompt template, and how
//! much each document and each retrieval is used (chunks per retrieval, how many the answer
//! used, the retriever's score distribution).

use serde::Serialize;
use serde_json::Value;
use sightline_storage::columnar::spans_from_batch;
use sightline_storage::{
    AttrValue, Deadline, Matcher, Predicate, ScanRequest, Signal, SpanRecord, Store, TenantId,
    TimeRange, UnixNanos,
};

use super::{QualityError, SpanFilters};
use crate::otlp::genai::evidence::{
    HALLUCINATION_INDEX, NAME_KEY, PROMPT_TEMPLATE_KEY, ROUTE_KEY, TARGET_KEY,
};

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
    /// Only answers served on this route (`sightline.evaluation.route`).
    pub route: Option<String>,
    /// Only answers made from this prompt template (`sightline.evaluation.prompt_template`).
    pub prompt_template: Option<String>,
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
    /// The route the answer was served on.
    pub route: Option<String>,
    /// The prompt template it was made from.
    pub prompt_template: Option<String>,
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
    /// Per answer sentence: its supporting passage, or none.
    pub sentences: Vec<SentenceProvenance>,
}

/// One answer sentence and the passage that supports it.
#[derive(Clone, Debug, Serialize)]
pub struct SentenceProvenance {
    /// Character span of the sentence in the answer, `[start, end)`.
    pub start_char: usize,
    /// End of that span.
    pub end_char: usize,
    /// The sentence (its first 500 characters; empty in evidence written before the text was
    /// kept).
    pub text: String,
    /// Whether a passage supports it.
    pub supported: bool,
    /// Its words or numbers the best passage lacks (at most 8).
    pub missing: Vec<String>,
    /// The best passage (also for an unsupported sentence, when one came close).
    pub best: Option<PassageProvenance>,
}

/// A passage of the context, as the evidence names it.
#[derive(Clone, Debug, Serialize)]
pub struct PassageProvenance {
    /// Document id (`tool:<name>` for a tool result, `system_instructions`).
    pub document_id: String,
    /// `document`, `tool_result` or `system_instructions`.
    pub kind: Option<String>,
    /// Character span of the passage in the document, `[start, end)`.
    pub start_char: usize,
    /// End of that span.
    pub end_char: usize,
    /// The passage (its first 500 characters), when known.
    pub text: Option<String>,
    /// Share of the sentence's content words found in the passage.
    pub coverage: f64,
    /// The retriever's score of the document, when it gave one.
    pub score: Option<f64>,
}

/// Answers and unsupported sentences of one group (`by=`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct ProvenanceGroup {
    /// The group's value (`""`: not set).
    pub group: String,
    /// Scored answers.
    pub answers: u64,
    /// Of those, answers with at least one unsupported sentence.
    pub answers_with_unsupported_sentences: u64,
    /// Their share of the answers.
    pub unsupported_share: f64,
    /// Unsupported sentences, all answers together.
    pub unsupported_sentences: u64,
    /// Mean hallucination index.
    pub mean_hallucination_index: Option<f64>,
    #[serde(skip)]
    index_sum: f64,
    #[serde(skip)]
    index_n: u64,
}

/// What provenance groups are formed by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProvenanceBy {
    /// Request model (response model when none).
    Model,
    /// `sightline.evaluation.route`.
    Route,
    /// `sightline.evaluation.prompt_template`.
    PromptTemplate,
    /// `service.name`.
    Service,
    /// `gen_ai.provider.name`.
    Provider,
}

impl ProvenanceBy {
    /// Parses `model`, `route`, `prompt_template`, `service` or `provider`.
    pub fn parse(s: &str) -> Result<Self, QualityError> {
        Ok(match s {
            "model" => Self::Model,
            "route" => Self::Route,
            "prompt_template" => Self::PromptTemplate,
            "service" => Self::Service,
            "provider" => Self::Provider,
            other => {
                return Err(QualityError::BadRequest(format!(
                    "by: expected model, route, prompt_template, service or provider, got {other:?}"
                )));
            }
        })
    }
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
    /// Retrievals (retriever spans) in the answers' contexts.
    pub retrievals: u64,
    /// Mean chunks (documents) per retrieval.
    pub mean_chunks_per_retrieval: f64,
    /// Mean chunks per retrieval that support a sentence of the answer.
    pub mean_chunks_used_per_retrieval: f64,
    /// The retriever's scores of every chunk that has one.
    pub scores: ScoreDistribution,
    /// The scores of the chunks that supported a sentence.
    pub used_scores: ScoreDistribution,
    /// The scores of the chunks that supported none.
    pub unused_scores: ScoreDistribution,
}

/// Count, mean and quantiles of retriever scores.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ScoreDistribution {
    /// Chunks with a score.
    pub count: u64,
    /// Smallest.
    pub min: Option<f64>,
    /// 25th percentile.
    pub p25: Option<f64>,
    /// Median.
    pub median: Option<f64>,
    /// 75th percentile.
    pub p75: Option<f64>,
    /// Largest.
    pub max: Option<f64>,
    /// Mean.
    pub mean: Option<f64>,
}

/// Most scores one distribution keeps for its quantiles (a uniform sample beyond).
const MAX_SCORES: usize = 100_000;

impl ScoreDistribution {
    /// The distribution of `scores` (sorted in place; non-finite values never reach here).
    fn of(scores: &mut [f64], count: u64, sum: f64) -> Self {
        scores.sort_by(f64::total_cmp);
        let q = |p: f64| -> Option<f64> {
            if scores.is_empty() {
                return None;
            }
            // Linear interpolation between closest ranks (numpy's default).
            let pos = p * (scores.len() - 1) as f64;
            let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
            Some(scores[lo] + (scores[hi] - scores[lo]) * (pos - lo as f64))
        };
        Self {
            count,
            min: scores.first().copied(),
            p25: q(0.25),
            median: q(0.5),
            p75: q(0.75),
            max: scores.last().copied(),
            mean: (count > 0).then(|| sum / count as f64),
        }
    }
}

/// Scores gathered for a [`ScoreDistribution`]: every score counts in the count and the mean,
/// the quantiles come from a uniform sample of at most [`MAX_SCORES`].
#[derive(Default)]
struct Scores {
    kept: Vec<f64>,
    count: u64,
    sum: f64,
}

impl Scores {
    fn add(&mut self, s: f64) {
        self.count += 1;
        self.sum += s;
        if self.kept.len() < MAX_SCORES {
            self.kept.push(s);
            return;
        }
        // Reservoir sampling (Algorithm R) with a deterministic hash for the draw.
        let j = xxhash_rust::xxh3::xxh3_64(&self.count.to_le_bytes()) % self.count;
        if let Some(slot) = usize::try_from(j).ok().and_then(|j| self.kept.get_mut(j)) {
            *slot = s;
        }
    }

    fn finish(mut self) -> ScoreDistribution {
        ScoreDistribution::of(&mut self.kept, self.count, self.sum)
    }
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

fn str_attr(s: &SpanRecord, key: &str) -> Option<String> {
    match attr(s, key) {
        Some(AttrValue::Str(v)) => Some(v.clone()),
        _ => None,
    }
}

fn model_of(e: &SpanRecord) -> Option<String> {
    e.gen_ai
        .request_model
        .clone()
        .or_else(|| e.gen_ai.response_model.clone())
}

fn unsupported_of(e: &SpanRecord) -> i64 {
    match attr(e, "sightline.evaluation.unsupported_sentences") {
        Some(AttrValue::Int(n)) => *n,
        _ => 0,
    }
}

/// An evaluation's retrieved documents and unsupported sentences, when it passes `q`'s
/// `document` and `unsupported` filters.
fn selected(e: &SpanRecord, q: &ProvenanceQuery) -> Option<(Vec<String>, i64)> {
    let documents = strs(attr(e, "sightline.evaluation.documents"));
    if q.document.as_ref().is_some_and(|d| !documents.contains(d)) {
        return None;
    }
    let unsupported = unsupported_of(e);
    if q.unsupported_only && unsupported == 0 {
        return None;
    }
    Some((documents, unsupported))
}

/// The per-sentence provenance of the evidence JSON.
fn sentences(evidence: Option<&AttrValue>) -> Vec<SentenceProvenance> {
    let Some(AttrValue::Str(text)) = evidence else {
        return Vec::new();
    };
    let Ok(Value::Array(items)) = serde_json::from_str::<Value>(text) else {
        return Vec::new();
    };
    let idx = |v: &Value, k: &str| v[k].as_u64().map_or(0, |n| n as usize);
    items
        .iter()
        .map(|s| SentenceProvenance {
            start_char: idx(s, "start_char"),
            end_char: idx(s, "end_char"),
            text: s["text"].as_str().unwrap_or_default().to_owned(),
            supported: s["supported"] == true,
            missing: s["missing"]
                .as_array()
                .map(|m| {
                    m.iter()
                        .filter_map(|u| u.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default(),
            best: s["best"]["document_id"]
                .as_str()
                .map(|d| PassageProvenance {
                    document_id: d.to_owned(),
                    kind: s["best"]["kind"].as_str().map(str::to_owned),
                    start_char: idx(&s["best"], "start_char"),
                    end_char: idx(&s["best"], "end_char"),
                    text: s["best"]["text"].as_str().map(str::to_owned),
                    coverage: s["best"]["coverage"].as_f64().unwrap_or(0.0),
                    score: s["best"]["score"].as_f64(),
                }),
        })
        .collect()
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
    // Evaluation spans and answer spans scored at ingest both hold the evidence.
    req.predicates
        .push(Predicate::Attr(Matcher::eq(NAME_KEY, HALLUCINATION_INDEX)));
    for (key, value) in [
        (ROUTE_KEY, &q.route),
        (PROMPT_TEMPLATE_KEY, &q.prompt_template),
    ] {
        if let Some(v) = value {
            req.predicates
                .push(Predicate::Attr(Matcher::eq(key, v.clone())));
        }
    }
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
        let Some((documents, unsupported)) = selected(e, q) else {
            return;
        };
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
            model: model_of(e),
            route: str_attr(e, ROUTE_KEY),
            prompt_template: str_attr(e, PROMPT_TEMPLATE_KEY),
            sentences: sentences(attr(e, "sightline.evaluation.evidence")),
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
    let (mut chunks, mut chunks_used) = (0u64, 0u64);
    let (mut all, mut used, mut unused) = (Scores::default(), Scores::default(), Scores::default());
    each_evaluation(store, tenant, q, deadline, |e| {
        if let Some(AttrValue::Str(r)) = attr(e, "sightline.evaluation.retrievals")
            && let Ok(Value::Array(retrievals)) = serde_json::from_str::<Value>(r)
        {
            for r in &retrievals {
                sum.retrievals += 1;
                for d in r["documents"]
                    .as_array()
                    .map(Vec::as_slice)
                    .unwrap_or_default()
                {
                    chunks += 1;
                    let was_used = d["used"] == true;
                    chunks_used += u64::from(was_used);
                    if let Some(s) = d["score"].as_f64().filter(|s| s.is_finite()) {
                        all.add(s);
                        if was_used { used.add(s) } else { unused.add(s) }
                    }
                }
            }
        }
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
    if sum.retrievals > 0 {
        sum.mean_chunks_per_retrieval = chunks as f64 / sum.retrievals as f64;
        sum.mean_chunks_used_per_retrieval = chunks_used as f64 / sum.retrievals as f64;
    }
    sum.scores = all.finish();
    sum.used_scores = used.finish();
    sum.unused_scores = unused.finish();
    let mut out: Vec<DocumentUsage> = usage.into_values().collect();
    out.sort_by(|a, b| {
        b.answers
            .cmp(&a.answers)
            .then(a.document_id.cmp(&b.document_id))
    });
    out.truncate(q.limit.min(MAX_ANSWERS));
    Ok((out, sum))
}

/// Answers and unsupported sentences of `q`'s answers per group of `by`, most answers first.
pub fn groups(
    store: &Store,
    tenant: &TenantId,
    q: &ProvenanceQuery,
    by: ProvenanceBy,
    deadline: &Deadline,
) -> Result<Vec<ProvenanceGroup>, QualityError> {
    let mut groups: std::collections::HashMap<String, ProvenanceGroup> =
        std::collections::HashMap::new();
    each_evaluation(store, tenant, q, deadline, |e| {
        let Some((_, unsupported)) = selected(e, q) else {
            return;
        };
        let key = match by {
            ProvenanceBy::Model => model_of(e),
            ProvenanceBy::Route => str_attr(e, ROUTE_KEY),
            ProvenanceBy::PromptTemplate => str_attr(e, PROMPT_TEMPLATE_KEY),
            ProvenanceBy::Service => Some(e.service_name.clone()),
            ProvenanceBy::Provider => e.gen_ai.provider_name.clone(),
        }
        .unwrap_or_default();
        let g = groups
            .entry(key.clone())
            .or_insert_with(|| ProvenanceGroup {
                group: key,
                ..ProvenanceGroup::default()
            });
        g.answers += 1;
        if unsupported > 0 {
            g.answers_with_unsupported_sentences += 1;
            g.unsupported_sentences += unsupported as u64;
        }
        if let Some(h) = e.quality.hallucination_index.filter(|h| h.is_finite()) {
            g.index_sum += h;
            g.index_n += 1;
        }
    })?;
    let mut out: Vec<ProvenanceGroup> = groups
        .into_values()
        .map(|mut g| {
            g.unsupported_share = g.answers_with_unsupported_sentences as f64 / g.answers as f64;
            g.mean_hallucination_index = (g.index_n > 0).then(|| g.index_sum / g.index_n as f64);
            g
        })
        .collect();
    out.sort_by(|a, b| b.answers.cmp(&a.answers).then(a.group.cmp(&b.group)));
    out.truncate(q.limit.min(MAX_ANSWERS));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn score_distribution_matches_numpy_percentiles() {
        let mut s = Scores::default();
        for x in [0.9, 0.1, 0.5, 0.3, 0.7] {
            s.add(x);
        }
        let d = s.finish();
        assert_eq!(d.count, 5);
        assert_eq!((d.min, d.max), (Some(0.1), Some(0.9)));
        // numpy.percentile([0.1, 0.3, 0.5, 0.7, 0.9], [25, 50, 75]) = [0.3, 0.5, 0.7]
        let close = |a: Option<f64>, b: f64| (a.unwrap_or(f64::NAN) - b).abs() < 1e-12;
        assert!(close(d.p25, 0.3) && close(d.median, 0.5) && close(d.p75, 0.7));
        assert!(close(d.mean, 0.5));
        let empty = Scores::default().finish();
        assert_eq!((empty.count, empty.median, empty.mean), (0, None, None));
        // Past the cap, every score still counts in the mean and the count.
        let mut big = Scores::default();
        for i in 0..(MAX_SCORES as u64 * 3) {
            big.add((i % 10) as f64);
        }
        assert!(big.kept.len() <= MAX_SCORES);
        let d = big.finish();
        assert_eq!(d.count, MAX_SCORES as u64 * 3);
        assert!(close(d.mean, 4.5));
    }

    #[test]
    fn evidence_becomes_sentences() {
        let ev = AttrValue::Str(
            r#"[{"sentence_index":0,"start_char":0,"end_char":36,"supported":true,"best":{"document_id":"eiffel","kind":"document","start_char":0,"end_char":35,"coverage":1.0,"score":0.91}},{"sentence_index":1,"start_char":37,"end_char":60,"supported":false,"best":null}]"#.into(),
        );
        let s = sentences(Some(&ev));
        assert_eq!(s.len(), 2);
        let b = s[0].best.as_ref().unwrap_or_else(|| panic!("best"));
        assert_eq!((b.document_id.as_str(), b.score), ("eiffel", Some(0.91)));
        assert!(!s[1].supported && s[1].best.is_none());
        assert_eq!((s[1].start_char, s[1].end_char), (37, 60));
        assert!(ProvenanceBy::parse("prompt_template").is_ok());
        assert!(ProvenanceBy::parse("route ").is_err());
    }
}
