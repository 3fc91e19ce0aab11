//! Augmented Dickey-Fuller unit-root test with a constant, mirroring statsmodels
//! `statsmodels.tsa.stattools.adfuller(x, regression="c", autolag="AIC")` (0.15).
//!
//! Regression (Said & Dickey 1984): `dx_t = c + gamma x_{t-1} + sum_{i=1..p} phi_i dx_{t-i} + e_t`;
//! the statistic is the t-value of `gamma`. Lag order `p` is chosen by minimising the
//! information criterion over `p = 0..=maxlag` on the common sample of the `maxlag`
//! regression, then the chosen regression is re-run on its own (longer) sample, exactly as
//! statsmodels does. Default `maxlag = ceil(12 (n/100)^{1/4})` (Schwert 1989), capped at
//! `n/2 - 2`. The p-value is MacKinnon's (1994) approximate asymptotic one
//! (statsmodels `mackinnonp`), critical values MacKinnon (2010) (`mackinnoncrit`).

use crate::error::{DetectError, Result, check_finite};
use crate::ols::{AugmentedQr, gaussian_llf};
use crate::stats::normal_cdf;
use nalgebra::DMatrix;
use serde::{Deserialize, Serialize};

/// How the ADF lag order is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Autolag {
    /// Minimise AIC (statsmodels default).
    #[default]
    Aic,
    /// Minimise BIC.
    Bic,
    /// Use `max_lag` as given.
    None,
}

/// Options for [`adfuller`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct AdfOptions {
    /// Largest lag considered; `None` = statsmodels' default `ceil(12 (n/100)^{1/4})`.
    #[serde(default)]
    pub max_lag: Option<usize>,
    /// Lag selection rule.
    #[serde(default)]
    pub autolag: Autolag,
}

/// MacKinnon (2010) critical values for the chosen sample size.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CriticalValues {
    /// 1% level.
    #[serde(rename = "1%")]
    pub one_pct: f64,
    /// 5% level.
    #[serde(rename = "5%")]
    pub five_pct: f64,
    /// 10% level.
    #[serde(rename = "10%")]
    pub ten_pct: f64,
}

/// Result of [`adfuller`] (field meanings as in statsmodels' `ADFullerResult`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AdfResult {
    /// The ADF t-statistic.
    pub statistic: f64,
    /// MacKinnon approximate p-value.
    pub pvalue: f64,
    /// Lag order used.
    pub used_lag: usize,
    /// Observations in the final regression.
    pub nobs: usize,
    /// Largest lag considered.
    pub max_lag: usize,
    /// Critical values.
    pub critical_values: CriticalValues,
    /// Best information criterion value (when autolag is on).
    pub icbest: Option<f64>,
}

// MacKinnon (1994) tables for regression "c", N = 1 (statsmodels tsa/adfvalues.py).
const TAU_MAX_C: f64 = 2.74;
const TAU_MIN_C: f64 = -18.83;
const TAU_STAR_C: f64 = -1.61;
// Coefficients are multiplied by the scaling vectors at run time, in f64, exactly as
// statsmodels does (`asarray(...) * small_scaling`), so the products round identically.
const TAU_C_SMALLP: [f64; 3] = [2.1659, 1.4412, 3.8269];
const SMALL_SCALING: [f64; 3] = [1.0, 1.0, 1e-2];
const TAU_C_LARGEP: [f64; 4] = [1.7339, 9.3202, -1.2745, -1.0368];
const LARGE_SCALING: [f64; 4] = [1.0, 1e-1, 1e-1, 1e-2];
// MacKinnon (2010) `tau_c_2010[0]`: rows 1%, 5%, 10%; polynomial in 1/nobs.
const TAU_C_2010: [[f64; 4]; 3] = [
    [-3.43035, -6.5393, -16.786, -79.433],
    [-2.86154, -2.8903, -4.234, -40.040],
    [-2.56677, -1.5384, -2.809, 0.0],
];

/// Horner evaluation with coefficients lowest order first (numpy `polyval(c[::-1], x)`).
fn polyval_low_first(coefs: &[f64], x: f64) -> f64 {
    coefs.iter().rev().fold(0.0, |acc, c| acc * x + c)
}

/// MacKinnon (1994) approximate p-value of an ADF statistic, regression with constant, one
/// series (statsmodels `mackinnonp(stat, regression="c", N=1)`).
pub fn mackinnon_p(stat: f64) -> f64 {
    if stat > TAU_MAX_C {
        return 1.0;
    }
    if stat < TAU_MIN_C {
        return 0.0;
    }
    if stat <= TAU_STAR_C {
        let c: Vec<f64> = TAU_C_SMALLP
            .iter()
            .zip(SMALL_SCALING)
            .map(|(a, s)| a * s)
            .collect();
        normal_cdf(polyval_low_first(&c, stat))
    } else {
        let c: Vec<f64> = TAU_C_LARGEP
            .iter()
            .zip(LARGE_SCALING)
            .map(|(a, s)| a * s)
            .collect();
        normal_cdf(polyval_low_first(&c, stat))
    }
}

/// MacKinnon (2010) critical values for regression "c", one series, sample size `nobs`
/// (statsmodels `mackinnoncrit(N=1, regression="c", nobs=nobs)`).
pub fn mackinnon_crit(nobs: usize) -> CriticalValues {
    let inv = 1.0 / nobs as f64;
    let v = |row: &[f64; 4]| polyval_low_first(row, inv);
    CriticalValues {
        one_pct: v(&TAU_C_2010[0]),
        five_pct: v(&TAU_C_2010[1]),
        ten_pct: v(&TAU_C_2010[2]),
    }
}

/// Default maximum lag (statsmodels): `min(n/2 - 2, ceil(12 (n/100)^{1/4}))`.
pub fn default_max_lag(n: usize) -> Result<usize> {
    let schwert = (12.0 * (n as f64 / 100.0).powf(0.25)).ceil() as i64;
    let cap = (n / 2) as i64 - 2;
    let lag = schwert.min(cap);
    usize::try_from(lag).map_err(|_| DetectError::TooFewObservations {
        what: "adfuller",
        needed: 4,
        got: n,
    })
}

/// Build `[columns..., dx_t]` for lag order `p` over the statsmodels sample
/// (rows `t = p .. n-2` of the differenced series). `order` decides the column layout.
fn adf_matrix(x: &[f64], dx: &[f64], p: usize, level_last: bool) -> DMatrix<f64> {
    let nobs = dx.len() - p;
    // columns: const, level, dlag_1..dlag_p (autolag layout) or dlag_1..dlag_p, const, level
    let cols = p + 3;
    DMatrix::from_fn(nobs, cols, |r, c| {
        let t = r + p; // index into dx of the response
        let lagged = |i: usize| dx[t - i];
        if c == cols - 1 {
            return dx[t];
        }
        if level_last {
            match c {
                _ if c < p => lagged(c + 1),
                _ if c == p => 1.0,
                _ => x[t],
            }
        } else {
            match c {
                0 => 1.0,
                1 => x[t],
                _ => lagged(c - 1),
            }
        }
    })
}

/// Augmented Dickey-Fuller test with a constant (see the module docs for the exact recipe).
///
/// Errors: non-finite values, a constant series, a series too short for the lag order, or a
/// degenerate regression (collinear regressors / perfect fit).
pub fn adfuller(x: &[f64], opts: &AdfOptions) -> Result<AdfResult> {
    check_finite("x", x)?;
    let n = x.len();
    if n < 4 {
        return Err(DetectError::TooFewObservations {
            what: "adfuller",
            needed: 4,
            got: n,
        });
    }
    let (min, max) = x
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(*v), b.max(*v))
        });
    if min == max {
        return Err(DetectError::ConstantSeries {
            series: "adfuller input".into(),
        });
    }
    let max_lag = match opts.max_lag {
        None => default_max_lag(n)?,
        Some(l) => {
            let cap = (n / 2).saturating_sub(2);
            if l > cap || n / 2 < 2 {
                return Err(DetectError::InvalidParameter {
                    name: "max_lag",
                    reason: format!("must be at most n/2 - 2 = {cap} for n = {n}"),
                });
            }
            l
        }
    };
    let dx: Vec<f64> = x.windows(2).map(|w| w[1] - w[0]).collect();

    let (used_lag, icbest) = match opts.autolag {
        Autolag::None => (max_lag, None),
        rule => {
            let m = adf_matrix(x, &dx, max_lag, false);
            let nobs = m.nrows();
            let qr = AugmentedQr::factor(m)?;
            let mut best: Option<(f64, usize)> = None;
            // candidate with `cols` leading columns: const, level, dlag_1..dlag_{cols-2}
            for cols in 2..=max_lag + 2 {
                let ssr = qr.ssr_prefix(cols);
                if !(ssr > 0.0) {
                    return Err(DetectError::PerfectFit {
                        context: "adfuller autolag".into(),
                    });
                }
                let llf = gaussian_llf(ssr, nobs);
                let ic = match rule {
                    Autolag::Bic => -2.0 * llf + (nobs as f64).ln() * cols as f64,
                    _ => -2.0 * llf + 2.0 * cols as f64,
                };
                // statsmodels: min over (ic, lag) tuples -> ties go to the smaller lag
                if best.is_none_or(|(b, _)| ic < b) {
                    best = Some((ic, cols));
                }
            }
            let (ic, cols) = best.ok_or(DetectError::Numerical {
                what: "adfuller autolag",
            })?;
            (cols - 2, Some(ic))
        }
    };

    // final regression, level last so its t-value is sign(R_kk) (Q'y)_k / sigma
    let m = adf_matrix(x, &dx, used_lag, true);
    let nobs = m.nrows();
    let qr = AugmentedQr::factor(m)?;
    qr.check_rank(|| format!("adfuller regression with {used_lag} lags"))?;
    let k = qr.k();
    if nobs <= k {
        return Err(DetectError::TooFewObservations {
            what: "adfuller regression",
            needed: k + 1,
            got: nobs,
        });
    }
    let ssr = qr.ssr();
    if !(ssr > 0.0) {
        return Err(DetectError::PerfectFit {
            context: "adfuller regression".into(),
        });
    }
    let sigma = (ssr / (nobs - k) as f64).sqrt();
    let rkk = qr.r()[(k - 1, k - 1)];
    let statistic = rkk.signum() * qr.qty(k - 1) / sigma;
    if !statistic.is_finite() {
        return Err(DetectError::Numerical {
            what: "adfuller statistic",
        });
    }
    Ok(AdfResult {
        statistic,
        pvalue: mackinnon_p(statistic),
        used_lag,
        nobs,
        max_lag,
        critical_values: mackinnon_crit(nobs),
        icbest,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lcg_noise(n: usize, seed: u64) -> Vec<f64> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((s >> 11) as f64 / (1u64 << 53) as f64) - 0.5
            })
            .collect()
    }

    #[test]
    fn white_noise_is_stationary_random_walk_is_not() {
        let e = lcg_noise(400, 7);
        let r = adfuller(&e, &AdfOptions::default()).unwrap_or_else(|err| panic!("{err}"));
        assert!(r.pvalue < 0.01, "{r:?}");
        let mut walk = Vec::with_capacity(400);
        let mut acc = 0.0;
        for v in &e {
            acc += v;
            walk.push(acc);
        }
        let r = adfuller(&walk, &AdfOptions::default()).unwrap_or_else(|err| panic!("{err}"));
        assert!(r.pvalue > 0.05, "{r:?}");
        assert_eq!(r.nobs, 400 - 1 - r.used_lag);
    }

    #[test]
    fn mackinnon_matches_statsmodels() {
        // statsmodels 0.15: mackinnonp(-3.0), mackinnonp(-1.0), mackinnoncrit(1, "c", 100)
        assert!(
            (mackinnon_p(-3.0) - 0.034_894_400_275_345_266).abs() < 1e-12,
            "{}",
            mackinnon_p(-3.0)
        );
        assert!(
            (mackinnon_p(-1.0) - 0.753_264_301_200_565_5).abs() < 1e-12,
            "{}",
            mackinnon_p(-1.0)
        );
        assert_eq!(mackinnon_p(3.0), 1.0);
        assert_eq!(mackinnon_p(-20.0), 0.0);
        let c = mackinnon_crit(100);
        assert!((c.five_pct - -2.890_906_44).abs() < 1e-6, "{c:?}");
    }

    #[test]
    fn degenerate_inputs_are_typed_errors() {
        assert!(matches!(
            adfuller(&[1.0; 50], &AdfOptions::default()),
            Err(DetectError::ConstantSeries { .. })
        ));
        assert!(matches!(
            adfuller(&[1.0, 2.0], &AdfOptions::default()),
            Err(DetectError::TooFewObservations { .. })
        ));
        assert!(matches!(
            adfuller(&[1.0, f64::NAN, 2.0, 3.0, 1.0], &AdfOptions::default()),
            Err(DetectError::NonFinite { .. })
        ));
        let opts = AdfOptions {
            max_lag: Some(40),
            autolag: Autolag::None,
        };
        assert!(matches!(
            adfuller(&lcg_noise(50, 1), &opts),
            Err(DetectError::InvalidParameter { .. })
        ));
        // a pure linear trend makes the lagged differences constant: collinear with the constant
        let trend: Vec<f64> = (0..60).map(f64::from).collect();
        assert!(adfuller(&trend, &AdfOptions::default()).is_err());
    }
}
