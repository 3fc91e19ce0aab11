//! KV-cache (prompt-cache) hit ratio and its decay with the idle time between turns.
//!
//! Hit ratio of a turn: `cache_read_input_tokens / input_tokens`. For consecutive turns of a
//! conversation the idle time is the gap between their timestamps. Providers evict cached
//! prefixes after a while, so the hit ratio falls with idle time; we fit
//! `hit(dt) = a exp(-dt / tau) + b` by nonlinear least squares with Levenberg-Marquardt
//! (Levenberg 1944, Marquardt 1963; Marquardt's diagonal scaling of the damping), started
//! from the best point of a log-spaced grid over `tau` with `(a, b)` solved linearly at each
//! grid point (variable projection, Golub & Pereyra 1973). Standard errors come from
//! `s^2 (J'J)^{-1}` at the optimum (`s^2 = SSR / (n - 3)`, via a QR of `J`), confidence
//! intervals from Student's t with `n - 3` degrees of freedom (Bates & Watts 1988, §2.3;
//! the same recipe as scipy `curve_fit`'s `pcov`).
//!
//! The fit is refused, with the reason, when there are fewer than [`MIN_POINTS`] points, all
//! idle times are equal, the hit ratio does not vary, `J` is rank deficient at the optimum, or
//! `tau` lands outside `[min dt / 100, 100 max dt]` (the data do not identify a decay).

use crate::context::{Turn, by_conversation};
use crate::error::{DetectError, Result, check_finite};
use crate::ols::AugmentedQr;
use crate::stats::student_t_quantile;
use nalgebra::{DMatrix, Matrix3, Vector3};
use serde::{Deserialize, Serialize};

/// Fewest points accepted for a fit (3 parameters plus at least 3 residual df).
pub const MIN_POINTS: usize = 6;
/// Iteration limit of Levenberg-Marquardt.
pub const MAX_ITERATIONS: usize = 500;

/// One (idle time, hit ratio) observation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HitPoint {
    /// Conversation it came from.
    pub conversation_id: String,
    /// Route of the later turn.
    pub route: String,
    /// Seconds since the previous turn of the conversation.
    pub idle_seconds: f64,
    /// Cache hit ratio of the later turn, in [0, 1].
    pub hit_ratio: f64,
}

/// Fitted decay curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecayFit {
    /// Amplitude `a` (hit ratio lost to eviction).
    pub a: f64,
    /// Decay constant `tau` in seconds.
    pub tau_seconds: f64,
    /// Floor `b` (hit ratio that survives long idle times).
    pub b: f64,
    /// Standard errors of `(a, tau, b)`.
    pub std_errors: [f64; 3],
    /// Confidence level of the intervals.
    pub confidence_level: f64,
    /// Interval for `a`.
    pub a_ci: [f64; 2],
    /// Interval for `tau`.
    pub tau_ci: [f64; 2],
    /// Interval for `b`.
    pub b_ci: [f64; 2],
    /// Residual sum of squares.
    pub ssr: f64,
    /// Root mean squared residual.
    pub rmse: f64,
    /// `1 - SSR / TSS`.
    pub r_squared: f64,
    /// Points used.
    pub points: usize,
    /// Levenberg-Marquardt iterations.
    pub iterations: usize,
}

/// Hit ratio by route.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RouteHitRatio {
    /// Route.
    pub route: String,
    /// Turns reporting cache reads.
    pub turns: usize,
    /// `sum cache_read / sum input`.
    pub hit_ratio: Option<f64>,
}

/// Result of [`cache_decay_report`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheDecayReport {
    /// Token-weighted hit ratio over all turns that report cache reads.
    pub overall_hit_ratio: Option<f64>,
    /// Per route.
    pub routes: Vec<RouteHitRatio>,
    /// Observations used for the fit.
    pub points: Vec<HitPoint>,
    /// The fit, when the data allow one.
    pub fit: Option<DecayFit>,
    /// Why the fit was refused.
    pub fit_refused: Option<String>,
}

fn model(a: f64, tau: f64, b: f64, dt: f64) -> f64 {
    a * (-dt / tau).exp() + b
}

fn ssr_at(dt: &[f64], y: &[f64], p: &Vector3<f64>) -> f64 {
    dt.iter()
        .zip(y)
        .map(|(d, v)| (v - model(p[0], p[1], p[2], *d)).powi(2))
        .sum()
}

/// Best `(a, b)` for a fixed `tau` by linear least squares on `[exp(-dt/tau), 1]`.
fn linear_ab(dt: &[f64], y: &[f64], tau: f64) -> Option<(f64, f64, f64)> {
    let n = dt.len();
    let m = DMatrix::from_fn(n, 3, |i, j| match j {
        0 => (-dt[i] / tau).exp(),
        1 => 1.0,
        _ => y[i],
    });
    let qr = AugmentedQr::factor(m).ok()?;
    qr.check_rank(String::new).ok()?;
    let p = qr.params().ok()?;
    Some((p[0], p[1], qr.ssr()))
}

/// Fit `hit(dt) = a exp(-dt/tau) + b` (see module docs). `level` is the confidence level of
/// the intervals, e.g. 0.95.
pub fn fit_cache_decay(idle_seconds: &[f64], hit_ratio: &[f64], level: f64) -> Result<DecayFit> {
    let n = idle_seconds.len();
    if n != hit_ratio.len() {
        return Err(DetectError::LengthMismatch {
            left: "idle_seconds",
            left_len: n,
            right: "hit_ratio",
            right_len: hit_ratio.len(),
        });
    }
    if n < MIN_POINTS {
        return Err(DetectError::TooFewObservations {
            what: "cache decay fit",
            needed: MIN_POINTS,
            got: n,
        });
    }
    if !(level > 0.0 && level < 1.0) {
        return Err(DetectError::InvalidParameter {
            name: "level",
            reason: format!("must be in (0, 1), got {level}"),
        });
    }
    check_finite("idle_seconds", idle_seconds)?;
    check_finite("hit_ratio", hit_ratio)?;
    if let Some(i) = idle_seconds.iter().position(|d| *d < 0.0) {
        return Err(DetectError::InvalidParameter {
            name: "idle_seconds",
            reason: format!("negative at index {i}"),
        });
    }
    let (dmin, dmax) = idle_seconds
        .iter()
        .fold((f64::INFINITY, 0.0_f64), |(a, b), d| (a.min(*d), b.max(*d)));
    if dmax - dmin <= 1e-9 * dmax.max(1.0) {
        return Err(DetectError::DegenerateData {
            what: "cache decay fit",
            reason: "all idle times are equal".into(),
        });
    }
    let mean = hit_ratio.iter().sum::<f64>() / n as f64;
    let tss: f64 = hit_ratio.iter().map(|v| (v - mean).powi(2)).sum();
    if tss <= 1e-12 * n as f64 {
        return Err(DetectError::DegenerateData {
            what: "cache decay fit",
            reason: "the hit ratio does not vary".into(),
        });
    }

    // grid start over tau (log-spaced across the observed idle range)
    let lo = (dmin.max(dmax * 1e-4)).max(1e-6) / 2.0;
    let hi = dmax * 2.0;
    let mut start: Option<(f64, Vector3<f64>)> = None;
    for i in 0..60 {
        let tau = lo * (hi / lo).powf(i as f64 / 59.0);
        if let Some((a, b, s)) = linear_ab(idle_seconds, hit_ratio, tau)
            && start.as_ref().is_none_or(|(best, _)| s < *best)
        {
            start = Some((s, Vector3::new(a, tau, b)));
        }
    }
    let Some((mut cur_ssr, mut p)) = start else {
        return Err(DetectError::DegenerateData {
            what: "cache decay fit",
            reason: "no starting point: regressors collinear for every tau".into(),
        });
    };

    // Levenberg-Marquardt
    let mut lambda = 1e-3;
    let mut iterations = 0;
    let mut converged = false;
    while iterations < MAX_ITERATIONS {
        iterations += 1;
        let (mut jtj, mut jtr) = (Matrix3::<f64>::zeros(), Vector3::<f64>::zeros());
        for (d, y) in idle_seconds.iter().zip(hit_ratio) {
            let e = (-d / p[1]).exp();
            let g = Vector3::new(e, p[0] * e * d / (p[1] * p[1]), 1.0);
            jtj += g * g.transpose();
            jtr += g * (y - model(p[0], p[1], p[2], *d));
        }
        let mut accepted = false;
        while lambda < 1e16 {
            let mut damped = jtj;
            for k in 0..3 {
                damped[(k, k)] += lambda * jtj[(k, k)].max(1e-12);
            }
            let Some(step) = damped.cholesky().map(|c| c.solve(&jtr)) else {
                lambda *= 10.0;
                continue;
            };
            let cand = p + step;
            let s = if cand[1] > 0.0 {
                ssr_at(idle_seconds, hit_ratio, &cand)
            } else {
                f64::INFINITY
            };
            if s.is_finite() && s <= cur_ssr {
                let rel_change = (cur_ssr - s) / cur_ssr.max(f64::MIN_POSITIVE);
                let rel_step = (0..3)
                    .map(|k| step[k].abs() / (p[k].abs() + 1e-12))
                    .fold(0.0, f64::max);
                p = cand;
                cur_ssr = s;
                lambda = (lambda / 10.0).max(1e-12);
                accepted = true;
                converged = rel_change < 1e-14 || rel_step < 1e-10;
                break;
            }
            lambda *= 10.0;
        }
        if !accepted {
            // no descent direction left at any damping: we are at a (local) minimum
            converged = true;
        }
        if converged {
            break;
        }
    }
    if !converged {
        return Err(DetectError::NoConvergence {
            what: "cache decay fit",
            iterations,
        });
    }
    let tau = p[1];
    if !(tau >= dmin.max(1e-9) / 100.0 && tau <= 100.0 * dmax) {
        return Err(DetectError::DegenerateData {
            what: "cache decay fit",
            reason: format!(
                "fitted tau = {tau:.3e} s is outside the observed idle-time range ({dmin:.3e}..{dmax:.3e} s): no decay identified"
            ),
        });
    }

    // covariance from a QR of J (columns d/da, d/dtau, d/db), dummy response
    let jm = DMatrix::from_fn(n, 4, |i, j| {
        let d = idle_seconds[i];
        let e = (-d / tau).exp();
        match j {
            0 => e,
            1 => p[0] * e * d / (tau * tau),
            2 => 1.0,
            _ => hit_ratio[i] - model(p[0], tau, p[2], d),
        }
    });
    let qr = AugmentedQr::factor(jm)?;
    qr.check_rank(|| "cache decay Jacobian (parameters not identifiable)".into())?;
    let diag = qr.inv_xtx_diag()?;
    let df = (n - 3) as f64;
    let s2 = cur_ssr / df;
    let se = [
        (s2 * diag[0]).sqrt(),
        (s2 * diag[1]).sqrt(),
        (s2 * diag[2]).sqrt(),
    ];
    let t = student_t_quantile(0.5 + level / 2.0, df)?;
    let ci = |v: f64, s: f64| [v - t * s, v + t * s];
    let fit = DecayFit {
        a: p[0],
        tau_seconds: tau,
        b: p[2],
        std_errors: se,
        confidence_level: level,
        a_ci: ci(p[0], se[0]),
        tau_ci: ci(tau, se[1]),
        b_ci: ci(p[2], se[2]),
        ssr: cur_ssr,
        rmse: (cur_ssr / n as f64).sqrt(),
        r_squared: 1.0 - cur_ssr / tss,
        points: n,
        iterations,
    };
    if [fit.a, fit.b, fit.ssr, se[0], se[1], se[2]]
        .iter()
        .all(|v| v.is_finite())
    {
        Ok(fit)
    } else {
        Err(DetectError::Numerical {
            what: "cache decay fit",
        })
    }
}

/// Hit points from conversation turns: for each turn after the first in its conversation that
/// reports `cache_read_input_tokens` and has `input_tokens > 0`.
pub fn hit_points(turns: &[Turn]) -> Result<Vec<HitPoint>> {
    let mut points = Vec::new();
    for (id, g) in by_conversation(turns)? {
        for w in g.windows(2) {
            let (prev, cur) = (w[0], w[1]);
            let Some(cached) = cur.cache_read_input_tokens else {
                continue;
            };
            if cur.input_tokens == 0 {
                continue;
            }
            if cached > cur.input_tokens {
                return Err(DetectError::InvalidParameter {
                    name: "cache_read_input_tokens",
                    reason: format!(
                        "{cached} exceeds input_tokens {} in conversation {id}",
                        cur.input_tokens
                    ),
                });
            }
            points.push(HitPoint {
                conversation_id: id.to_string(),
                route: cur.route.clone(),
                idle_seconds: (cur.timestamp_ms - prev.timestamp_ms) as f64 / 1000.0,
                hit_ratio: cached as f64 / cur.input_tokens as f64,
            });
        }
    }
    Ok(points)
}

/// Hit ratios overall and per route, plus the decay fit (or the reason it was refused).
pub fn cache_decay_report(turns: &[Turn], level: f64) -> Result<CacheDecayReport> {
    let points = hit_points(turns)?;
    let mut routes: std::collections::BTreeMap<&str, (usize, u64, u64)> =
        std::collections::BTreeMap::new();
    let (mut read, mut input) = (0u64, 0u64);
    for t in turns {
        if let Some(c) = t.cache_read_input_tokens {
            let slot = routes.entry(t.route.as_str()).or_insert((0, 0, 0));
            slot.0 += 1;
            slot.1 = slot.1.saturating_add(c.min(t.input_tokens));
            slot.2 = slot.2.saturating_add(t.input_tokens);
            read = read.saturating_add(c.min(t.input_tokens));
            input = input.saturating_add(t.input_tokens);
        }
    }
    let ratio = |r: u64, i: u64| (i > 0).then(|| r as f64 / i as f64);
    let dt: Vec<f64> = points.iter().map(|p| p.idle_seconds).collect();
    let hit: Vec<f64> = points.iter().map(|p| p.hit_ratio).collect();
    let (fit, fit_refused) = match fit_cache_decay(&dt, &hit, level) {
        Ok(f) => (Some(f), None),
        Err(e) => (None, Some(e.to_string())),
    };
    Ok(CacheDecayReport {
        overall_hit_ratio: ratio(read, input),
        routes: routes
            .into_iter()
            .map(|(r, (n, c, i))| RouteHitRatio {
                route: r.to_string(),
                turns: n,
                hit_ratio: ratio(c, i),
            })
            .collect(),
        points,
        fit,
        fit_refused,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn synthetic(n: usize, noise: f64) -> (Vec<f64>, Vec<f64>) {
        let mut s = 42u64;
        let mut unit = || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 11) as f64 / (1u64 << 53) as f64
        };
        let dt: Vec<f64> = (0..n).map(|_| 1.0 + 1800.0 * unit()).collect();
        let y: Vec<f64> = dt
            .iter()
            .map(|d| model(0.8, 300.0, 0.1, *d) + noise * (unit() - 0.5))
            .collect();
        (dt, y)
    }

    #[test]
    fn recovers_known_curve_with_honest_intervals() {
        let (dt, y) = synthetic(200, 0.05);
        let f = fit_cache_decay(&dt, &y, 0.95).unwrap_or_else(|e| panic!("{e}"));
        assert!(f.tau_ci[0] < 300.0 && 300.0 < f.tau_ci[1], "{f:?}");
        assert!(f.a_ci[0] < 0.8 && 0.8 < f.a_ci[1], "{f:?}");
        assert!(f.b_ci[0] < 0.1 && 0.1 < f.b_ci[1], "{f:?}");
        assert!((f.tau_seconds - 300.0).abs() < 30.0);
        assert!(f.r_squared > 0.9);
        // exact data: essentially exact parameters
        let (dt, y) = synthetic(50, 0.0);
        let f = fit_cache_decay(&dt, &y, 0.95).unwrap_or_else(|e| panic!("{e}"));
        assert!((f.tau_seconds - 300.0).abs() < 1e-4, "{f:?}");
    }

    #[test]
    fn refuses_degenerate_data_with_reasons() {
        assert!(matches!(
            fit_cache_decay(&[1.0, 2.0], &[0.5, 0.4], 0.95),
            Err(DetectError::TooFewObservations { .. })
        ));
        assert!(matches!(
            fit_cache_decay(
                &[5.0; 10],
                &[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0],
                0.95
            ),
            Err(DetectError::DegenerateData { .. })
        ));
        let dt: Vec<f64> = (0..10).map(f64::from).collect();
        assert!(matches!(
            fit_cache_decay(&dt, &[0.5; 10], 0.95),
            Err(DetectError::DegenerateData { .. })
        ));
        // a straight line: no decay inside the range
        let y: Vec<f64> = dt.iter().map(|d| 0.9 - 0.001 * d).collect();
        assert!(fit_cache_decay(&dt, &y, 0.95).is_err());
        let mut bad = dt.clone();
        bad[3] = f64::NAN;
        assert!(matches!(
            fit_cache_decay(&bad, &[0.5; 10], 0.95),
            Err(DetectError::NonFinite { .. })
        ));
    }

    #[test]
    fn report_from_turns() {
        let mut turns = Vec::new();
        let mut t = 0i64;
        for i in 0..40i64 {
            let idle = 5_000 + (i * 37 % 40) * 30_000;
            t += idle;
            let hit = model(0.9, 200.0, 0.05, idle as f64 / 1000.0);
            turns.push(Turn {
                conversation_id: "c".into(),
                timestamp_ms: t,
                route: "m".into(),
                input_tokens: 10_000,
                output_tokens: 100,
                cache_read_input_tokens: Some((hit * 10_000.0) as u64),
            });
        }
        let r = cache_decay_report(&turns, 0.95).unwrap_or_else(|e| panic!("{e}"));
        assert!(!r.points.is_empty());
        assert!(r.overall_hit_ratio.is_some());
        assert_eq!(r.points.len(), 39);
        let fit = r.fit.unwrap_or_else(|| panic!("{:?}", r.fit_refused));
        assert!((fit.tau_seconds - 200.0).abs() < 2.0, "{fit:?}");
    }
}
