//! Split-conformal calibration of forecast residuals (Vovk et al. 2005; Lei et al. 2018,
//! "Distribution-free predictive inference for regression", §2.2; locally weighted variant
//! §5.2).
//!
//! Nonconformity is the residual divided by a local scale, `s_t = (y_t − ŷ_t) / σ_t`, oriented
//! by the alert [`Direction`]. On `n` held-out scores the band quantile is the
//! `⌈(n+1)(1−α)⌉`-th smallest, which covers a new exchangeable point with probability
//! `≥ 1 − α`. When `n` is too small for that rank the largest score is used (documented
//! under-coverage) — never NaN.

use serde::{Deserialize, Serialize};

use crate::error::{DetectError, Result};

/// Which deviations count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Only values above the band (latency, error ratio).
    Above,
    /// Only values below the band (throughput, request rate drops).
    Below,
    /// Either side.
    #[default]
    Both,
}

impl Direction {
    /// The oriented nonconformity of a standardised residual `z = (y − ŷ)/σ`.
    pub fn orient(self, z: f64) -> f64 {
        match self {
            Direction::Above => z,
            Direction::Below => -z,
            Direction::Both => z.abs(),
        }
    }
}

/// The `⌈(n+1)(1−α)⌉`-th smallest of `scores` (clamped to the largest); `None` when empty.
/// `scores` need not be sorted; non-finite values are ignored.
pub fn conformal_quantile(scores: &[f64], alpha: f64) -> Option<f64> {
    let mut s: Vec<f64> = scores.iter().copied().filter(|v| v.is_finite()).collect();
    if s.is_empty() {
        return None;
    }
    s.sort_by(f64::total_cmp);
    Some(quantile_sorted(&s, alpha))
}

/// As [`conformal_quantile`] for already sorted finite scores (non-empty).
pub fn quantile_sorted(sorted: &[f64], alpha: f64) -> f64 {
    let n = sorted.len();
    let rank = ((n as f64 + 1.0) * (1.0 - alpha)).ceil().max(1.0) as usize;
    sorted[rank.min(n).saturating_sub(1)]
}

/// Conformal anomaly score in `[0, 1)`: one minus the conformal p-value
/// `p = (1 + #{cal ≥ s}) / (n + 1)`. Beyond the largest calibration score `p` keeps shrinking
/// as `max/s · 1/(n+1)`, so extreme points stay ordered (needed by threshold sweeps).
pub fn conformal_score(sorted_cal: &[f64], s: f64) -> f64 {
    let n = sorted_cal.len();
    if n == 0 || !s.is_finite() {
        return 0.0;
    }
    // Number of calibration scores >= s.
    let below = sorted_cal.partition_point(|c| *c < s);
    let at_or_above = n - below;
    let p = if at_or_above > 0 {
        (1 + at_or_above) as f64 / (n + 1) as f64
    } else {
        let max = sorted_cal[n - 1];
        let ratio = if s > 0.0 && max > 0.0 {
            (max / s).clamp(0.0, 1.0)
        } else {
            1.0
        };
        ratio / (n + 1) as f64
    };
    (1.0 - p).clamp(0.0, 1.0)
}

/// A fixed calibration set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibrator {
    sorted: Vec<f64>,
    direction: Direction,
    alpha: f64,
}

impl Calibrator {
    /// Calibrate on held-out standardised residuals `z` (NaN ignored).
    pub fn fit(z: &[f64], direction: Direction, alpha: f64) -> Result<Self> {
        check_alpha(alpha)?;
        let mut sorted: Vec<f64> = z
            .iter()
            .filter(|v| v.is_finite())
            .map(|v| direction.orient(*v))
            .collect();
        if sorted.is_empty() {
            return Err(DetectError::Empty {
                what: "calibration residuals",
            });
        }
        sorted.sort_by(f64::total_cmp);
        Ok(Self {
            sorted,
            direction,
            alpha,
        })
    }

    /// Number of calibration scores.
    pub fn len(&self) -> usize {
        self.sorted.len()
    }

    /// Whether there are none (never true for a fitted calibrator).
    pub fn is_empty(&self) -> bool {
        self.sorted.is_empty()
    }

    /// The band half-width in standardised units.
    pub fn quantile(&self) -> f64 {
        quantile_sorted(&self.sorted, self.alpha).max(0.0)
    }

    /// Anomaly score of a standardised residual.
    pub fn score(&self, z: f64) -> f64 {
        conformal_score(&self.sorted, self.direction.orient(z))
    }
}

/// Refuse `alpha` outside `(0, 1)`.
pub fn check_alpha(alpha: f64) -> Result<()> {
    if !(alpha > 0.0 && alpha < 1.0) {
        return Err(DetectError::InvalidParameter {
            name: "alpha",
            reason: format!("must be in (0, 1), got {alpha}"),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantile_rank() {
        let s: Vec<f64> = (1..=9).map(f64::from).collect();
        // n = 9, alpha = 0.1: rank ceil(10 * 0.9) = 9 -> 9.0
        assert_eq!(conformal_quantile(&s, 0.1), Some(9.0));
        // alpha = 0.5: rank 5 -> 5.0
        assert_eq!(conformal_quantile(&s, 0.5), Some(5.0));
        // too few points: clamp to max
        assert_eq!(conformal_quantile(&[1.0, 2.0], 0.01), Some(2.0));
        assert_eq!(conformal_quantile(&[], 0.1), None);
    }

    #[test]
    fn scores_are_monotone() {
        let cal: Vec<f64> = (0..100).map(|i| f64::from(i) / 10.0).collect();
        let mut last = -1.0;
        for s in [0.0, 1.0, 5.0, 9.9, 10.0, 20.0, 1e6] {
            let v = conformal_score(&cal, s);
            assert!(v >= last && (0.0..1.0).contains(&v), "{s} -> {v}");
            last = v;
        }
        assert_eq!(conformal_score(&cal, f64::NAN), 0.0);
    }
}
