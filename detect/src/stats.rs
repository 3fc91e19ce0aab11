//! Small statistics toolbox shared by the detectors: tail probabilities computed through
//! survival functions (accurate for tiny p-values), Benjamini-Hochberg adjustment, ranking
//! metrics (AUROC, average precision, precision at a flag rate) and quantiles.

use crate::error::{DetectError, Result};
use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};
use statrs::function::{beta, gamma};

/// Survival function of the F distribution, `P(F(d1, d2) > x)`.
///
/// Computed as the regularized incomplete beta `I_{d2/(d2 + d1 x)}(d2/2, d1/2)`, the same
/// identity as scipy's `fdtrc` (used by `scipy.stats.f.sf`); evaluating the small tail directly
/// (instead of `1 - cdf`) keeps tiny p-values accurate.
pub fn f_sf(x: f64, d1: f64, d2: f64) -> Result<f64> {
    if !(d1 > 0.0 && d2 > 0.0) || x.is_nan() {
        return Err(DetectError::Numerical {
            what: "F survival function",
        });
    }
    if x <= 0.0 {
        return Ok(1.0);
    }
    if x.is_infinite() {
        return Ok(0.0);
    }
    let z = d2 / (d2 + d1 * x);
    let p = beta::checked_beta_reg(d2 / 2.0, d1 / 2.0, z).map_err(|_| DetectError::Numerical {
        what: "F survival function",
    })?;
    finite_prob(p, "F survival function")
}

/// Survival function of the chi-squared distribution, `P(chi2(df) > x)`, as the regularized
/// upper incomplete gamma `Q(df/2, x/2)` (scipy `chdtrc`).
pub fn chi2_sf(x: f64, df: f64) -> Result<f64> {
    if !(df > 0.0) || x.is_nan() {
        return Err(DetectError::Numerical {
            what: "chi-squared survival function",
        });
    }
    if x <= 0.0 {
        return Ok(1.0);
    }
    if x.is_infinite() {
        return Ok(0.0);
    }
    let p = gamma::checked_gamma_ur(df / 2.0, x / 2.0).map_err(|_| DetectError::Numerical {
        what: "chi-squared survival function",
    })?;
    finite_prob(p, "chi-squared survival function")
}

/// Standard normal CDF `Phi(x) = erfc(-x / sqrt 2) / 2` (accurate in the lower tail; libm's
/// musl-derived `erfc`, within an ulp of scipy's `ndtr`).
pub fn normal_cdf(x: f64) -> f64 {
    0.5 * libm::erfc(-x / std::f64::consts::SQRT_2)
}

/// Quantile `q` of Student's t with `df` degrees of freedom (for confidence intervals).
pub fn student_t_quantile(q: f64, df: f64) -> Result<f64> {
    let t = StudentsT::new(0.0, 1.0, df).map_err(|_| DetectError::Numerical {
        what: "Student t quantile",
    })?;
    let v = t.inverse_cdf(q);
    if v.is_finite() {
        Ok(v)
    } else {
        Err(DetectError::Numerical {
            what: "Student t quantile",
        })
    }
}

fn finite_prob(p: f64, what: &'static str) -> Result<f64> {
    if p.is_finite() {
        Ok(p.clamp(0.0, 1.0))
    } else {
        Err(DetectError::Numerical { what })
    }
}

/// Benjamini-Hochberg adjusted p-values (false discovery rate), in the input order.
///
/// Same definition as statsmodels `multipletests(method="fdr_bh")`: sort ascending,
/// `q_(i) = min_{j >= i} p_(j) * m / j`, capped at 1. Reference: Benjamini & Hochberg (1995),
/// "Controlling the false discovery rate", JRSS B 57(1).
pub fn benjamini_hochberg(p_values: &[f64]) -> Result<Vec<f64>> {
    for (index, p) in p_values.iter().enumerate() {
        if !(0.0..=1.0).contains(p) {
            return Err(DetectError::NonFinite {
                field: "p_values",
                index,
            });
        }
    }
    let m = p_values.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p_values[a].total_cmp(&p_values[b]).then(a.cmp(&b)));
    let mut adjusted = vec![0.0; m];
    let mut running_min = 1.0_f64;
    for rank in (0..m).rev() {
        let idx = order[rank];
        let q = p_values[idx] * m as f64 / (rank + 1) as f64;
        running_min = running_min.min(q);
        adjusted[idx] = running_min.min(1.0);
    }
    Ok(adjusted)
}

/// Ranking quality of a score against binary labels (`true` = positive).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RankingMetrics {
    /// Area under the ROC curve (ties count one half).
    pub auroc: f64,
    /// Area under the precision-recall curve, as average precision.
    pub auc_pr: f64,
    /// Precision among the top `flag_rate` share of examples by score.
    pub precision_at_flag_rate: f64,
    /// The flag rate used.
    pub flag_rate: f64,
}

fn check_scores(scores: &[f64], labels: &[bool]) -> Result<(usize, usize)> {
    if scores.len() != labels.len() {
        return Err(DetectError::LengthMismatch {
            left: "scores",
            left_len: scores.len(),
            right: "labels",
            right_len: labels.len(),
        });
    }
    crate::error::check_finite("scores", scores)?;
    let pos = labels.iter().filter(|l| **l).count();
    let neg = labels.len() - pos;
    if pos == 0 || neg == 0 {
        return Err(DetectError::DegenerateData {
            what: "ranking metrics",
            reason: "need at least one positive and one negative label".into(),
        });
    }
    Ok((pos, neg))
}

/// Area under the ROC curve via the Mann-Whitney U statistic with mid-ranks for ties
/// (Hanley & McNeil 1982; equals sklearn `roc_auc_score`).
pub fn auroc(scores: &[f64], labels: &[bool]) -> Result<f64> {
    let (pos, neg) = check_scores(scores, labels)?;
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[a].total_cmp(&scores[b]));
    let mut rank_sum_pos = 0.0;
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && scores[order[j + 1]] == scores[order[i]] {
            j += 1;
        }
        // ranks i+1 ..= j+1 share the mid-rank
        let mid = (i + j + 2) as f64 / 2.0;
        for &idx in &order[i..=j] {
            if labels[idx] {
                rank_sum_pos += mid;
            }
        }
        i = j + 1;
    }
    let u = rank_sum_pos - (pos * (pos + 1)) as f64 / 2.0;
    Ok(u / (pos as f64 * neg as f64))
}

/// Average precision `sum_k (R_k - R_{k-1}) P_k` over distinct score thresholds, highest first
/// (sklearn `average_precision_score`), used as the area under the precision-recall curve.
pub fn average_precision(scores: &[f64], labels: &[bool]) -> Result<f64> {
    let (pos, _) = check_scores(scores, labels)?;
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
    let (mut tp, mut fp) = (0usize, 0usize);
    let mut ap = 0.0;
    let mut prev_recall = 0.0;
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && scores[order[j + 1]] == scores[order[i]] {
            j += 1;
        }
        for &idx in &order[i..=j] {
            if labels[idx] {
                tp += 1;
            } else {
                fp += 1;
            }
        }
        let recall = tp as f64 / pos as f64;
        let precision = tp as f64 / (tp + fp) as f64;
        ap += (recall - prev_recall) * precision;
        prev_recall = recall;
        i = j + 1;
    }
    Ok(ap)
}

/// Precision among the `ceil(rate * n)` highest-scoring examples. Ties at the cut are broken
/// by input order (stable sort), so the result is deterministic.
pub fn precision_at_flag_rate(scores: &[f64], labels: &[bool], rate: f64) -> Result<f64> {
    check_scores(scores, labels)?;
    if !(rate > 0.0 && rate <= 1.0) {
        return Err(DetectError::InvalidParameter {
            name: "flag_rate",
            reason: format!("must be in (0, 1], got {rate}"),
        });
    }
    let k = ((rate * scores.len() as f64).ceil() as usize).clamp(1, scores.len());
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
    let hits = order[..k].iter().filter(|&&i| labels[i]).count();
    Ok(hits as f64 / k as f64)
}

/// All three ranking metrics at once.
pub fn ranking_metrics(scores: &[f64], labels: &[bool], flag_rate: f64) -> Result<RankingMetrics> {
    Ok(RankingMetrics {
        auroc: auroc(scores, labels)?,
        auc_pr: average_precision(scores, labels)?,
        precision_at_flag_rate: precision_at_flag_rate(scores, labels, flag_rate)?,
        flag_rate,
    })
}

/// Quantile with linear interpolation between order statistics (numpy's default
/// `method="linear"`). `values` need not be sorted; returns `None` when empty.
pub fn quantile(values: &[f64], q: f64) -> Option<f64> {
    if values.is_empty() || !(0.0..=1.0).contains(&q) {
        return None;
    }
    let mut sorted: Vec<f64> = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let pos = q * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    let frac = pos - lo as f64;
    Some(sorted[lo] + (sorted[hi] - sorted[lo]) * frac)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn f_sf_matches_scipy_values() {
        // scipy 1.17: stats.f.sf(3.0, 2, 20) and stats.f.sf(200.0, 4, 1000)
        let p = f_sf(3.0, 2.0, 20.0).unwrap_or(f64::NAN);
        assert!((p - 0.072_538_150_286_405_71).abs() < 1e-12, "{p}");
        let tiny = f_sf(200.0, 4.0, 1000.0).unwrap_or(f64::NAN);
        let want = 5.158_042_018_321_479e-126;
        assert!(((tiny - want) / want).abs() < 1e-8, "{tiny}");
    }

    #[test]
    fn chi2_sf_matches_closed_form() {
        // df = 2: sf(x) = exp(-x/2), also deep in the tail
        for x in [0.5, 3.0, 50.0, 600.0] {
            let p = chi2_sf(x, 2.0).unwrap_or(f64::NAN);
            let want = (-x / 2.0_f64).exp();
            assert!(((p - want) / want).abs() < 1e-12, "x={x} p={p} want={want}");
        }
        assert_eq!(chi2_sf(0.0, 3.0).ok(), Some(1.0));
    }

    #[test]
    fn bh_matches_hand_computed() {
        let p = [0.01, 0.04, 0.03, 0.20];
        let q = benjamini_hochberg(&p).unwrap_or_default();
        // sorted: .01*4/1=.04, .03*4/2=.06, .04*4/3=.0533, .2*4/4=.2 -> cummin from end
        let want = [
            0.04,
            0.053_333_333_333_333_33,
            0.053_333_333_333_333_33,
            0.2,
        ];
        for (a, b) in q.iter().zip(want) {
            assert!((a - b).abs() < 1e-12, "{q:?}");
        }
        assert!(benjamini_hochberg(&[f64::NAN]).is_err());
    }

    #[test]
    fn auroc_and_ap_known_values() {
        let s = [0.1, 0.4, 0.35, 0.8];
        let l = [false, false, true, true];
        assert!((auroc(&s, &l).unwrap_or(0.0) - 0.75).abs() < 1e-12);
        // sklearn average_precision_score -> 0.8333...
        assert!((average_precision(&s, &l).unwrap_or(0.0) - 0.833_333_333_333_333_4).abs() < 1e-12);
        assert!((precision_at_flag_rate(&s, &l, 0.5).unwrap_or(0.0) - 0.5).abs() < 1e-12);
        assert!(auroc(&s, &[true; 4]).is_err());
    }

    #[test]
    fn quantile_linear() {
        assert_eq!(quantile(&[3.0, 1.0, 2.0, 4.0], 0.9), Some(3.7));
        assert_eq!(quantile(&[], 0.5), None);
    }

    proptest! {
        #[test]
        fn bh_is_monotone_and_bounded(p in proptest::collection::vec(0.0f64..=1.0, 1..60)) {
            let q = benjamini_hochberg(&p).unwrap_or_default();
            prop_assert_eq!(q.len(), p.len());
            for (a, b) in p.iter().zip(&q) {
                prop_assert!(*b >= *a - 1e-15 && *b <= 1.0);
            }
            // order preserving: p_i <= p_j implies q_i <= q_j
            for i in 0..p.len() {
                for j in 0..p.len() {
                    if p[i] <= p[j] {
                        prop_assert!(q[i] <= q[j] + 1e-15);
                    }
                }
            }
        }

        #[test]
        fn auroc_in_unit_interval_and_flips(
            s in proptest::collection::vec(-5.0f64..5.0, 2..50),
            seed in 0u64..1000,
        ) {
            let labels: Vec<bool> = (0..s.len()).map(|i| (i as u64 * 2654435761 + seed).is_multiple_of(3)).collect();
            if labels.iter().any(|l| *l) && labels.iter().any(|l| !*l) {
                let a = auroc(&s, &labels).unwrap_or(f64::NAN);
                let neg: Vec<f64> = s.iter().map(|v| -v).collect();
                let b = auroc(&neg, &labels).unwrap_or(f64::NAN);
                prop_assert!((0.0..=1.0).contains(&a));
                prop_assert!((a + b - 1.0).abs() < 1e-12);
            }
        }
    }
}
