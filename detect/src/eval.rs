//! Evaluation of the hallucination index on labelled sets, against two baselines on the same
//! data: response length alone (whitespace tokens) and mean token entropy alone.
//!
//! The sets are GENERATED (see [`generator`] for exactly how, and why they are not trivially
//! separable); labels are known by construction. No public labelled set is bundled yet.
//! Metrics: AUROC, AUC-PR (average precision) and precision at a 10% flag rate
//! ([`crate::stats`]).

pub mod generator;

use crate::entropy::response_uncertainty;
use crate::error::Result;
use crate::hallucination::hallucination_index;
use crate::stats::{RankingMetrics, ranking_metrics};
pub use generator::{Difficulty, GeneratorConfig, LabelledExample, generate};
use serde::{Deserialize, Serialize};

/// Seed of the development split on which the index weights were adjusted.
pub const DEV_SEED: u64 = 0x5EED_0DE5;
/// Flag rate for precision@k.
pub const FLAG_RATE: f64 = 0.10;

/// The evaluation sets (never used for tuning).
pub fn evaluation_sets() -> Vec<(&'static str, GeneratorConfig)> {
    vec![
        (
            "generated",
            GeneratorConfig {
                seed: 20_261_129,
                examples: 600,
                hallucination_rate: 0.4,
                difficulty: Difficulty::Standard,
            },
        ),
        (
            "generated-hard",
            GeneratorConfig {
                seed: 4_242,
                examples: 600,
                hallucination_rate: 0.4,
                difficulty: Difficulty::Hard,
            },
        ),
    ]
}

/// The development split.
pub fn dev_set() -> GeneratorConfig {
    GeneratorConfig {
        seed: DEV_SEED,
        examples: 400,
        hallucination_rate: 0.4,
        difficulty: Difficulty::Standard,
    }
}

/// Metrics of the index and both baselines on one set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetEvaluation {
    /// Set name.
    pub set: String,
    /// Examples.
    pub examples: usize,
    /// Hallucinated examples.
    pub positives: usize,
    /// The hallucination index.
    pub index: RankingMetrics,
    /// Baseline: response length in whitespace tokens.
    pub length_baseline: RankingMetrics,
    /// Baseline: mean token entropy.
    pub entropy_baseline: RankingMetrics,
    /// Mean index per example kind (`grounded`, `number_swap`, ...), sorted by kind.
    pub mean_index_by_kind: Vec<(String, usize, f64)>,
}

/// Deterministic Granger workload shared by the benchmark and the statsmodels comparison:
/// `pairs` (cause, effect) pairs of `points` values; a third of the pairs are causal by
/// construction (`effect_t = 0.4 effect_{t-1} + 0.5 cause_{t-2} + e_t`), the rest are
/// independent AR(1) series.
pub fn granger_workload(seed: u64, pairs: usize, points: usize) -> Vec<(Vec<f64>, Vec<f64>)> {
    let mut rng = generator::SplitMix64::new(seed);
    (0..pairs)
        .map(|i| {
            let phi = 0.2 + 0.6 * rng.unit();
            let mut cause = vec![0.0; points];
            let mut effect = vec![0.0; points];
            for t in 0..points {
                let prev = |v: &[f64], k: usize| if t >= k { v[t - k] } else { 0.0 };
                cause[t] = phi * prev(&cause, 1) + rng.normal();
                let drive = if i % 3 == 0 {
                    0.5 * prev(&cause, 2)
                } else {
                    0.0
                };
                effect[t] = 0.4 * prev(&effect, 1) + drive + rng.normal();
            }
            (cause, effect)
        })
        .collect()
}

/// Score every example and compute the metrics.
pub fn evaluate(set: &str, examples: &[LabelledExample]) -> Result<SetEvaluation> {
    let labels: Vec<bool> = examples.iter().map(|e| e.hallucinated).collect();
    let mut index = Vec::with_capacity(examples.len());
    let mut length = Vec::with_capacity(examples.len());
    let mut entropy = Vec::with_capacity(examples.len());
    for e in examples {
        index.push(hallucination_index(&e.request)?.evaluation.score_value);
        length.push(e.request.answer.split_whitespace().count() as f64);
        let h = match &e.request.logprobs {
            Some(lp) => response_uncertainty(lp, &e.request.options.uncertainty)?
                .entropy_mean
                .unwrap_or(0.0),
            None => 0.0,
        };
        entropy.push(h);
    }
    let mut kinds: std::collections::BTreeMap<&str, (usize, f64)> =
        std::collections::BTreeMap::new();
    for (e, s) in examples.iter().zip(&index) {
        let slot = kinds.entry(e.kind.as_str()).or_insert((0, 0.0));
        slot.0 += 1;
        slot.1 += s;
    }
    Ok(SetEvaluation {
        mean_index_by_kind: kinds
            .into_iter()
            .map(|(k, (n, sum))| (k.to_string(), n, sum / n as f64))
            .collect(),
        set: set.to_string(),
        examples: examples.len(),
        positives: labels.iter().filter(|l| **l).count(),
        index: ranking_metrics(&index, &labels, FLAG_RATE)?,
        length_baseline: ranking_metrics(&length, &labels, FLAG_RATE)?,
        entropy_baseline: ranking_metrics(&entropy, &labels, FLAG_RATE)?,
    })
}

/// Generate and evaluate every set in [`evaluation_sets`].
pub fn evaluate_all() -> Result<Vec<SetEvaluation>> {
    evaluation_sets()
        .into_iter()
        .map(|(name, cfg)| evaluate(name, &generate(&cfg)))
        .collect()
}

/// A plain-text table of the results.
pub fn format_table(results: &[SetEvaluation]) -> String {
    let mut s = format!(
        "{:<26} {:<22} {:>7} {:>7} {:>8}\n",
        "set", "scorer", "AUROC", "AUC-PR", "P@10%"
    );
    for r in results {
        for (name, m) in [
            ("hallucination_index", &r.index),
            ("baseline: length", &r.length_baseline),
            ("baseline: mean entropy", &r.entropy_baseline),
        ] {
            s.push_str(&format!(
                "{:<26} {:<22} {:>7.3} {:>7.3} {:>8.3}\n",
                format!("{} ({}/{})", r.set, r.positives, r.examples),
                name,
                m.auroc,
                m.auc_pr,
                m.precision_at_flag_rate
            ));
        }
    }
    for r in results {
        let kinds: Vec<String> = r
            .mean_index_by_kind
            .iter()
            .map(|(k, n, m)| format!("{k} {m:.2} (n={n})"))
            .collect();
        s.push_str(&format!(
            "mean index by kind, {}: {}\n",
            r.set,
            kinds.join(", ")
        ));
    }
    s
}
