//! Granger causality tests for one (cause, effect) pair, numerically equal to statsmodels
//! `grangercausalitytests(np.column_stack([effect, cause]), maxlag)` (0.15).
//!
//! For each lag `p` (Granger 1969; statsmodels semantics): sample `t = p .. n-1`,
//! restricted model `y_t ~ 1 + y_{t-1..t-p}`, unrestricted `y_t ~ 1 + y_{t-1..t-p} +
//! x_{t-1..t-p}` (`y` = effect, `x` = cause), and the four statsmodels statistics:
//!
//! * `ssr_ftest`: `F = (SSR_r - SSR_u) / SSR_u / p * df_resid`, `F(p, df_resid)` tail;
//! * `ssr_chi2test`: `chi2 = n_p (SSR_r - SSR_u) / SSR_u`, `chi2(p)` tail;
//! * `lrtest`: `-2 (llf_r - llf_u) = n_p ln(SSR_r / SSR_u)`, `chi2(p)` tail;
//! * `params_ftest`: the Wald F-test that the `p` cause coefficients of the unrestricted model
//!   are zero (`RegressionResults.f_test`), `F(p, df_resid)` tail.
//!
//! Implementation: one QR of `[1, y lags 1..L, x lags 1..L, y]` over the rows that every lag
//! shares (`t >= L`); for lag `p` the factor's relevant columns are stacked on the `L - p`
//! extra rows that lag `p` also uses and re-factored (a tiny QR), which is exactly the QR of
//! that lag's full design (orthogonal invariance). `SSR_r - SSR_u` is read off as the squared
//! norm of the cause block of `Q'y` (no cancellation), which is also the numerator of the Wald
//! statistic. All p-values come from survival functions (see [`crate::stats`]).

use crate::adf::{AdfOptions, AdfResult, adfuller};
use crate::error::{DetectError, Result, check_finite};
use crate::ols::{AugmentedQr, gaussian_llf};
use crate::stats::{chi2_sf, f_sf};
use nalgebra::DMatrix;
use serde::{Deserialize, Serialize};

/// Largest lag accepted (TigerStyle: a limit on everything; 64 lags x 2 series already means a
/// 130-column regression).
pub const MAX_LAG_LIMIT: usize = 64;

/// `ssr_ftest` / `params_ftest`: statistic, p-value and degrees of freedom.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FTest {
    /// F statistic.
    #[serde(rename = "F")]
    pub f: f64,
    /// Upper-tail p-value.
    pub p: f64,
    /// Denominator degrees of freedom (residual df of the unrestricted model).
    pub df_denom: usize,
    /// Numerator degrees of freedom (the lag).
    pub df_num: usize,
}

/// `ssr_chi2test` / `lrtest`: statistic, p-value and degrees of freedom.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Chi2Test {
    /// Chi-squared statistic.
    pub chi2: f64,
    /// Upper-tail p-value.
    pub p: f64,
    /// Degrees of freedom (the lag).
    pub df: usize,
}

/// The four statsmodels statistics at one lag.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GrangerLag {
    /// The lag `p`.
    pub lag: usize,
    /// SSR-based F test.
    pub ssr_ftest: FTest,
    /// SSR-based chi-squared test.
    pub ssr_chi2test: Chi2Test,
    /// Likelihood-ratio test.
    pub lrtest: Chi2Test,
    /// Wald F test on the cause coefficients.
    pub params_ftest: FTest,
    /// Partial R^2 of the cause lags: `(SSR_r - SSR_u) / SSR_r`, an effect size in [0, 1).
    pub partial_r2: f64,
}

/// Information criteria of the unrestricted model at one lag, all lags fitted on the common
/// sample `t = max_lag .. n-1` so they are comparable.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LagCriteria {
    /// The lag.
    pub lag: usize,
    /// `-2 llf + 2 k`.
    pub aic: f64,
    /// `-2 llf + k ln n`.
    pub bic: f64,
}

/// Lags chosen by the two criteria.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SelectedLag {
    /// Lag minimising AIC.
    pub aic: usize,
    /// Lag minimising BIC.
    pub bic: usize,
}

/// Output of [`granger_tests`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GrangerTests {
    /// One entry per lag `1..=max_lag`.
    pub lags: Vec<GrangerLag>,
    /// Criteria per lag.
    pub information_criteria: Vec<LagCriteria>,
    /// Lag selected by AIC and BIC.
    pub selected_lag: SelectedLag,
}

fn validate(cause: &[f64], effect: &[f64], max_lag: usize) -> Result<()> {
    if cause.len() != effect.len() {
        return Err(DetectError::LengthMismatch {
            left: "cause",
            left_len: cause.len(),
            right: "effect",
            right_len: effect.len(),
        });
    }
    if max_lag == 0 || max_lag > MAX_LAG_LIMIT {
        return Err(DetectError::InvalidParameter {
            name: "max_lag",
            reason: format!("must be in 1..={MAX_LAG_LIMIT}, got {max_lag}"),
        });
    }
    check_finite("cause", cause)?;
    check_finite("effect", effect)?;
    // statsmodels: `x.shape[0] <= 3 * maxlag + int(addconst)` is refused
    let needed = 3 * max_lag + 2;
    if effect.len() < needed {
        return Err(DetectError::TooFewObservations {
            what: "granger",
            needed,
            got: effect.len(),
        });
    }
    for (name, s) in [("cause", cause), ("effect", effect)] {
        if s.iter().all(|v| *v == s[0]) {
            return Err(DetectError::ConstantSeries {
                series: name.into(),
            });
        }
    }
    Ok(())
}

/// Column `c` of the base layout at time `t`: 0 = const, 1..=L effect lags, L+1..=2L cause
/// lags, 2L+1 = effect (response).
#[inline]
fn base_value(cause: &[f64], effect: &[f64], max_lag: usize, t: usize, c: usize) -> f64 {
    match c {
        0 => 1.0,
        _ if c <= max_lag => effect[t - c],
        _ if c <= 2 * max_lag => cause[t - (c - max_lag)],
        _ => effect[t],
    }
}

/// Base column indices used by lag `p`: const, effect lags 1..=p, cause lags 1..=p, response.
fn lag_columns(max_lag: usize, p: usize) -> Vec<usize> {
    let mut cols = Vec::with_capacity(2 * p + 2);
    cols.push(0);
    cols.extend(1..=p);
    cols.extend(max_lag + 1..=max_lag + p);
    cols.push(2 * max_lag + 1);
    cols
}

fn centered(x: &[f64]) -> Vec<f64> {
    let mean = x.iter().sum::<f64>() / x.len() as f64;
    x.iter().map(|v| v - mean).collect()
}

/// Run the Granger tests for lags `1..=max_lag` with statsmodels semantics (see module docs).
///
/// Errors: unequal lengths, NaN/inf, `n < 3 max_lag + 2`, a constant series, collinear
/// regressors, or a perfect fit — never a NaN p-value.
pub fn granger_tests(cause: &[f64], effect: &[f64], max_lag: usize) -> Result<GrangerTests> {
    validate(cause, effect, max_lag)?;
    // Both models contain a constant, so the tests are invariant to shifting either series;
    // removing the means first keeps large offsets from costing digits (cond(X) drops).
    let (cause, effect) = (&centered(cause)[..], &centered(effect)[..]);
    let n = effect.len();
    let l = max_lag;
    let width = 2 * l + 2;
    let base = DMatrix::from_fn(n - l, width, |r, c| base_value(cause, effect, l, r + l, c));
    let base = AugmentedQr::factor(base)?;
    let rb = base.r();

    let mut lags = Vec::with_capacity(l);
    let mut criteria = Vec::with_capacity(l);
    for p in 1..=l {
        let cols = lag_columns(l, p);
        let extra = l - p; // rows t = p .. l-1
        let m = DMatrix::from_fn(width + extra, cols.len(), |r, c| {
            if r < width {
                rb[(r, cols[c])]
            } else {
                base_value(cause, effect, l, p + (r - width), cols[c])
            }
        });
        let nobs = n - p;
        let qr = AugmentedQr::factor(m)?;
        let context = || format!("granger lag {p}");
        qr.check_rank(context)?;
        let k = 2 * p + 1;
        let ssr_u = qr.ssr();
        let tss = qr.ssr_prefix(1); // constant-only model: centered total sum of squares
        if !(tss > 0.0) || !(ssr_u > 0.0) || ssr_u / tss < f64::EPSILON {
            return Err(DetectError::PerfectFit { context: context() });
        }
        let reduction = qr.ssr_reduction(p + 1, k);
        let df_resid = nobs - k;
        let (pf, dfr) = (p as f64, df_resid as f64);
        let f = reduction / ssr_u / pf * dfr;
        let chi2 = nobs as f64 * reduction / ssr_u;
        let lr = nobs as f64 * (reduction / ssr_u).ln_1p();
        let wald_f = (reduction / pf) / (ssr_u / dfr);
        let lag = GrangerLag {
            lag: p,
            ssr_ftest: FTest {
                f,
                p: f_sf(f, pf, dfr)?,
                df_denom: df_resid,
                df_num: p,
            },
            ssr_chi2test: Chi2Test {
                chi2,
                p: chi2_sf(chi2, pf)?,
                df: p,
            },
            lrtest: Chi2Test {
                chi2: lr,
                p: chi2_sf(lr, pf)?,
                df: p,
            },
            params_ftest: FTest {
                f: wald_f,
                p: f_sf(wald_f, pf, dfr)?,
                df_denom: df_resid,
                df_num: p,
            },
            partial_r2: reduction / (ssr_u + reduction),
        };
        if ![f, chi2, lr, wald_f, lag.partial_r2]
            .iter()
            .all(|v| v.is_finite())
        {
            return Err(DetectError::Numerical {
                what: "granger statistics",
            });
        }
        lags.push(lag);

        // information criteria on the common sample (rows t >= L only)
        let m = DMatrix::from_fn(width, cols.len(), |r, c| rb[(r, cols[c])]);
        let common = AugmentedQr::factor(m)?;
        let llf = gaussian_llf(common.ssr(), n - l);
        let kf = k as f64;
        criteria.push(LagCriteria {
            lag: p,
            aic: -2.0 * llf + 2.0 * kf,
            bic: -2.0 * llf + ((n - l) as f64).ln() * kf,
        });
    }
    let argmin = |f: fn(&LagCriteria) -> f64| {
        criteria
            .iter()
            .filter(|c| f(c).is_finite())
            .min_by(|a, b| f(a).total_cmp(&f(b)).then(a.lag.cmp(&b.lag)))
            .map_or(1, |c| c.lag)
    };
    let selected_lag = SelectedLag {
        aic: argmin(|c| c.aic),
        bic: argmin(|c| c.bic),
    };
    Ok(GrangerTests {
        lags,
        information_criteria: criteria,
        selected_lag,
    })
}

/// Whether to difference the series before testing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Differencing {
    /// Test the series as given (plain statsmodels numbers).
    #[default]
    None,
    /// Difference both series (keeping them aligned) while the ADF test cannot reject a unit
    /// root in either, at most twice.
    Auto,
}

fn default_alpha() -> f64 {
    0.05
}

/// The plain request the HTTP layer exposes: `{"cause": [..], "effect": [..], "max_lag": 4}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GrangerRequest {
    /// The candidate cause series.
    pub cause: Vec<f64>,
    /// The effect series (same length, same time steps).
    pub effect: Vec<f64>,
    /// Test lags `1..=max_lag`.
    pub max_lag: usize,
    /// Differencing policy (default: none).
    #[serde(default)]
    pub difference: Differencing,
    /// Significance level for the stationarity verdicts (default 0.05).
    #[serde(default = "default_alpha")]
    pub alpha: f64,
}

/// ADF verdict on one series (statsmodels `adfuller` defaults).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StationarityVerdict {
    /// The test result, when the test could run.
    pub adf: Option<AdfResult>,
    /// `true` when ADF rejects a unit root at `alpha`; `None` when the test could not run.
    pub stationary: Option<bool>,
    /// Why the test could not run.
    pub error: Option<String>,
}

impl StationarityVerdict {
    /// Run `adfuller` with statsmodels defaults and turn it into a verdict.
    pub fn check(series: &[f64], alpha: f64) -> Self {
        match adfuller(series, &AdfOptions::default()) {
            Ok(r) => Self {
                stationary: Some(r.pvalue < alpha),
                adf: Some(r),
                error: None,
            },
            Err(e) => Self {
                adf: None,
                stationary: None,
                error: Some(e.to_string()),
            },
        }
    }
}

/// Verdicts for both series after `differences` rounds of differencing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StationarityCheck {
    /// How many times both series had been differenced when checked.
    pub differences: usize,
    /// Verdict on the cause series.
    pub cause: StationarityVerdict,
    /// Verdict on the effect series.
    pub effect: StationarityVerdict,
}

/// Response to a [`GrangerRequest`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GrangerResponse {
    /// Every lag's four statistics.
    pub lags: Vec<GrangerLag>,
    /// Lag chosen by AIC and BIC.
    pub selected_lag: SelectedLag,
    /// Criteria per lag.
    pub information_criteria: Vec<LagCriteria>,
    /// Stationarity verdicts, one entry per differencing stage (the last one describes the
    /// series actually tested).
    pub stationarity: Vec<StationarityCheck>,
    /// How many times both series were differenced before testing (0 unless asked).
    pub differenced: usize,
    /// Series length actually tested.
    pub nobs: usize,
}

/// First difference.
pub fn difference(x: &[f64]) -> Vec<f64> {
    x.windows(2).map(|w| w[1] - w[0]).collect()
}

/// Answer a [`GrangerRequest`]: optional ADF-driven differencing, then [`granger_tests`].
pub fn granger(request: &GrangerRequest) -> Result<GrangerResponse> {
    if !(request.alpha > 0.0 && request.alpha < 1.0) {
        return Err(DetectError::InvalidParameter {
            name: "alpha",
            reason: format!("must be in (0, 1), got {}", request.alpha),
        });
    }
    validate(&request.cause, &request.effect, request.max_lag)?;
    let mut cause = request.cause.clone();
    let mut effect = request.effect.clone();
    let mut stationarity = Vec::new();
    let mut differenced = 0;
    loop {
        let check = StationarityCheck {
            differences: differenced,
            cause: StationarityVerdict::check(&cause, request.alpha),
            effect: StationarityVerdict::check(&effect, request.alpha),
        };
        let non_stationary =
            check.cause.stationary == Some(false) || check.effect.stationary == Some(false);
        stationarity.push(check);
        if request.difference == Differencing::None || !non_stationary || differenced >= 2 {
            break;
        }
        cause = difference(&cause);
        effect = difference(&effect);
        differenced += 1;
    }
    let tests = granger_tests(&cause, &effect, request.max_lag)?;
    Ok(GrangerResponse {
        lags: tests.lags,
        selected_lag: tests.selected_lag,
        information_criteria: tests.information_criteria,
        stationarity,
        differenced,
        nobs: effect.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noise(n: usize, seed: u64) -> Vec<f64> {
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
    fn detects_causality_by_construction() {
        let x = noise(300, 1);
        let e = noise(300, 2);
        let mut y = vec![0.0; 300];
        for t in 2..300 {
            y[t] = 0.3 * y[t - 1] + 0.8 * x[t - 2] + 0.2 * e[t];
        }
        let r = granger_tests(&x, &y, 3).unwrap_or_else(|err| panic!("{err}"));
        assert!(r.lags[1].ssr_ftest.p < 1e-30, "{:?}", r.lags[1]);
        // the reverse direction is not significant
        let rev = granger_tests(&y, &x, 3).unwrap_or_else(|err| panic!("{err}"));
        assert!(rev.lags[1].ssr_ftest.p > 1e-3, "{:?}", rev.lags[1]);
        // ssr F and Wald F agree (mathematically identical for OLS)
        for lag in &r.lags {
            assert!((lag.ssr_ftest.f - lag.params_ftest.f).abs() <= 1e-10 * lag.ssr_ftest.f);
            assert_eq!(lag.ssr_ftest.df_denom, 300 - lag.lag - (2 * lag.lag + 1));
        }
        assert!(
            r.selected_lag.aic >= 2 && r.selected_lag.bic >= 2,
            "{:?}",
            r.selected_lag
        );
    }

    #[test]
    fn degenerate_inputs_are_typed_errors() {
        let x = noise(40, 3);
        assert!(matches!(
            granger_tests(&x, &x[..30], 2),
            Err(DetectError::LengthMismatch { .. })
        ));
        assert!(matches!(
            granger_tests(&x, &[1.0; 40], 2),
            Err(DetectError::ConstantSeries { .. })
        ));
        assert!(matches!(
            granger_tests(&x[..7], &x[1..8], 2),
            Err(DetectError::TooFewObservations { .. })
        ));
        let mut bad = x.clone();
        bad[5] = f64::INFINITY;
        assert!(matches!(
            granger_tests(&bad, &x, 2),
            Err(DetectError::NonFinite { .. })
        ));
        assert!(matches!(
            granger_tests(&x, &x, 0),
            Err(DetectError::InvalidParameter { .. })
        ));
        // identical series: the cause lags duplicate the effect lags
        assert!(matches!(
            granger_tests(&x, &x, 2),
            Err(DetectError::Collinear { .. })
        ));
        // effect is an exact function of the cause's lag: perfect fit
        let y: Vec<f64> = (0..40)
            .map(|t| if t == 0 { 0.0 } else { 2.0 * x[t - 1] })
            .collect();
        assert!(matches!(
            granger_tests(&x, &y, 1),
            Err(DetectError::PerfectFit { .. })
        ));
    }

    #[test]
    fn request_json_shape() {
        let req: GrangerRequest = serde_json::from_str(&format!(
            "{{\"cause\": {:?}, \"effect\": {:?}, \"max_lag\": 2}}",
            noise(60, 4),
            noise(60, 5)
        ))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(req.difference, Differencing::None);
        let resp = granger(&req).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(resp.differenced, 0);
        let v = serde_json::to_value(&resp).unwrap_or_default();
        let lag = &v["lags"][0];
        for key in ["F", "p", "df_denom", "df_num"] {
            assert!(
                lag["ssr_ftest"].get(key).is_some() && lag["params_ftest"].get(key).is_some(),
                "{key}"
            );
        }
        for key in ["chi2", "p", "df"] {
            assert!(
                lag["ssr_chi2test"].get(key).is_some() && lag["lrtest"].get(key).is_some(),
                "{key}"
            );
        }
        assert_eq!(lag["lag"], 1);
        assert!(v["selected_lag"]["aic"].is_u64());
    }

    #[test]
    fn auto_differencing_reports_itself() {
        let e1 = noise(200, 8);
        let e2 = noise(200, 9);
        let mut walk_a = vec![0.0; 200];
        let mut walk_b = vec![0.0; 200];
        for t in 1..200 {
            walk_a[t] = walk_a[t - 1] + e1[t];
            walk_b[t] = walk_b[t - 1] + e2[t] + 0.5 * e1[t - 1];
        }
        let req = GrangerRequest {
            cause: walk_a,
            effect: walk_b,
            max_lag: 2,
            difference: Differencing::Auto,
            alpha: 0.05,
        };
        let resp = granger(&req).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(resp.differenced, 1, "{:?}", resp.stationarity);
        assert_eq!(resp.nobs, 199);
        assert_eq!(resp.stationarity.len(), 2);
        assert!(resp.lags[0].ssr_ftest.p < 1e-6);
    }
}
