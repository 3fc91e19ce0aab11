//! Streaming anomaly likelihood with a periodically re-estimated reference, as the HTM
//! detector of NAB uses it (Ahmad et al., Neurocomputing 262, 2017, §3.3; NAB's
//! `numenta_detector`). Fed one raw score per point, it answers how unusual the recent level
//! of the score is, and differs from the batch [`anomaly_likelihood`](super::anomaly_likelihood)
//! in the ways that matter on NAB:
//!
//! * the reference normal is estimated from the moving averages of up to `historic_window`
//!   past raw scores, skipping the learning period while it is in the window, and re-estimated
//!   only every `reestimation_period` points (so a long excursion does not absorb itself);
//! * the reference mean is floored (`mean_floor`) as well as the variance, so a detector
//!   that was almost always right does not turn its first small miss into a certain anomaly;
//! * the tail is symmetric: a level far *below* the reference mean is unusual too;
//! * a run of red points (tail <= `red`) keeps only its first point red; the rest are
//!   reported at `yellow`, so an excursion alerts once at its start;
//! * while the metric itself has been flat (variance below `flat_variance`), nothing is
//!   unusual (a constant series gives no evidence).
//!
//! The output is the likelihood `1 − tail`; [`log_likelihood`] maps it
//! to a thresholdable score.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::expect::Expectation;
use super::likelihood::{ValueRange, force_spatial_novelty, log_likelihood, normal_tail};
use crate::error::{DetectError, Result};

/// Settings of [`StreamingLikelihood`]. Defaults are HTM's for a given probationary period.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StreamingLikelihoodConfig {
    /// Points whose raw scores are not yet meaningful (the model is learning); they are kept
    /// out of the reference while they are in the historic window.
    pub learning_period: usize,
    /// Further points before the first likelihood (until then: 0.5).
    pub estimation_samples: usize,
    /// Past raw scores the reference is estimated from.
    pub historic_window: usize,
    /// Points between re-estimations of the reference.
    pub reestimation_period: usize,
    /// Raw scores averaged into the current level.
    pub averaging_window: usize,
    /// Floor of the reference mean.
    pub mean_floor: f64,
    /// Floor of the reference variance.
    pub variance_floor: f64,
    /// Tail probability at or below which a point is red.
    pub red: f64,
    /// Tail reported for red points that follow a red point.
    pub yellow: f64,
    /// Metric variance (over the reference window) under which the series counts as flat.
    pub flat_variance: f64,
}

impl StreamingLikelihoodConfig {
    /// HTM's settings for a series with NAB's `probationary` period: half of it learning, the
    /// other half estimation samples, an 8,640-point history re-estimated every 100 points,
    /// 10-point averages, mean floor 0.03, variance floor 3e-4, red at 1e-5, yellow 1e-3.
    pub fn for_probationary(probationary: usize) -> Self {
        let learning = probationary / 2;
        Self {
            learning_period: learning,
            estimation_samples: probationary - learning,
            historic_window: 8640,
            reestimation_period: 100,
            averaging_window: 10,
            mean_floor: 0.03,
            variance_floor: 3e-4,
            red: 1e-5,
            yellow: 1e-3,
            flat_variance: 1.5e-5,
        }
    }

    /// Check the settings are usable.
    pub fn validate(&self) -> Result<()> {
        let bad = |reason: String| {
            Err(DetectError::InvalidParameter {
                name: "streaming likelihood",
                reason,
            })
        };
        if self.historic_window == 0 || self.reestimation_period == 0 || self.averaging_window == 0
        {
            return bad(format!(
                "historic_window, reestimation_period and averaging_window must be >= 1 (got {}, {}, {})",
                self.historic_window, self.reestimation_period, self.averaging_window
            ));
        }
        let probability = |p: f64| p.is_finite() && p > 0.0 && p < 1.0;
        if !(probability(self.red) && probability(self.yellow) && self.red <= self.yellow) {
            return bad(format!(
                "need 0 < red <= yellow < 1 (got {}, {})",
                self.red, self.yellow
            ));
        }
        for (name, v) in [
            ("mean_floor", self.mean_floor),
            ("variance_floor", self.variance_floor),
            ("flat_variance", self.flat_variance),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return bad(format!("{name} must be finite and >= 0 (got {v})"));
            }
        }
        if self.variance_floor == 0.0 {
            return bad("variance_floor must be > 0".into());
        }
        Ok(())
    }
}

/// Reference normal of the averaged raw scores.
#[derive(Debug, Clone, Copy)]
struct Reference {
    mean: f64,
    std: f64,
}

impl Reference {
    /// Broad enough that every score in `[0, 1]` is likely.
    const NULL: Reference = Reference {
        mean: 0.5,
        std: 1e3,
    };

    /// Symmetric tail probability of `x`.
    fn tail(&self, x: f64) -> f64 {
        normal_tail((x - self.mean).abs() / self.std)
    }
}

/// The streaming estimator; feed it with [`StreamingLikelihood::push`], one point at a time.
#[derive(Debug, Clone)]
pub struct StreamingLikelihood {
    cfg: StreamingLikelihoodConfig,
    /// Points pushed so far (finite raw scores only).
    seen: usize,
    /// Past `(metric value, raw score)`, at most `historic_window`.
    history: VecDeque<(f64, f64)>,
    reference: Option<Reference>,
    /// Last `averaging_window` raw scores and their sum.
    recent: VecDeque<f64>,
    recent_sum: f64,
    /// Unfiltered tail of the previous point.
    previous_tail: f64,
}

impl StreamingLikelihood {
    /// A fresh estimator; fails on unusable settings.
    pub fn new(cfg: StreamingLikelihoodConfig) -> Result<Self> {
        cfg.validate()?;
        Ok(Self {
            cfg,
            seen: 0,
            history: VecDeque::with_capacity(cfg.historic_window.min(1 << 14)),
            reference: None,
            recent: VecDeque::with_capacity(cfg.averaging_window + 1),
            recent_sum: 0.0,
            previous_tail: 1.0,
        })
    }

    /// Likelihood (`1 − tail`, in `[0, 1]`) of the point with metric `value` and raw anomaly
    /// score `raw`. A non-finite `raw` or `value` is not scored (0.5) and leaves the state as
    /// it was.
    pub fn push(&mut self, value: f64, raw: f64) -> f64 {
        if !(raw.is_finite() && value.is_finite()) {
            return 0.5;
        }
        let probation = self.cfg.learning_period + self.cfg.estimation_samples;
        let likelihood = if self.seen < probation {
            self.average_in(raw);
            0.5
        } else {
            if self.reference.is_none() || self.seen.is_multiple_of(self.cfg.reestimation_period) {
                self.reestimate();
            }
            let level = self.average_in(raw);
            let reference = self.reference.unwrap_or(Reference::NULL);
            let tail = reference.tail(level);
            let reported = if tail <= self.cfg.red && self.previous_tail <= self.cfg.red {
                self.cfg.yellow
            } else {
                tail
            };
            self.previous_tail = tail;
            (1.0 - reported).clamp(0.0, 1.0)
        };
        self.history.push_back((value, raw));
        if self.history.len() > self.cfg.historic_window {
            self.history.pop_front();
        }
        self.seen += 1;
        likelihood
    }

    /// Add `raw` to the moving average and return the new level.
    fn average_in(&mut self, raw: f64) -> f64 {
        self.recent.push_back(raw);
        self.recent_sum += raw;
        if self.recent.len() > self.cfg.averaging_window {
            self.recent_sum -= self.recent.pop_front().unwrap_or(0.0);
        }
        self.recent_sum / self.recent.len() as f64
    }

    /// Re-estimate the reference from the moving averages over the history, skipping the
    /// learning points still in it; also refresh the previous point's tail under it.
    fn reestimate(&mut self) {
        let shifted_out = self.seen.saturating_sub(self.cfg.historic_window);
        let skip = self
            .seen
            .min(self.cfg.learning_period.saturating_sub(shifted_out));
        let w = self.cfg.averaging_window;
        let mut window: VecDeque<f64> = VecDeque::with_capacity(w + 1);
        let mut sum = 0.0;
        let (mut n, mut mean, mut m2) = (0.0f64, 0.0f64, 0.0f64);
        let (mut vn, mut vmean, mut vm2) = (0.0f64, 0.0f64, 0.0f64);
        let mut last_level = f64::NAN;
        for (i, &(value, raw)) in self.history.iter().enumerate() {
            window.push_back(raw);
            sum += raw;
            if window.len() > w {
                sum -= window.pop_front().unwrap_or(0.0);
            }
            let level = sum / window.len() as f64;
            last_level = level;
            if i < skip {
                continue;
            }
            // Welford, for the averaged scores and for the metric values
            n += 1.0;
            let d = level - mean;
            mean += d / n;
            m2 += d * (level - mean);
            vn += 1.0;
            let dv = value - vmean;
            vmean += dv / vn;
            vm2 += dv * (value - vmean);
        }
        let reference = if n == 0.0 || vm2 / vn < self.cfg.flat_variance {
            Reference::NULL
        } else {
            let variance = (m2 / n).max(self.cfg.variance_floor);
            Reference {
                mean: mean.max(self.cfg.mean_floor),
                std: variance.sqrt(),
            }
        };
        if last_level.is_finite() {
            self.previous_tail = reference.tail(last_level);
        }
        self.reference = Some(reference);
    }
}

/// [`StreamingLikelihood`] over a whole series: likelihood per point of `values` with raw
/// scores `raw` (same length).
pub fn streaming_likelihood(
    values: &[f64],
    raw: &[f64],
    cfg: StreamingLikelihoodConfig,
) -> Result<Vec<f64>> {
    if values.len() != raw.len() {
        return Err(DetectError::LengthMismatch {
            left: "values",
            left_len: values.len(),
            right: "raw scores",
            right_len: raw.len(),
        });
    }
    let mut s = StreamingLikelihood::new(cfg)?;
    Ok(values
        .iter()
        .zip(raw)
        .map(|(v, r)| s.push(*v, *r))
        .collect())
}

/// Settings of [`residual_likelihood_scores`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ResidualLikelihoodConfig {
    /// Standardised residual `|y − ŷ| / σ` at which the raw score saturates at 1.
    pub saturation: f64,
    /// Values beyond the range seen so far, widened by this fraction of it, score 1 (HTM's
    /// spatial anomaly, 5%); `None` disables.
    pub spatial_tolerance: Option<f64>,
    /// The likelihood over the raw scores.
    pub likelihood: StreamingLikelihoodConfig,
}

impl ResidualLikelihoodConfig {
    /// Saturation at 4 scales, spatial tolerance 5%, HTM's likelihood settings for a series
    /// whose first `probationary` points are for learning.
    pub fn for_probationary(probationary: usize) -> Self {
        Self {
            saturation: 4.0,
            spatial_tolerance: Some(0.05),
            likelihood: StreamingLikelihoodConfig::for_probationary(probationary),
        }
    }
}

/// Final anomaly scores in `[0, 1]` for a detector's expectations, HTM-style: the raw score
/// `min(1, |y_t − ŷ_t| / (saturation·σ_t))` (0 before the expectations start) goes through
/// the [`StreamingLikelihood`], is log-scaled by [`log_likelihood`] (0.5 ↔ tail `1e−5`), and
/// points beyond the range seen so far (`seen`, the range before `values` if known, then the
/// earlier values) score 1. Points with a non-finite value or expectation, or a scale that is not
/// finite and positive, are not scored (0).
pub fn residual_likelihood_scores(
    values: &[f64],
    exp: &Expectation,
    cfg: &ResidualLikelihoodConfig,
    seen: Option<ValueRange>,
) -> Result<Vec<f64>> {
    if !(cfg.saturation.is_finite() && cfg.saturation > 0.0) {
        return Err(DetectError::InvalidParameter {
            name: "saturation",
            reason: format!("must be finite and > 0 (got {})", cfg.saturation),
        });
    }
    if let Some(t) = cfg.spatial_tolerance
        && !(t.is_finite() && t >= 0.0)
    {
        return Err(DetectError::InvalidParameter {
            name: "spatial_tolerance",
            reason: format!("must be finite and >= 0 (got {t})"),
        });
    }
    let n = values.len();
    if exp.expected.len() != exp.scale.len() || exp.start + exp.expected.len() != n {
        return Err(DetectError::LengthMismatch {
            left: "values",
            left_len: n,
            right: "expectations (start + expected)",
            right_len: exp.start + exp.expected.len(),
        });
    }
    let mut raw = vec![0.0; n];
    for (i, (e, s)) in exp.expected.iter().zip(&exp.scale).enumerate() {
        let t = exp.start + i;
        let z = (values[t] - e).abs() / (cfg.saturation * s);
        // a NaN residual or an unusable scale leaves the point unscored (`f64::min` would
        // turn NaN into 1)
        raw[t] = if z.is_nan() || !(s.is_finite() && *s > 0.0) {
            f64::NAN
        } else {
            z.min(1.0)
        };
    }
    let mut estimator = StreamingLikelihood::new(cfg.likelihood)?;
    let mut out: Vec<f64> = values
        .iter()
        .zip(&raw)
        .map(|(v, r)| {
            if v.is_finite() && r.is_finite() {
                log_likelihood(estimator.push(*v, *r))
            } else {
                0.0
            }
        })
        .collect();
    if let Some(tol) = cfg.spatial_tolerance {
        force_spatial_novelty(&mut out, values, tol, seen);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> StreamingLikelihoodConfig {
        StreamingLikelihoodConfig::for_probationary(200)
    }

    /// Deterministic noise in [0, 1).
    fn noise(i: usize) -> f64 {
        let x = (i as u64)
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((x >> 11) as f64) / ((1u64 << 53) as f64)
    }

    #[test]
    fn probation_reports_half_and_ordinary_points_stay_low() {
        let n = 1000;
        let values: Vec<f64> = (0..n).map(|i| (i as f64 * 0.1).sin()).collect();
        let raw: Vec<f64> = (0..n).map(|i| 0.1 * noise(i)).collect();
        let l = streaming_likelihood(&values, &raw, cfg()).unwrap_or_else(|e| panic!("{e}"));
        assert!(l[..200].iter().all(|v| *v == 0.5));
        let worst = l[200..].iter().cloned().fold(0.0, f64::max);
        assert!(log_likelihood(worst) < 0.5, "worst {worst}");
    }

    #[test]
    fn a_burst_is_red_once_then_yellow() {
        let n = 800;
        let values: Vec<f64> = (0..n).map(|i| (i as f64 * 0.1).sin()).collect();
        let mut raw: Vec<f64> = (0..n).map(|i| 0.05 * noise(i)).collect();
        for r in &mut raw[600..620] {
            *r = 1.0;
        }
        let l = streaming_likelihood(&values, &raw, cfg()).unwrap_or_else(|e| panic!("{e}"));
        let s: Vec<f64> = l.iter().map(|v| log_likelihood(*v)).collect();
        let red: Vec<usize> = (0..n).filter(|i| s[*i] >= 0.5).collect();
        assert_eq!(red.len(), 1, "one red point, got {red:?}");
        assert!((600..605).contains(&red[0]), "red at {}", red[0]);
        // the rest of the burst is reported at the yellow level (tail 1e-3 -> 0.3)
        assert!((s[red[0] + 3] - 0.3).abs() < 1e-3, "{}", s[red[0] + 3]);
        assert!(s[..600].iter().all(|v| *v < 0.5));
    }

    #[test]
    fn level_far_below_the_reference_is_unusual_too() {
        let n = 900;
        let values: Vec<f64> = (0..n).map(|i| (i as f64 * 0.1).sin()).collect();
        let mut raw: Vec<f64> = (0..n).map(|i| 0.6 + 0.02 * noise(i)).collect();
        for r in &mut raw[700..] {
            *r = 0.0;
        }
        let l = streaming_likelihood(&values, &raw, cfg()).unwrap_or_else(|e| panic!("{e}"));
        assert!(l[700..720].iter().any(|v| log_likelihood(*v) >= 0.5));
    }

    #[test]
    fn flat_metric_is_never_unusual() {
        let values = vec![3.0; 700];
        let mut raw: Vec<f64> = (0..700).map(|i| 0.05 * noise(i)).collect();
        raw[500] = 1.0;
        let l = streaming_likelihood(&values, &raw, cfg()).unwrap_or_else(|e| panic!("{e}"));
        assert!(l.iter().all(|v| log_likelihood(*v) < 0.1));
    }

    #[test]
    fn bad_input_is_an_error_or_unscored() {
        assert!(streaming_likelihood(&[1.0], &[0.5, 0.5], cfg()).is_err());
        let mut c = cfg();
        c.red = 0.5;
        c.yellow = 0.1;
        assert!(StreamingLikelihood::new(c).is_err());
        let mut s = StreamingLikelihood::new(cfg()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.push(1.0, f64::NAN), 0.5);
        assert_eq!(s.push(f64::INFINITY, 0.3), 0.5);
        assert_eq!(s.seen, 0);
    }

    #[test]
    fn residual_scores_fire_on_a_burst_inside_the_range() {
        let n = 1200;
        let truth: Vec<f64> = (0..n).map(|i| (i as f64 * 0.05).sin()).collect();
        let mut values: Vec<f64> = truth
            .iter()
            .enumerate()
            .map(|(i, v)| v + 0.1 * (noise(i) - 0.5))
            .collect();
        // a burst well inside the range seen so far: only the residuals show it
        let burst = (900..906).find(|t| truth[*t].abs() < 0.5).unwrap_or(900);
        for v in &mut values[burst..burst + 6] {
            *v += 0.6;
        }
        values[1100] = 5.0; // beyond the range: spatial novelty
        let exp = Expectation {
            start: 10,
            expected: truth[10..].to_vec(),
            scale: vec![0.05; n - 10],
        };
        let cfg = ResidualLikelihoodConfig::for_probationary(180);
        let s =
            residual_likelihood_scores(&values, &exp, &cfg, None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.len(), n);
        assert!(s.iter().all(|v| (0.0..=1.0).contains(v)));
        let before = s[180..burst].iter().cloned().fold(0.0, f64::max);
        assert!(before < 0.5, "quiet part peaks at {before}");
        let during = s[burst..burst + 6].iter().cloned().fold(0.0, f64::max);
        assert!(during >= 0.5, "burst peaks at {during}");
        assert_eq!(s[1100], 1.0);
    }

    #[test]
    fn residual_scores_reject_bad_settings_and_skip_gaps() {
        let values = vec![1.0, 2.0, f64::NAN, 4.0];
        let exp = Expectation {
            start: 1,
            expected: vec![2.0, f64::NAN, 4.0],
            scale: vec![1.0; 3],
        };
        let mut cfg = ResidualLikelihoodConfig::for_probationary(0);
        let s =
            residual_likelihood_scores(&values, &exp, &cfg, None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s[2], 0.0);
        assert!(s.iter().all(|v| v.is_finite()));
        let short = Expectation {
            start: 0,
            expected: vec![1.0],
            scale: vec![1.0],
        };
        assert!(residual_likelihood_scores(&values, &short, &cfg, None).is_err());
        cfg.saturation = 0.0;
        assert!(residual_likelihood_scores(&values, &exp, &cfg, None).is_err());
        cfg.saturation = 4.0;
        cfg.spatial_tolerance = Some(f64::NAN);
        assert!(residual_likelihood_scores(&values, &exp, &cfg, None).is_err());
    }
}
