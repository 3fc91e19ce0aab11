//! Hallucination index in `[0, 1]`: token uncertainty combined with grounding of the answer in
//! the retrieved context carried on the trace, emitted as a `gen_ai.evaluation.result` record
//! with per-sentence evidence.
//!
//! ## Formula
//!
//! `index = sigmoid(z)`, `z = bias + sum_i w_i f_i`, where every feature `f_i` is in `[0, 1]`:
//!
//! | feature | source | default weight |
//! |---|---|---|
//! | `unsupported_share` | weighted share of answer units missing from their sentence's best passage ([`grounding`]) | 2.5 |
//! | `worst_sentence_gap` | `1 -` coverage of the least supported sentence | 2.0 |
//! | `number_gap` | share of numbers missing from their sentence's best passage | 3.0 |
//! | `entity_gap` | share of entities missing from their sentence's best passage | 2.0 |
//! | `novelty` | weighted share of units found in no document at all | 1.0 |
//! | `entropy` | mean token entropy / `ln(k+1)` ([`crate::entropy`]) | 0.5 |
//! | `entropy_spike` | (max - mean) token entropy / `ln(k+1)`: a localised burst of uncertainty | 2.0 |
//! | `low_confidence` | share of tokens with `p < low_confidence_prob` | 1.0 |
//!
//! with `bias = -4.5`. The logistic form follows the usual practice of combining detector
//! signals by a linear score (e.g. the feature-based detectors of Manakul et al. 2023 and
//! Zhou et al. 2021); the weights were set by hand and then adjusted once on the generated
//! *development* split (seed [`crate::eval::DEV_SEED`]), never on the evaluation seeds: on
//! that split the uncertainty features add little to grounding (AUROC 0.922 without them,
//! 0.940 with the final weights, mostly from the entity and number weights), because in
//! the generated data, as in practice, confident fabrications are common. When
//! logprobs are absent the uncertainty features take their `neutral` value (0.25) and the
//! record says so; without documents, the grounding features are 1 (nothing is supported).
//!
//! Labels: `low` below `medium` (0.35), `high` from `high` (0.65), `medium` between.

pub mod grounding;
mod text;

use crate::entropy::{ResponseUncertainty, UncertaintyOptions, response_uncertainty};
use crate::error::{DetectError, Result};
use crate::logprobs::ChoiceLogprobs;
pub use grounding::{Grounding, RetrievedDocument, SentenceEvidence, Support, TextSpan};
use serde::{Deserialize, Serialize};

/// Largest answer accepted, in bytes (a limit on work per request).
pub const MAX_ANSWER_BYTES: usize = 1 << 20;

/// Largest product of the answer's and all documents' lengths in bytes. Grounding compares
/// every answer sentence with every document sentence, so its time grows with this product:
/// at the limit (16 KiB of answer against 256 KiB of documents, or 4 KiB against 1 MiB) one
/// index takes about a second on one core.
pub const MAX_GROUNDING_WORK: u64 = 1 << 32;

/// Refuses inputs whose grounding would exceed [`MAX_ANSWER_BYTES`] or
/// [`MAX_GROUNDING_WORK`]; [`hallucination_index_parts`] checks this first, and servers call it
/// to answer "too large" before doing any work.
pub fn check_work(answer: &str, documents: &[RetrievedDocument]) -> Result<()> {
    if answer.len() > MAX_ANSWER_BYTES {
        return Err(DetectError::InvalidParameter {
            name: "answer",
            reason: format!("longer than {MAX_ANSWER_BYTES} bytes"),
        });
    }
    let docs: u64 = documents.iter().map(|d| d.text.len() as u64).sum();
    let work = (answer.len() as u64).saturating_mul(docs);
    if work > MAX_GROUNDING_WORK {
        return Err(DetectError::InvalidParameter {
            name: "documents",
            reason: format!(
                "{} answer bytes x {docs} document bytes is over the limit of {MAX_GROUNDING_WORK} \
                 (shorten the answer or send fewer documents)",
                answer.len()
            ),
        });
    }
    Ok(())
}

/// Weights of the index (see the module table).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct IndexWeights {
    pub bias: f64,
    pub unsupported_share: f64,
    pub worst_sentence_gap: f64,
    pub number_gap: f64,
    pub entity_gap: f64,
    pub novelty: f64,
    pub entropy: f64,
    pub entropy_spike: f64,
    pub low_confidence: f64,
    /// Value of each uncertainty feature when no logprobs are available.
    pub neutral: f64,
}

impl Default for IndexWeights {
    fn default() -> Self {
        Self {
            bias: -4.5,
            unsupported_share: 2.5,
            worst_sentence_gap: 2.0,
            number_gap: 3.0,
            entity_gap: 2.0,
            novelty: 1.0,
            entropy: 0.5,
            entropy_spike: 2.0,
            low_confidence: 1.0,
            neutral: 0.25,
        }
    }
}

/// Options for [`hallucination_index`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HallucinationOptions {
    /// Coverage at which a sentence counts as supported.
    pub support_threshold: f64,
    /// Index at which the label becomes `medium`.
    pub medium: f64,
    /// Index at which the label becomes `high`.
    pub high: f64,
    /// Token-uncertainty options.
    pub uncertainty: UncertaintyOptions,
    /// Index weights.
    pub weights: IndexWeights,
}

impl Default for HallucinationOptions {
    fn default() -> Self {
        Self {
            support_threshold: 0.6,
            medium: 0.35,
            high: 0.65,
            uncertainty: UncertaintyOptions::default(),
            weights: IndexWeights::default(),
        }
    }
}

/// Everything needed to score one answer: `{"answer", "documents": [{"id", "text"}],
/// "logprobs": {"content": [...]}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HallucinationRequest {
    /// The model's answer text.
    pub answer: String,
    /// Retrieved documents given to the model.
    #[serde(default)]
    pub documents: Vec<RetrievedDocument>,
    /// The answer's logprobs, when the trace carries them.
    #[serde(default)]
    pub logprobs: Option<ChoiceLogprobs>,
    /// Options.
    #[serde(default)]
    pub options: HallucinationOptions,
}

/// Low / medium / high.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RiskLabel {
    /// Below `medium`.
    Low,
    /// Between.
    Medium,
    /// At or above `high`.
    High,
}

/// A `gen_ai.evaluation.result` event body (OpenTelemetry GenAI semantic conventions).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvaluationResult {
    /// Always `hallucination_index`.
    #[serde(rename = "gen_ai.evaluation.name")]
    pub name: String,
    /// The index.
    #[serde(rename = "gen_ai.evaluation.score.value")]
    pub score_value: f64,
    /// The label.
    #[serde(rename = "gen_ai.evaluation.score.label")]
    pub score_label: RiskLabel,
    /// One-line human explanation.
    #[serde(rename = "gen_ai.evaluation.explanation")]
    pub explanation: String,
}

/// The features that entered the index, each in `[0, 1]`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct IndexFeatures {
    pub unsupported_share: f64,
    pub worst_sentence_gap: f64,
    pub number_gap: f64,
    pub entity_gap: f64,
    pub novelty: f64,
    pub entropy: f64,
    pub entropy_spike: f64,
    pub low_confidence: f64,
    /// Whether the uncertainty features came from logprobs (false: neutral values).
    pub uncertainty_available: bool,
    /// Whether any retrieved document was given.
    pub grounding_available: bool,
}

/// Full result: the evaluation record, the features, and the evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HallucinationReport {
    /// The `gen_ai.evaluation.result` record.
    pub evaluation: EvaluationResult,
    /// Features that entered the index.
    pub features: IndexFeatures,
    /// Per-sentence evidence and grounding summary.
    pub grounding: Grounding,
    /// Token uncertainty, when logprobs were given.
    pub uncertainty: Option<ResponseUncertainty>,
}

fn sigmoid(z: f64) -> f64 {
    1.0 / (1.0 + (-z).exp())
}

/// Score a request (parses nothing; see [`hallucination_index_parts`] for precomputed
/// uncertainty).
pub fn hallucination_index(request: &HallucinationRequest) -> Result<HallucinationReport> {
    let uncertainty = match &request.logprobs {
        Some(lp) if !lp.content.is_empty() => {
            Some(response_uncertainty(lp, &request.options.uncertainty)?)
        }
        _ => None,
    };
    hallucination_index_parts(
        &request.answer,
        &request.documents,
        uncertainty,
        &request.options,
    )
}

/// Score an answer from its parts; `uncertainty` may come from
/// [`crate::entropy::uncertainty_from_columns`].
pub fn hallucination_index_parts(
    answer: &str,
    documents: &[RetrievedDocument],
    uncertainty: Option<ResponseUncertainty>,
    opts: &HallucinationOptions,
) -> Result<HallucinationReport> {
    if answer.trim().is_empty() {
        return Err(DetectError::Empty { what: "answer" });
    }
    check_work(answer, documents)?;
    if !(0.0..=1.0).contains(&opts.support_threshold) || !(opts.medium <= opts.high) {
        return Err(DetectError::InvalidParameter {
            name: "options",
            reason: "support_threshold in [0,1] and medium <= high".into(),
        });
    }
    let w = &opts.weights;
    let grounding = grounding::ground(answer, documents, opts.support_threshold);
    let (entropy, entropy_spike, low_confidence, available) = match &uncertainty {
        Some(u) => {
            let scale = ((u.top_k as f64) + 1.0).ln().max(f64::MIN_POSITIVE);
            let norm = |v: Option<f64>| v.map_or(w.neutral, |h| (h / scale).clamp(0.0, 1.0));
            let spike = u
                .entropy_max
                .zip(u.entropy_mean)
                .map(|(max, mean)| max - mean);
            (
                norm(u.entropy_mean),
                norm(spike),
                u.low_confidence.tokens_below as f64 / u.tokens.max(1) as f64,
                true,
            )
        }
        None => (w.neutral, w.neutral, w.neutral, false),
    };
    let features = IndexFeatures {
        unsupported_share: grounding.unsupported_share,
        worst_sentence_gap: grounding.worst_sentence_gap,
        number_gap: grounding.number_gap.unwrap_or(0.0),
        entity_gap: grounding.entity_gap.unwrap_or(0.0),
        novelty: grounding.novelty,
        entropy,
        entropy_spike,
        low_confidence,
        uncertainty_available: available,
        grounding_available: !documents.is_empty(),
    };
    let z = w.bias
        + w.unsupported_share * features.unsupported_share
        + w.worst_sentence_gap * features.worst_sentence_gap
        + w.number_gap * features.number_gap
        + w.entity_gap * features.entity_gap
        + w.novelty * features.novelty
        + w.entropy * features.entropy
        + w.entropy_spike * features.entropy_spike
        + w.low_confidence * features.low_confidence;
    if !z.is_finite() {
        return Err(DetectError::Numerical {
            what: "hallucination index",
        });
    }
    let score = sigmoid(z).clamp(0.0, 1.0);
    let label = if score >= opts.high {
        RiskLabel::High
    } else if score >= opts.medium {
        RiskLabel::Medium
    } else {
        RiskLabel::Low
    };
    let explanation = explain(&grounding, &features, uncertainty.as_ref());
    Ok(HallucinationReport {
        evaluation: EvaluationResult {
            name: "hallucination_index".into(),
            score_value: score,
            score_label: label,
            explanation,
        },
        features,
        grounding,
        uncertainty,
    })
}

fn explain(g: &Grounding, f: &IndexFeatures, u: Option<&ResponseUncertainty>) -> String {
    let checked = g.sentences.iter().filter(|s| s.weight > 0.0).count();
    let unsupported = g
        .sentences
        .iter()
        .filter(|s| s.weight > 0.0 && !s.supported)
        .count();
    let mut parts = vec![if f.grounding_available {
        format!("{unsupported} of {checked} sentences not supported by the retrieved documents")
    } else {
        "no retrieved documents: grounding not assessed".to_string()
    }];
    let numbers: Vec<&str> = g
        .sentences
        .iter()
        .flat_map(|s| s.unsupported_units.iter())
        .filter(|u| u.chars().next().is_some_and(|c| c.is_ascii_digit()))
        .map(String::as_str)
        .take(5)
        .collect();
    if !numbers.is_empty() && f.grounding_available {
        parts.push(format!("unsupported numbers: {}", numbers.join(", ")));
    }
    match u {
        Some(u) => parts.push(format!(
            "mean token entropy {:.2} nats over {} tokens ({}top-{})",
            u.entropy_mean.unwrap_or(0.0),
            u.tokens,
            if u.tail_bucket { "tail bucket + " } else { "" },
            u.top_k
        )),
        None => parts.push("no logprobs: uncertainty at neutral value".into()),
    }
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn docs() -> Vec<RetrievedDocument> {
        vec![RetrievedDocument {
            id: "kb-7".into(),
            text: "Veltora was founded in 1998 in Lisbon. It employs 12,400 people. Its CEO is Dana Okafor.".into(),
        }]
    }

    #[test]
    fn grounded_scores_lower_than_fabricated() {
        let opts = HallucinationOptions::default();
        let good = hallucination_index_parts(
            "Veltora was founded in 1998. Dana Okafor is its CEO.",
            &docs(),
            None,
            &opts,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let bad = hallucination_index_parts(
            "Veltora was founded in 1987. Marcus Lindqvist is its CEO.",
            &docs(),
            None,
            &opts,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            good.evaluation.score_value < bad.evaluation.score_value,
            "{} vs {}",
            good.evaluation.score_value,
            bad.evaluation.score_value
        );
        assert_eq!(good.evaluation.score_label, RiskLabel::Low);
        assert_ne!(bad.evaluation.score_label, RiskLabel::Low);
        assert!(
            bad.evaluation.explanation.contains("1987"),
            "{}",
            bad.evaluation.explanation
        );
        let v = serde_json::to_value(&good.evaluation).unwrap_or_default();
        assert_eq!(v["gen_ai.evaluation.name"], "hallucination_index");
        assert!(v["gen_ai.evaluation.score.label"].is_string());
        assert_eq!(
            good.grounding.sentences[0]
                .best
                .as_ref()
                .map(|s| s.document_id.as_str()),
            Some("kb-7")
        );
    }

    #[test]
    fn request_round_trip_and_errors() {
        let json = r#"{"answer": "Veltora has 12,400 employees.", "documents": [{"id": "d", "text": "Veltora employs 12,400 people."}],
                      "logprobs": {"content": [{"token": "Veltora", "logprob": -0.1, "top_logprobs": [{"token": "Veltora", "logprob": -0.1}]}]}}"#;
        let req: HallucinationRequest =
            serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}"));
        let r = hallucination_index(&req).unwrap_or_else(|e| panic!("{e}"));
        assert!(r.features.uncertainty_available && r.uncertainty.is_some());
        assert!(matches!(
            hallucination_index_parts("  ", &docs(), None, &HallucinationOptions::default()),
            Err(DetectError::Empty { .. })
        ));
    }

    proptest! {
        #[test]
        fn index_is_in_unit_interval(answer in ".{1,200}", doc in ".{0,300}", ent in 0.0f64..3.0) {
            let documents = vec![RetrievedDocument { id: "x".into(), text: doc }];
            let u = crate::entropy::uncertainty_from_columns(&[-ent.min(2.0), -0.1], &[0, 1, 2], &[-ent.min(2.0), -0.1], &UncertaintyOptions::default()).ok();
            if let Ok(r) = hallucination_index_parts(&answer, &documents, u, &HallucinationOptions::default()) {
                prop_assert!((0.0..=1.0).contains(&r.evaluation.score_value));
                let f = r.features;
                for v in [f.unsupported_share, f.worst_sentence_gap, f.number_gap, f.entity_gap, f.novelty, f.entropy, f.entropy_spike, f.low_confidence] {
                    prop_assert!((0.0..=1.0).contains(&v));
                }
            }
        }
    }
}
