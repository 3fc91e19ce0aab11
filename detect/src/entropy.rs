//! Token-level uncertainty from log-probabilities, aggregated per response.
//!
//! Per token position with known probabilities `p_1..p_k` (the top-k alternatives, plus the
//! sampled token when it is not among them):
//!
//! * **Entropy** (Shannon 1948), in nats: `H = -sum_i p_i ln p_i - r ln r`, where the residual
//!   mass `r = 1 - sum_i p_i` is treated as **one extra bucket** when only the top-k are known.
//!   This is a lower bound on the true entropy (the tail spread over many tokens would add
//!   more) and lies in `[0, ln(k+1)]`. With `full_distribution = true` (or when the residual is
//!   below [`UncertaintyOptions::complete_tolerance`]) the distribution is complete and `H` is
//!   exact. The result records `top_k` and whether a tail bucket was used.
//! * **Negative log-probability** of the sampled token `-ln p(token)`; **perplexity**
//!   `exp(mean NLL)` (Jelinek et al. 1977).
//! * **Top-1/top-2 margin** `p_(1) - p_(2)` (as in margin sampling, Scheffer et al. 2001).
//! * **Low-confidence runs**: maximal runs of consecutive tokens with `p(token) <
//!   low_confidence_prob`, at least `min_run_len` long (cf. token-probability hallucination
//!   signals in Manakul et al. 2023, SelfCheckGPT, and Varshney et al. 2023).
//!
//! Input hygiene: a log-probability that is NaN, `+inf`, or positive beyond
//! `positive_tolerance` is an error; tiny positive values (API rounding) are clamped to 0;
//! `-inf` in the alternatives means probability 0 (for the sampled token it is an error: it
//! was sampled, so its probability cannot be 0). Top-k probabilities summing above one by at
//! most `sum_tolerance` (rounding) are renormalised; beyond that, an error.

use crate::error::{DetectError, Result};
use crate::logprobs::ChoiceLogprobs;
use serde::{Deserialize, Serialize};

/// Options for [`response_uncertainty`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct UncertaintyOptions {
    /// A token is low-confidence when its probability is below this.
    pub low_confidence_prob: f64,
    /// Shortest run of low-confidence tokens that is reported.
    pub min_run_len: usize,
    /// The alternatives are the whole vocabulary distribution (exact entropy, no tail bucket).
    pub full_distribution: bool,
    /// Residual mass at or below this counts as a complete distribution.
    pub complete_tolerance: f64,
    /// Largest positive logprob accepted as rounding of 0.
    pub positive_tolerance: f64,
    /// Largest excess of `sum p_i` over 1 accepted as rounding.
    pub sum_tolerance: f64,
    /// Most low-confidence spans listed in the result (all are counted).
    pub max_spans: usize,
}

impl Default for UncertaintyOptions {
    fn default() -> Self {
        Self {
            low_confidence_prob: 0.5,
            min_run_len: 2,
            full_distribution: false,
            complete_tolerance: 1e-9,
            positive_tolerance: 1e-4,
            sum_tolerance: 1e-2,
            max_spans: 256,
        }
    }
}

/// Uncertainty of one token position.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TokenUncertainty {
    /// Entropy in nats (`None` when no alternatives were given).
    pub entropy: Option<f64>,
    /// `-ln p(sampled token)`.
    pub nll: f64,
    /// `p(sampled token)`.
    pub prob: f64,
    /// `p_(1) - p_(2)` among the known entries (`None` with fewer than two).
    pub margin: Option<f64>,
    /// Residual mass used as the tail bucket (0 when complete).
    pub tail_mass: f64,
    /// Number of known entries `k`.
    pub k: usize,
}

/// A run of consecutive low-confidence tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenSpan {
    /// Index of the first token.
    pub start: usize,
    /// Number of tokens.
    pub len: usize,
}

/// Low-confidence runs in a response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LowConfidenceRuns {
    /// Probability threshold used.
    pub threshold: f64,
    /// Minimum run length used.
    pub min_run_len: usize,
    /// Tokens below the threshold.
    pub tokens_below: usize,
    /// Runs of at least `min_run_len`.
    pub runs: usize,
    /// Longest run (any length).
    pub longest: usize,
    /// Tokens inside reported runs, divided by all tokens.
    pub share_in_runs: f64,
    /// The first `max_spans` runs.
    pub spans: Vec<TokenSpan>,
    /// More runs existed than listed.
    pub truncated: bool,
}

/// Uncertainty features of one response (see module docs for definitions; entropies in nats).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseUncertainty {
    /// Tokens in the response.
    pub tokens: usize,
    /// Tokens that came with alternatives (entropy defined).
    pub tokens_with_distribution: usize,
    /// Largest number of known entries at a position.
    pub top_k: usize,
    /// Whether any position used the residual mass as an extra bucket (entropy is then a lower
    /// bound computed from the top-k plus one bucket).
    pub tail_bucket: bool,
    /// Mean token entropy.
    pub entropy_mean: Option<f64>,
    /// Max token entropy.
    pub entropy_max: Option<f64>,
    /// 90th percentile of token entropy (linear interpolation).
    pub entropy_p90: Option<f64>,
    /// Mean negative log-probability of the sampled tokens.
    pub nll_mean: f64,
    /// Max negative log-probability.
    pub nll_max: f64,
    /// Smallest sampled-token probability.
    pub min_token_prob: f64,
    /// Mean top-1/top-2 margin.
    pub margin_mean: Option<f64>,
    /// Smallest top-1/top-2 margin.
    pub margin_min: Option<f64>,
    /// `exp(nll_mean)`.
    pub perplexity: f64,
    /// Runs of low-confidence tokens.
    pub low_confidence: LowConfidenceRuns,
}

fn clean_logprob(
    lp: f64,
    token_index: usize,
    sampled: bool,
    opts: &UncertaintyOptions,
) -> Result<f64> {
    if lp.is_nan() || lp == f64::INFINITY {
        return Err(DetectError::InvalidLogprob {
            token_index,
            reason: format!("logprob {lp} is not a number <= 0"),
        });
    }
    if lp > opts.positive_tolerance {
        return Err(DetectError::InvalidLogprob {
            token_index,
            reason: format!("positive logprob {lp}"),
        });
    }
    if sampled && lp == f64::NEG_INFINITY {
        return Err(DetectError::InvalidLogprob {
            token_index,
            reason: "sampled token has logprob -inf".into(),
        });
    }
    Ok(lp.min(0.0))
}

/// Uncertainty of one position. `top` are the alternatives' logprobs; `sampled_in_top` says
/// whether the sampled token is among them (if not, it is added as a known entry).
pub fn token_uncertainty(
    token_index: usize,
    sampled_logprob: f64,
    top: &[f64],
    sampled_in_top: bool,
    opts: &UncertaintyOptions,
) -> Result<TokenUncertainty> {
    let lp = clean_logprob(sampled_logprob, token_index, true, opts)?;
    let prob = lp.exp();
    if top.is_empty() {
        return Ok(TokenUncertainty {
            entropy: None,
            nll: -lp,
            prob,
            margin: None,
            tail_mass: 0.0,
            k: 0,
        });
    }
    // two largest probabilities and the sum, in one pass without allocating
    let (mut sum, mut first, mut second) = (0.0_f64, 0.0_f64, 0.0_f64);
    let mut plogp = 0.0_f64;
    let mut push = |p: f64, l: f64| {
        sum += p;
        if p > 0.0 {
            plogp += p * l;
        }
        if p > first {
            second = first;
            first = p;
        } else if p > second {
            second = p;
        }
    };
    for &t in top {
        let l = clean_logprob(t, token_index, false, opts)?;
        push(l.exp(), l);
    }
    let mut k = top.len();
    if !sampled_in_top {
        push(prob, lp);
        k += 1;
    }
    if !(sum > 0.0) {
        return Err(DetectError::InvalidDistribution {
            token_index,
            reason: "all alternatives have probability 0".into(),
        });
    }
    if sum > 1.0 + opts.sum_tolerance {
        return Err(DetectError::InvalidDistribution {
            token_index,
            reason: format!("probabilities sum to {sum} > 1"),
        });
    }
    let complete = opts.full_distribution || sum >= 1.0 - opts.complete_tolerance;
    let (entropy, tail_mass, scale) = if complete {
        // renormalise: H = -sum (p/s) ln(p/s) = -(1/s) sum p ln p + ln s
        ((-plogp / sum + sum.ln()).max(0.0), 0.0, 1.0 / sum)
    } else {
        let r = 1.0 - sum;
        ((-plogp - r * r.ln()).max(0.0), r, 1.0)
    };
    let margin = (k >= 2).then_some((first - second) * scale);
    Ok(TokenUncertainty {
        entropy: Some(entropy),
        nll: -lp,
        prob,
        margin,
        tail_mass,
        k,
    })
}

/// Streaming aggregation of per-token uncertainty into a [`ResponseUncertainty`].
#[derive(Debug, Clone)]
pub struct UncertaintyAccumulator {
    opts: UncertaintyOptions,
    tokens: usize,
    entropies: Vec<f64>,
    top_k: usize,
    tail_bucket: bool,
    nll_sum: f64,
    nll_max: f64,
    min_prob: f64,
    margin_sum: f64,
    margin_n: usize,
    margin_min: f64,
    below: usize,
    current_run: usize,
    current_start: usize,
    longest: usize,
    runs: usize,
    in_runs: usize,
    spans: Vec<TokenSpan>,
}

impl UncertaintyAccumulator {
    /// Start an empty accumulator.
    pub fn new(opts: UncertaintyOptions) -> Self {
        Self {
            opts,
            tokens: 0,
            entropies: Vec::new(),
            top_k: 0,
            tail_bucket: false,
            nll_sum: 0.0,
            nll_max: 0.0,
            min_prob: 1.0,
            margin_sum: 0.0,
            margin_n: 0,
            margin_min: f64::INFINITY,
            below: 0,
            current_run: 0,
            current_start: 0,
            longest: 0,
            runs: 0,
            in_runs: 0,
            spans: Vec::new(),
        }
    }

    /// Add the next token (see [`token_uncertainty`] for the arguments).
    pub fn push(
        &mut self,
        sampled_logprob: f64,
        top: &[f64],
        sampled_in_top: bool,
    ) -> Result<TokenUncertainty> {
        let u = token_uncertainty(
            self.tokens,
            sampled_logprob,
            top,
            sampled_in_top,
            &self.opts,
        )?;
        if let Some(h) = u.entropy {
            self.entropies.push(h);
        }
        self.top_k = self.top_k.max(u.k);
        self.tail_bucket |= u.tail_mass > 0.0;
        self.nll_sum += u.nll;
        self.nll_max = self.nll_max.max(u.nll);
        self.min_prob = self.min_prob.min(u.prob);
        if let Some(m) = u.margin {
            self.margin_sum += m;
            self.margin_n += 1;
            self.margin_min = self.margin_min.min(m);
        }
        if u.prob < self.opts.low_confidence_prob {
            self.below += 1;
            if self.current_run == 0 {
                self.current_start = self.tokens;
            }
            self.current_run += 1;
        } else {
            self.close_run();
        }
        self.tokens += 1;
        Ok(u)
    }

    fn close_run(&mut self) {
        let len = self.current_run;
        if len == 0 {
            return;
        }
        self.longest = self.longest.max(len);
        if len >= self.opts.min_run_len.max(1) {
            self.runs += 1;
            self.in_runs += len;
            if self.spans.len() < self.opts.max_spans {
                self.spans.push(TokenSpan {
                    start: self.current_start,
                    len,
                });
            }
        }
        self.current_run = 0;
    }

    /// Finish and summarise. Fails when no token was pushed.
    pub fn finish(mut self) -> Result<ResponseUncertainty> {
        self.close_run();
        if self.tokens == 0 {
            return Err(DetectError::Empty {
                what: "logprobs content",
            });
        }
        let n = self.tokens as f64;
        let nll_mean = self.nll_sum / n;
        let m = self.entropies.len();
        let (entropy_mean, entropy_max, entropy_p90) = if m == 0 {
            (None, None, None)
        } else {
            let mean = self.entropies.iter().sum::<f64>() / m as f64;
            let max = self.entropies.iter().copied().fold(0.0, f64::max);
            (
                Some(mean),
                Some(max),
                Some(select_quantile(&mut self.entropies, 0.9)),
            )
        };
        Ok(ResponseUncertainty {
            tokens: self.tokens,
            tokens_with_distribution: m,
            top_k: self.top_k,
            tail_bucket: self.tail_bucket,
            entropy_mean,
            entropy_max,
            entropy_p90,
            nll_mean,
            nll_max: self.nll_max,
            min_token_prob: self.min_prob,
            margin_mean: (self.margin_n > 0).then(|| self.margin_sum / self.margin_n as f64),
            margin_min: (self.margin_n > 0).then_some(self.margin_min),
            perplexity: nll_mean.exp(),
            low_confidence: LowConfidenceRuns {
                threshold: self.opts.low_confidence_prob,
                min_run_len: self.opts.min_run_len,
                tokens_below: self.below,
                runs: self.runs,
                longest: self.longest,
                share_in_runs: self.in_runs as f64 / n,
                truncated: self.runs > self.spans.len(),
                spans: self.spans,
            },
        })
    }
}

/// Linear-interpolated quantile by selection, O(n) (numpy `quantile(method="linear")`).
fn select_quantile(v: &mut [f64], q: f64) -> f64 {
    let pos = q * (v.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let frac = pos - lo as f64;
    let (_, lo_val, upper) = v.select_nth_unstable_by(lo, f64::total_cmp);
    let lo_val = *lo_val;
    if frac == 0.0 || upper.is_empty() {
        return lo_val;
    }
    let hi_val = upper.iter().copied().fold(f64::INFINITY, f64::min);
    lo_val + (hi_val - lo_val) * frac
}

/// Uncertainty features of a parsed `logprobs.content` list.
pub fn response_uncertainty(
    logprobs: &ChoiceLogprobs,
    opts: &UncertaintyOptions,
) -> Result<ResponseUncertainty> {
    let mut acc = UncertaintyAccumulator::new(*opts);
    let mut top = Vec::new();
    for t in &logprobs.content {
        top.clear();
        top.extend(t.top_logprobs.iter().map(|a| a.logprob));
        acc.push(t.logprob, &top, t.sampled_in_top())?;
    }
    acc.finish()
}

/// Columnar form (as stored: one sampled logprob per token, alternatives flattened with
/// Arrow-style offsets, `top_offsets.len() == sampled.len() + 1`). The sampled token counts as
/// among the alternatives when one of them has exactly its logprob.
pub fn uncertainty_from_columns(
    sampled: &[f64],
    top_offsets: &[usize],
    top_logprobs: &[f64],
    opts: &UncertaintyOptions,
) -> Result<ResponseUncertainty> {
    if top_offsets.len() != sampled.len() + 1 {
        return Err(DetectError::LengthMismatch {
            left: "top_offsets",
            left_len: top_offsets.len(),
            right: "sampled + 1",
            right_len: sampled.len() + 1,
        });
    }
    let mut acc = UncertaintyAccumulator::new(*opts);
    for (i, lp) in sampled.iter().enumerate() {
        let (a, b) = (top_offsets[i], top_offsets[i + 1]);
        let top = top_logprobs
            .get(a..b)
            .ok_or_else(|| DetectError::InvalidParameter {
                name: "top_offsets",
                reason: format!(
                    "range {a}..{b} at token {i} is outside {} values",
                    top_logprobs.len()
                ),
            })?;
        let in_top = top.iter().any(|t| t == lp);
        acc.push(*lp, top, in_top)?;
    }
    acc.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logprobs::parse_logprobs;
    use proptest::prelude::*;

    #[test]
    fn uniform_full_distribution_has_ln_k_entropy() {
        let opts = UncertaintyOptions {
            full_distribution: true,
            ..Default::default()
        };
        let lp = (0.25f64).ln();
        let u = token_uncertainty(0, lp, &[lp; 4], true, &opts).unwrap_or_else(|e| panic!("{e}"));
        assert!((u.entropy.unwrap_or(0.0) - 4f64.ln()).abs() < 1e-12);
        assert_eq!(u.tail_mass, 0.0);
        assert_eq!(u.margin, Some(0.0));
    }

    #[test]
    fn tail_bucket_added_for_top_k() {
        // p = 0.5, 0.2 known; tail 0.3 is one bucket
        let opts = UncertaintyOptions::default();
        let u = token_uncertainty(0, 0.5f64.ln(), &[0.5f64.ln(), 0.2f64.ln()], true, &opts)
            .unwrap_or_else(|e| panic!("{e}"));
        let want = -(0.5 * 0.5f64.ln() + 0.2 * 0.2f64.ln() + 0.3 * 0.3f64.ln());
        assert!((u.entropy.unwrap_or(0.0) - want).abs() < 1e-12);
        assert!((u.tail_mass - 0.3).abs() < 1e-12);
        assert!((u.margin.unwrap_or(0.0) - 0.3).abs() < 1e-12);
        // sampled token outside the top list is added as a known entry
        let u = token_uncertainty(0, 0.1f64.ln(), &[0.5f64.ln(), 0.2f64.ln()], false, &opts)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(u.k, 3);
        assert!((u.tail_mass - 0.2).abs() < 1e-12);
    }

    #[test]
    fn odd_inputs_are_errors_or_clamped() {
        let o = UncertaintyOptions::default();
        assert!(matches!(
            token_uncertainty(3, f64::NAN, &[], true, &o),
            Err(DetectError::InvalidLogprob { token_index: 3, .. })
        ));
        assert!(matches!(
            token_uncertainty(0, f64::INFINITY, &[], true, &o),
            Err(DetectError::InvalidLogprob { .. })
        ));
        assert!(matches!(
            token_uncertainty(0, 0.5, &[], true, &o),
            Err(DetectError::InvalidLogprob { .. })
        ));
        assert!(matches!(
            token_uncertainty(0, f64::NEG_INFINITY, &[], true, &o),
            Err(DetectError::InvalidLogprob { .. })
        ));
        // rounding: tiny positive logprob is clamped, sum slightly above one is renormalised
        let u =
            token_uncertainty(0, 1e-7, &[1e-7, -20.0], true, &o).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(u.prob, 1.0);
        assert_eq!(u.tail_mass, 0.0);
        // clearly more than one
        assert!(matches!(
            token_uncertainty(0, -0.1, &[-0.1, -0.2, -0.3], true, &o),
            Err(DetectError::InvalidDistribution { .. })
        ));
        // -inf alternatives are probability zero
        let u = token_uncertainty(0, -0.1, &[-0.1, f64::NEG_INFINITY], true, &o)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(u.entropy.unwrap_or(-1.0) >= 0.0);
        // empty responses
        assert!(matches!(
            response_uncertainty(&ChoiceLogprobs::default(), &o),
            Err(DetectError::Empty { .. })
        ));
        assert!(uncertainty_from_columns(&[-0.1], &[0, 5], &[-0.1], &o).is_err());
    }

    #[test]
    fn response_features_and_runs() {
        let json = r#"{"content": [
          {"token":"A","logprob":-0.01,"top_logprobs":[{"token":"A","logprob":-0.01},{"token":"B","logprob":-5.0}]},
          {"token":"b","logprob":-1.5,"top_logprobs":[{"token":"b","logprob":-1.5},{"token":"c","logprob":-1.0}]},
          {"token":"c","logprob":-2.0,"top_logprobs":[{"token":"d","logprob":-0.5},{"token":"c","logprob":-2.0}]},
          {"token":"d","logprob":-0.05,"top_logprobs":[]},
          {"token":"e","logprob":-3.0,"top_logprobs":[{"token":"x","logprob":-0.2}]}
        ]}"#;
        let lp = parse_logprobs(json).unwrap_or_else(|e| panic!("{e}"));
        let r = response_uncertainty(&lp, &UncertaintyOptions::default())
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.tokens, 5);
        assert_eq!(r.tokens_with_distribution, 4);
        assert!(r.tail_bucket);
        assert_eq!(r.top_k, 2);
        assert_eq!(r.low_confidence.tokens_below, 3);
        assert_eq!(r.low_confidence.runs, 1);
        assert_eq!(r.low_confidence.spans, vec![TokenSpan { start: 1, len: 2 }]);
        assert_eq!(r.low_confidence.longest, 2);
        assert!((r.nll_max - 3.0).abs() < 1e-12);
        assert!((r.min_token_prob - (-3.0f64).exp()).abs() < 1e-15);
        assert!((r.perplexity - ((0.01 + 1.5 + 2.0 + 0.05 + 3.0) / 5.0f64).exp()).abs() < 1e-12);
        assert!(r.entropy_p90 <= r.entropy_max && r.entropy_mean <= r.entropy_max);
        // columnar path gives the same answer
        let sampled = [-0.01, -1.5, -2.0, -0.05, -3.0];
        let offsets = [0, 2, 4, 6, 6, 7];
        let flat = [-0.01, -5.0, -1.5, -1.0, -0.5, -2.0, -0.2];
        let c = uncertainty_from_columns(&sampled, &offsets, &flat, &UncertaintyOptions::default())
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c, r);
    }

    proptest! {
        #[test]
        fn entropy_within_bounds(
            raw in proptest::collection::vec(0.001f64..1.0, 1..30),
            mass in 0.05f64..1.0,
            full in proptest::bool::ANY,
        ) {
            let total: f64 = raw.iter().sum::<f64>() + 1e-9;
            let lps: Vec<f64> = raw.iter().map(|r| (r / total * mass).ln()).collect();
            let opts = UncertaintyOptions { full_distribution: full, ..Default::default() };
            let u = token_uncertainty(0, lps[0], &lps, true, &opts);
            prop_assert!(u.is_ok());
            if let Ok(u) = u {
                let h = u.entropy.unwrap_or(f64::NAN);
                let bound = if full { (lps.len() as f64).ln() } else { (lps.len() as f64 + 1.0).ln() };
                prop_assert!(h >= 0.0 && h <= bound + 1e-9, "h={} bound={}", h, bound);
                if let Some(m) = u.margin { prop_assert!((0.0..=1.0 + 1e-12).contains(&m)); }
            }
        }

        #[test]
        fn never_panics_on_arbitrary_numbers(
            sampled in proptest::num::f64::ANY,
            top in proptest::collection::vec(proptest::num::f64::ANY, 0..8),
        ) {
            let _ = token_uncertainty(0, sampled, &top, false, &UncertaintyOptions::default());
        }
    }
}
