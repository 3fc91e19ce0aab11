//! From expectations to calibrated bands, anomaly scores, breaches and sustained alerts.

use serde::{Deserialize, Serialize};

use super::conformal::{Direction, check_alpha, conformal_score, quantile_sorted};
use super::expect::{self, Expectation};
use super::likelihood::ValueRange;
use super::streaming_likelihood::{ResidualLikelihoodConfig, residual_likelihood_scores};
use super::sustained::{Alert, SustainedConfig, sustained_alerts};
use crate::error::{DetectError, Result};
use crate::forecast::TrainedModel;
use crate::forecast::input::fill_gaps;

/// Which expectation model a detector uses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DetectorKind {
    /// N-BEATS forecasts, one-step or from [`AnomalyConfig::forecast_origin`] steps before (needs
    /// a trained model; falls back to median/MAD without one).
    NBeats,
    /// `ŷ_t = y_{t−season}`, scale from the last `window` seasonal differences.
    SeasonalNaive {
        /// Seasonal period in points.
        season: usize,
        /// Points in the scale estimate.
        window: usize,
    },
    /// Rolling mean and standard deviation of the last `window` points.
    RollingZScore {
        /// Window in points.
        window: usize,
    },
    /// Rolling median and MAD of the last `window` points.
    RollingMedianMad {
        /// Window in points.
        window: usize,
    },
}

/// How residuals are calibrated.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Calibration {
    /// Split conformal: the first `points` scored points form the calibration set and are not
    /// scored themselves.
    Split {
        /// Calibration points.
        points: usize,
    },
    /// Online split conformal: each point is calibrated on the previous `window` residuals
    /// (adapts to drift; points with fewer than `min_points` before them are not scored).
    Rolling {
        /// Calibration window.
        window: usize,
        /// Minimum calibration points before scoring starts.
        min_points: usize,
        /// Keep points that breached the band out of later calibration, so one anomaly does
        /// not widen the band and mask the next one. Caution: it ratchets the band narrower on
        /// clean data (more alerts), so it is off by default.
        exclude_breaches: bool,
    },
    /// Online conformal calibration that trims instead of absorbing: each residual enters the
    /// pool of the last `window` residuals clipped at `clip` times the pool's 90% quantile
    /// (winsorised). A burst of anomalies therefore cannot widen the band far enough to mask
    /// the next one, while a genuine change of scale still moves the 90% quantile (which needs
    /// more than 10% of the pool to shift) and the band with it. Scores use the same clipped
    /// pool.
    RollingRobust {
        /// Calibration window.
        window: usize,
        /// Minimum calibration points before scoring starts.
        min_points: usize,
        /// Clip factor over the pool's 90% quantile (`>= 1`; 2.5 keeps the 99.5% quantile of
        /// Gaussian residuals, 2.8σ, well inside the cap of 4.1σ).
        clip: f64,
    },
}

impl Calibration {
    /// The recommended online calibration: [`Calibration::RollingRobust`] over `window`
    /// residuals, clip 2.5, scoring after 30 points.
    pub fn robust(window: usize) -> Self {
        Calibration::RollingRobust {
            window,
            min_points: 30,
            clip: 2.5,
        }
    }
}

/// A complete single-series detector.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnomalyConfig {
    /// Expectation model.
    pub detector: DetectorKind,
    /// Which deviations count.
    pub direction: Direction,
    /// Miscoverage of the band (e.g. 0.01: 99% band).
    pub alpha: f64,
    /// Calibration scheme.
    pub calibration: Calibration,
    /// Sustained-alert rule.
    pub sustained: SustainedConfig,
    /// N-BEATS only: compare each point with the forecast made this many steps before it
    /// (`1..=H`; [`expect::nbeats_k_step`]). 1 is the one-step forecast; 2 keeps the first point
    /// of an excursion out of the lookback of the second's forecast (best on NAB).
    #[serde(default = "one")]
    pub forecast_origin: usize,
}

fn one() -> usize {
    1
}

impl Default for AnomalyConfig {
    /// Rolling median/MAD over 60 points, both directions, 99% band calibrated on the last 500
    /// residuals, 3-of-5 sustained alerts.
    fn default() -> Self {
        Self {
            detector: DetectorKind::RollingMedianMad { window: 60 },
            direction: Direction::Both,
            alpha: 0.01,
            calibration: Calibration::Rolling {
                window: 500,
                min_points: 30,
                exclude_breaches: false,
            },
            sustained: SustainedConfig::default(),
            forecast_origin: 1,
        }
    }
}

/// Per-point output for indices `start..n`; warm-up points are not listed. No field is ever
/// NaN.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoredSeries {
    /// Index of the first entry.
    pub start: usize,
    /// Expected values.
    pub expected: Vec<f64>,
    /// Lower band edge.
    pub lower: Vec<f64>,
    /// Upper band edge.
    pub upper: Vec<f64>,
    /// Anomaly score in `[0, 1)` (1 − conformal p-value); 0 for unscored points.
    pub score: Vec<f64>,
    /// Whether the value is outside the band in the configured direction.
    pub breach: Vec<bool>,
    /// Whether the input sample was missing (NaN/inf) and carried forward.
    pub missing: Vec<bool>,
}

/// Result of [`detect`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnomalyReport {
    /// The detector actually used (after any fallback).
    pub detector: DetectorKind,
    /// Why the configured detector was replaced, if it was.
    pub fallback: Option<String>,
    /// Per-point scores and bands.
    pub scored: ScoredSeries,
    /// Sustained alerts (indices into the input).
    pub alerts: Vec<Alert>,
    /// HTM-style likelihood score in `[0, 1]` per input point
    /// ([`residual_likelihood_scores`] with its defaults and NAB's probationary period of the
    /// input, 15% up to 750 points); 0.5 or more is a tail of `1e−5` or less, or a value beyond
    /// the range seen so far. 0 for warm-up and missing points.
    pub likelihood: Vec<f64>,
    /// The range of the finite input values and of `seen` ([`detect_continued`]): what the
    /// next window of the same series should be judged against.
    #[serde(default)]
    pub range: Option<ValueRange>,
}

/// Default band half-width (in local scales) used before calibration has enough points.
pub const UNCALIBRATED_Q: f64 = 3.0;

/// Calibrate and score `values` (finite; `missing` marks repaired samples) against `exp`.
pub fn score_expectation(
    values: &[f64],
    missing: &[bool],
    exp: &Expectation,
    direction: Direction,
    alpha: f64,
    calibration: Calibration,
) -> Result<ScoredSeries> {
    check_alpha(alpha)?;
    let n = values.len();
    if exp.start > n || exp.expected.len() != n - exp.start || exp.scale.len() != n - exp.start {
        return Err(DetectError::LengthMismatch {
            left: "expectation",
            left_len: exp.expected.len(),
            right: "values after warm-up",
            right_len: n.saturating_sub(exp.start),
        });
    }
    let m = n - exp.start;
    let z: Vec<f64> = (0..m)
        .map(|i| {
            let t = exp.start + i;
            let s = direction.orient((values[t] - exp.expected[i]) / exp.scale[i]);
            if s.is_finite() && !missing[t] {
                s
            } else {
                f64::NAN
            }
        })
        .collect();
    let mut out = ScoredSeries {
        start: exp.start,
        expected: exp.expected.clone(),
        lower: Vec::with_capacity(m),
        upper: Vec::with_capacity(m),
        score: Vec::with_capacity(m),
        breach: Vec::with_capacity(m),
        missing: missing[exp.start..].to_vec(),
    };
    let push = |out: &mut ScoredSeries, i: usize, q: f64, score: f64| {
        let half = q * exp.scale[i];
        let (lo, hi) = (exp.expected[i] - half, exp.expected[i] + half);
        out.lower
            .push(if lo.is_finite() { lo } else { exp.expected[i] });
        out.upper
            .push(if hi.is_finite() { hi } else { exp.expected[i] });
        out.score.push(score);
        out.breach.push(z[i].is_finite() && z[i] > q && score > 0.0);
    };
    match calibration {
        Calibration::Split { points } => {
            let cal_end = points.min(m);
            let mut cal: Vec<f64> = z[..cal_end]
                .iter()
                .copied()
                .filter(|v| v.is_finite())
                .collect();
            cal.sort_by(f64::total_cmp);
            let q = if cal.is_empty() {
                UNCALIBRATED_Q
            } else {
                quantile_sorted(&cal, alpha).max(0.0)
            };
            for (i, zi) in z.iter().enumerate() {
                let score = if i < cal_end || !zi.is_finite() {
                    0.0
                } else {
                    conformal_score(&cal, *zi)
                };
                push(&mut out, i, q, score);
            }
        }
        Calibration::Rolling {
            window,
            min_points,
            exclude_breaches,
        } => rolling(
            &z,
            window,
            min_points,
            alpha,
            |_, q, zi| {
                if exclude_breaches && zi > q {
                    None
                } else {
                    Some(zi)
                }
            },
            &mut |i, q, score| push(&mut out, i, q, score),
        )?,
        Calibration::RollingRobust {
            window,
            min_points,
            clip,
        } => {
            if !(clip.is_finite() && clip >= 1.0) {
                return Err(DetectError::InvalidParameter {
                    name: "calibration clip",
                    reason: format!("must be finite and >= 1 (got {clip})"),
                });
            }
            rolling(
                &z,
                window,
                min_points,
                alpha,
                |sorted, _, zi| {
                    let q90 = sorted[(sorted.len() * 9 / 10).min(sorted.len() - 1)];
                    let cap = clip * q90.max(0.0);
                    Some(if q90 > 0.0 { zi.min(cap) } else { zi })
                },
                &mut |i, q, score| push(&mut out, i, q, score),
            )?
        }
    }
    Ok(out)
}

/// Online conformal scoring shared by the rolling calibrations: point `i` is scored against the
/// sorted pool of earlier admitted residuals (`emit(i, band quantile, score)`), then
/// `admit(pool, q, z_i)` says what enters the pool for it (`None`: nothing). Entries leave after
/// `window` points.
fn rolling(
    z: &[f64],
    window: usize,
    min_points: usize,
    alpha: f64,
    admit: impl Fn(&[f64], f64, f64) -> Option<f64>,
    emit: &mut dyn FnMut(usize, f64, f64),
) -> Result<()> {
    if window == 0 {
        return Err(DetectError::InvalidParameter {
            name: "calibration window",
            reason: "must be >= 1".into(),
        });
    }
    let mut sorted: Vec<f64> = Vec::with_capacity(window + 1);
    // What point i put into the pool (so it can leave it later).
    let mut entered: Vec<Option<f64>> = vec![None; z.len()];
    for (i, &zi) in z.iter().enumerate() {
        let ready = sorted.len() >= min_points.max(1);
        let (q, score) = if ready {
            let q = quantile_sorted(&sorted, alpha).max(0.0);
            let s = if zi.is_finite() {
                conformal_score(&sorted, zi)
            } else {
                0.0
            };
            (q, s)
        } else {
            (UNCALIBRATED_Q, 0.0)
        };
        emit(i, q, score);
        if zi.is_finite() {
            let admitted = if ready {
                admit(&sorted, q, zi)
            } else {
                Some(zi)
            };
            if let Some(v) = admitted.filter(|v| v.is_finite()) {
                let pos = sorted.partition_point(|c| *c < v);
                sorted.insert(pos, v);
                entered[i] = Some(v);
            }
        }
        if i >= window
            && let Some(old) = entered[i - window]
        {
            let pos = sorted.partition_point(|c| *c < old);
            if pos < sorted.len() {
                sorted.remove(pos);
            }
        }
    }
    Ok(())
}

/// Compute the expectation of `detector` on finite `values`.
pub fn expectation(
    detector: &DetectorKind,
    values: &[f64],
    model: Option<&TrainedModel>,
) -> Result<Expectation> {
    match detector {
        DetectorKind::NBeats => match model {
            Some(m) => expect::nbeats_one_step(m, values),
            None => Err(DetectError::InvalidParameter {
                name: "model",
                reason: "the n-beats detector needs a trained model".into(),
            }),
        },
        DetectorKind::SeasonalNaive { season, window } => {
            expect::seasonal_naive(values, *season, *window)
        }
        DetectorKind::RollingZScore { window } => expect::rolling_zscore(values, *window),
        DetectorKind::RollingMedianMad { window } => expect::rolling_median_mad(values, *window),
    }
}

/// Run a detector end to end: repair gaps (LOCF, see [`crate::forecast::input`]), compute
/// expectations, calibrate, score and raise sustained alerts. `volume` feeds the
/// minimum-volume guard.
///
/// Fallback: when `cfg.detector` is N-BEATS and no model is given or the series is shorter
/// than the model's lookback, the rolling median/MAD baseline (window 60, or a third of the
/// series) is used and [`AnomalyReport::fallback`] says why.
pub fn detect(
    values: &[f64],
    volume: Option<&[f64]>,
    cfg: &AnomalyConfig,
    model: Option<&TrainedModel>,
) -> Result<AnomalyReport> {
    detect_continued(values, volume, cfg, model, None)
}

/// [`detect`] over a window that continues a series scored before: `seen` is the range of
/// values the series took before `values` (the [`AnomalyReport::range`] of the earlier runs).
/// The likelihood's spatial novelty is judged against it too, so a window shorter than the
/// series' seasonality does not take each daily peak for a record.
pub fn detect_continued(
    values: &[f64],
    volume: Option<&[f64]>,
    cfg: &AnomalyConfig,
    model: Option<&TrainedModel>,
    seen: Option<ValueRange>,
) -> Result<AnomalyReport> {
    cfg.sustained.validate()?;
    let (filled, missing) = fill_gaps(values)?;
    let mut detector = cfg.detector.clone();
    let mut fallback = None;
    if cfg.forecast_origin == 0 {
        return Err(DetectError::InvalidParameter {
            name: "forecast_origin",
            reason: "must be >= 1 (1: one-step forecasts)".into(),
        });
    }
    if let (DetectorKind::NBeats, Some(m)) = (&detector, model)
        && cfg.forecast_origin > m.card.model.horizon
    {
        return Err(DetectError::InvalidParameter {
            name: "forecast_origin",
            reason: format!(
                "{} exceeds the model's horizon {}",
                cfg.forecast_origin, m.card.model.horizon
            ),
        });
    }
    let expected = match (&detector, model) {
        (DetectorKind::NBeats, Some(m)) if cfg.forecast_origin > 1 => {
            expect::nbeats_k_step(m, &filled, cfg.forecast_origin)
        }
        _ => expectation(&detector, &filled, model),
    };
    let exp = match expected {
        Ok(e) => e,
        Err(e) if detector == DetectorKind::NBeats => {
            detector = DetectorKind::RollingMedianMad {
                window: 60.min(filled.len() / 3).max(3),
            };
            fallback = Some(format!(
                "n-beats unavailable ({e}); used rolling median/MAD"
            ));
            expectation(&detector, &filled, None)?
        }
        Err(e) => return Err(e),
    };
    let scored = score_expectation(
        &filled,
        &missing,
        &exp,
        cfg.direction,
        cfg.alpha,
        cfg.calibration,
    )?;
    // the raw input: missing (non-finite) points stay unscored by the likelihood
    let likelihood = residual_likelihood_scores(
        values,
        &exp,
        &ResidualLikelihoodConfig::for_probationary(crate::nab::probationary_len(filled.len())),
        seen,
    )?;
    let vol = volume.map(|v| v.get(exp.start..).unwrap_or(&[]));
    let mut alerts = sustained_alerts(&scored.breach, &scored.score, vol, &cfg.sustained)?;
    for a in &mut alerts {
        a.start += exp.start;
        a.end += exp.start;
    }
    Ok(AnomalyReport {
        detector,
        fallback,
        scored,
        alerts,
        likelihood,
        range: ValueRange::union(seen, ValueRange::of(values)),
    })
}
