//! Anomaly likelihood: post-processing of per-point anomaly scores into sparse, comparable
//! detections (after Ahmad, Lavin, Purdy & Agha, "Unsupervised real-time anomaly detection for
//! streaming data", Neurocomputing 262, 2017, §3.3, and NAB's HTM detector).
//!
//! A single large residual is often noise, and a detector whose residuals are noisy everywhere
//! fires everywhere. The likelihood asks instead how unusual the *recent* level of the score is
//! relative to its own history:
//!
//! * `μ̃_t` = mean of the last `short_window` raw scores (the current level);
//! * `μ_t, σ_t` = mean and standard deviation of the previous `long_window` values of `μ̃`
//!   (the normal level and its spread; `σ_t` floored at `min_std`);
//! * likelihood `L_t = 1 − Q((μ̃_t − μ_t)/σ_t)` with `Q` the standard normal upper tail
//!   (`Q(|·|)` when two-sided: a level far below normal counts too).
//!
//! Everything is causal: `L_t` uses raw scores up to `t` only. [`log_likelihood`] maps `L` to
//! `[0, 1]` on a log scale (`0.5` ↔ tail `1e-5`), so thresholds spread over the useful range.
//! [`spatial_novelty`] flags values beyond the range seen so far (NAB's HTM detector forces such
//! points to the top score), and [`first_detections`] keeps only the start of each excursion,
//! since NAB and on-call engineers reward the first alert of an episode and punish the rest.

use serde::{Deserialize, Serialize};

use crate::error::{DetectError, Result};

/// Settings of [`anomaly_likelihood`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LikelihoodConfig {
    /// Raw scores averaged into the current level (NAB's HTM: 10).
    pub short_window: usize,
    /// Past levels forming the reference distribution.
    pub long_window: usize,
    /// Levels needed before any likelihood is reported (earlier points get 0.5).
    pub min_history: usize,
    /// Floor of the reference standard deviation, so a flat history does not turn the
    /// slightest blip into a certain anomaly.
    pub min_std: f64,
    /// Also flag a level unusually far *below* normal (HTM's likelihood is symmetric): when
    /// the residuals become much smaller than usual, e.g. a signal that flatlines.
    pub two_sided: bool,
}

impl Default for LikelihoodConfig {
    /// Short window 10 (as HTM; the NAB evaluation uses 5), reference window 1,000 levels,
    /// 100 levels of warm-up, `min_std` 0.01, one-sided.
    fn default() -> Self {
        Self {
            short_window: 10,
            long_window: 1000,
            min_history: 100,
            min_std: 0.01,
            two_sided: false,
        }
    }
}

impl LikelihoodConfig {
    /// Check the windows are usable.
    pub fn validate(&self) -> Result<()> {
        if self.short_window == 0 || self.long_window < 2 || self.min_history < 2 {
            return Err(DetectError::InvalidParameter {
                name: "likelihood windows",
                reason: format!(
                    "need short_window >= 1, long_window >= 2, min_history >= 2 (got {}, {}, {})",
                    self.short_window, self.long_window, self.min_history
                ),
            });
        }
        if !(self.min_std.is_finite() && self.min_std > 0.0) {
            return Err(DetectError::InvalidParameter {
                name: "min_std",
                reason: format!("must be finite and > 0 (got {})", self.min_std),
            });
        }
        Ok(())
    }
}

/// Standard normal upper tail `Q(z) = ½·erfc(z/√2)`.
pub fn normal_tail(z: f64) -> f64 {
    if z.is_nan() {
        return 0.5;
    }
    0.5 * erfc(z / std::f64::consts::SQRT_2)
}

/// Complementary error function (Numerical Recipes' Chebyshev fit, |relative error| < 1.2e-7),
/// accurate in the far tail where `1 − erf` would cancel.
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 { r } else { 2.0 - r }
}

/// Likelihood per point (see the module docs). Non-finite raw scores (unscored points) are
/// skipped: they neither enter the averages nor get a likelihood (0.5). Output is in `[0, 1]`.
pub fn anomaly_likelihood(raw: &[f64], cfg: &LikelihoodConfig) -> Result<Vec<f64>> {
    cfg.validate()?;
    let mut out = vec![0.5; raw.len()];
    // current short window of finite raw scores
    let mut short: std::collections::VecDeque<f64> = Default::default();
    let mut short_sum = 0.0;
    // reference levels (previous short means)
    let mut levels: std::collections::VecDeque<f64> = Default::default();
    let (mut sum, mut sum_sq) = (0.0, 0.0);
    let mut since_exact = 0usize;
    for (t, &r) in raw.iter().enumerate() {
        if !r.is_finite() {
            continue;
        }
        short.push_back(r);
        short_sum += r;
        if short.len() > cfg.short_window {
            short_sum -= short.pop_front().unwrap_or(0.0);
        }
        let level = short_sum / short.len() as f64;
        if levels.len() >= cfg.min_history {
            let n = levels.len() as f64;
            let mean = sum / n;
            let var = (sum_sq / n - mean * mean).max(0.0);
            let std = var.sqrt().max(cfg.min_std);
            let z = (level - mean) / std;
            let z = if cfg.two_sided { z.abs() } else { z };
            out[t] = (1.0 - normal_tail(z)).clamp(0.0, 1.0);
        }
        levels.push_back(level);
        sum += level;
        sum_sq += level * level;
        if levels.len() > cfg.long_window {
            let old = levels.pop_front().unwrap_or(0.0);
            sum -= old;
            sum_sq -= old * old;
        }
        since_exact += 1;
        if since_exact >= cfg.long_window {
            // re-sum now and then so rounding cannot accumulate
            sum = levels.iter().sum();
            sum_sq = levels.iter().map(|v| v * v).sum();
            since_exact = 0;
        }
    }
    Ok(out)
}

/// `ln(1 − L + 1e−10) / ln(1e−10)`, clamped to `[0, 1]`: 0 for an ordinary point, 0.5 for a
/// tail probability of `1e−5`, 1 for a certain anomaly.
pub fn log_likelihood(likelihood: f64) -> f64 {
    if !likelihood.is_finite() {
        return 0.0;
    }
    let tail = (1.0 - likelihood).clamp(0.0, 1.0);
    ((tail + 1e-10).ln() / 1e-10f64.ln()).clamp(0.0, 1.0)
}

/// The smallest and largest finite value a series took: what [`spatial_novelty`] judges a new
/// value against. Carried between runs over windows of one series, so a window shorter than the
/// series' seasonality does not take each daily peak for a record.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ValueRange {
    /// Smallest value.
    pub lo: f64,
    /// Largest value.
    pub hi: f64,
}

impl ValueRange {
    /// The range of the finite values, `None` when there are none.
    pub fn of(values: &[f64]) -> Option<Self> {
        values.iter().fold(None, |r, &v| Self::extend(r, v))
    }

    /// `r` widened to take `v` (non-finite values change nothing).
    pub fn extend(r: Option<Self>, v: f64) -> Option<Self> {
        if !v.is_finite() {
            return r;
        }
        Some(match r {
            Some(r) => Self {
                lo: r.lo.min(v),
                hi: r.hi.max(v),
            },
            None => Self { lo: v, hi: v },
        })
    }

    /// The smallest range holding both.
    pub fn union(a: Option<Self>, b: Option<Self>) -> Option<Self> {
        match (a, b) {
            (Some(a), b) => Self::extend(Self::extend(b, a.lo), a.hi),
            (None, b) => b,
        }
    }
}

/// Whether each value lies beyond the range seen before it, widened by `tolerance` times that
/// range on each side (NAB's HTM detector uses 5%). `seen` is the range the series took before
/// `values`, if known. The first `warmup` points only build the range; non-finite values are
/// ignored.
pub fn spatial_novelty(
    values: &[f64],
    tolerance: f64,
    warmup: usize,
    seen: Option<ValueRange>,
) -> Vec<bool> {
    let mut out = vec![false; values.len()];
    // a range from outside (a state file) is used only when it is one
    let mut range = seen.filter(|r| r.lo.is_finite() && r.hi.is_finite() && r.lo <= r.hi);
    for (t, &v) in values.iter().enumerate() {
        if !v.is_finite() {
            continue;
        }
        if let Some(r) = range
            && t >= warmup
            && r.hi > r.lo
        {
            let pad = (r.hi - r.lo) * tolerance;
            out[t] = v > r.hi + pad || v < r.lo - pad;
        }
        range = ValueRange::extend(range, v);
    }
    out
}

/// Set to 1 the scores of points beyond the range seen before them (`seen`, then the earlier
/// values; widened by `tolerance`, no warm-up): HTM's spatial anomaly, which overrides whatever
/// the likelihood said.
pub fn force_spatial_novelty(
    scores: &mut [f64],
    values: &[f64],
    tolerance: f64,
    seen: Option<ValueRange>,
) {
    for (s, novel) in scores
        .iter_mut()
        .zip(spatial_novelty(values, tolerance, 0, seen))
    {
        if novel {
            *s = 1.0;
        }
    }
}

/// Keep a score only where it exceeds every score of the previous `cooldown` points (else 0):
/// whatever threshold is later chosen, an excursion fires at its start and again only if it
/// escalates, instead of at every point of it.
pub fn first_detections(scores: &[f64], cooldown: usize) -> Vec<f64> {
    let mut out = vec![0.0; scores.len()];
    // monotone deque of indices with decreasing scores over the last `cooldown` points
    let mut dq: std::collections::VecDeque<usize> = Default::default();
    for (t, &s) in scores.iter().enumerate() {
        let s = if s.is_finite() { s } else { 0.0 };
        while dq.front().is_some_and(|&i| i + cooldown < t) {
            dq.pop_front();
        }
        let prev_max = dq
            .front()
            .map(|&i| {
                if scores[i].is_finite() {
                    scores[i]
                } else {
                    0.0
                }
            })
            .unwrap_or(0.0);
        if cooldown == 0 || s > prev_max {
            out[t] = s;
        }
        while dq.back().is_some_and(|&i| {
            let b = scores[i];
            !b.is_finite() || b <= s
        }) {
            dq.pop_back();
        }
        dq.push_back(t);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_tail_matches_known_values() {
        assert!((normal_tail(0.0) - 0.5).abs() < 1e-7);
        assert!((normal_tail(1.96) - 0.024_997_9).abs() < 1e-6);
        assert!((normal_tail(-1.0) - 0.841_344_7).abs() < 1e-6);
        // far tail: Q(6) = 9.866e-10, relative accuracy kept
        assert!((normal_tail(6.0) / 9.865_876e-10 - 1.0).abs() < 1e-4);
    }

    #[test]
    fn log_likelihood_scale() {
        assert!((log_likelihood(1.0 - 1e-5) - 0.5).abs() < 1e-6);
        assert!(log_likelihood(0.5) < 0.04);
        assert_eq!(log_likelihood(f64::NAN), 0.0);
        assert!((log_likelihood(1.0) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn value_range_ignores_non_finite_and_unions() {
        assert_eq!(ValueRange::of(&[f64::NAN, f64::INFINITY]), None);
        let r = ValueRange::of(&[3.0, f64::NAN, -1.0, 2.0]);
        assert_eq!(r, Some(ValueRange { lo: -1.0, hi: 3.0 }));
        let other = Some(ValueRange { lo: 0.0, hi: 7.0 });
        assert_eq!(
            ValueRange::union(r, other),
            Some(ValueRange { lo: -1.0, hi: 7.0 })
        );
        assert_eq!(ValueRange::union(None, other), other);
        assert_eq!(ValueRange::union(other, None), other);
    }

    #[test]
    fn spatial_novelty_judges_against_the_range_seen_before() {
        let v = [5.0, 6.0, 9.0, 4.0];
        // alone, 9 and 4 leave the range of the values before them
        assert_eq!(
            spatial_novelty(&v, 0.05, 0, None),
            vec![false, false, true, true]
        );
        // after a series that already went from 0 to 10, nothing here is new
        let seen = Some(ValueRange { lo: 0.0, hi: 10.0 });
        assert_eq!(spatial_novelty(&v, 0.05, 0, seen), vec![false; 4]);
        // 10.4 is within the 5% tolerance of 0..10, 10.6 and -0.6 are not
        assert_eq!(spatial_novelty(&[10.4], 0.05, 0, seen), vec![false]);
        assert_eq!(spatial_novelty(&[10.6], 0.05, 0, seen), vec![true]);
        assert_eq!(spatial_novelty(&[-0.6], 0.05, 0, seen), vec![true]);
        // a range that is not one (a damaged state file) is ignored, not trusted
        let bad = Some(ValueRange { lo: 10.0, hi: 0.0 });
        assert_eq!(
            spatial_novelty(&v, 0.05, 0, bad),
            vec![false, false, true, true]
        );
    }

    #[test]
    fn first_detections_keeps_excursion_starts() {
        let s = [0.0, 0.9, 0.8, 0.95, 0.1, 0.0, 0.0, 0.7];
        assert_eq!(
            first_detections(&s, 3),
            vec![0.0, 0.9, 0.0, 0.95, 0.0, 0.0, 0.0, 0.7]
        );
        assert_eq!(first_detections(&s, 0), s.to_vec());
        // a value that is no longer in the cooldown window does not suppress
        assert_eq!(first_detections(&[0.9, 0.0, 0.5], 1), vec![0.9, 0.0, 0.5]);
    }
}
