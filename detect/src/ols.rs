//! Ordinary least squares through a Householder QR factorisation of the *augmented* matrix
//! `[X | y]` (nalgebra's `QR`).
//!
//! Why augmented: with `[X | y] = Q R`, the last column of `R` is `Q' y`, so the residual sum
//! of squares of the regression on the first `j` columns of `X` is
//! `sum_{i >= j} R[i, k]^2` (Golub & Van Loan, *Matrix Computations*, 4th ed., §5.3). One
//! factorisation therefore answers every nested model whose regressors are a prefix of the
//! column order: the restricted and unrestricted Granger regressions, and all of ADF's autolag
//! candidates. No normal equations are formed, so accuracy degrades with `cond(X)`, not
//! `cond(X)^2`.

use crate::error::{DetectError, Result};
use nalgebra::DMatrix;

/// A column whose component orthogonal to the previous columns is smaller than this share of
/// its norm is treated as collinear (condition number beyond ~1e10: results would carry fewer
/// than ~6 correct digits, so we refuse rather than report noise).
pub(crate) const RANK_RTOL: f64 = 1e-10;

/// The triangular factor of `[X | y]`, `k` regressors, `nobs` rows.
#[derive(Debug, Clone)]
pub(crate) struct AugmentedQr {
    r: DMatrix<f64>,
    col_norms: Vec<f64>,
}

impl AugmentedQr {
    /// Factorise `m = [X | y]` (last column is the response). `m` may already be a partially
    /// reduced stack (e.g. a triangular factor on top of extra rows).
    pub(crate) fn factor(m: DMatrix<f64>) -> Result<Self> {
        let cols = m.ncols();
        if cols < 2 || m.nrows() < cols {
            return Err(DetectError::TooFewObservations {
                what: "least squares",
                needed: cols,
                got: m.nrows(),
            });
        }
        let col_norms: Vec<f64> = (0..cols).map(|j| m.column(j).norm()).collect();
        if col_norms.iter().any(|v| !v.is_finite()) {
            return Err(DetectError::Numerical {
                what: "least squares column norms",
            });
        }
        let full = m.qr().r();
        // keep the square (k+1)x(k+1) triangle
        let r = full.rows(0, cols).into_owned();
        Ok(Self { r, col_norms })
    }

    /// Number of regressors `k` (columns of `X`).
    pub(crate) fn k(&self) -> usize {
        self.r.ncols() - 1
    }

    /// The triangular factor (`(k+1) x (k+1)`).
    pub(crate) fn r(&self) -> &DMatrix<f64> {
        &self.r
    }

    /// Fail with [`DetectError::Collinear`] when some regressor is numerically dependent on the
    /// ones before it (or is all zeros).
    pub(crate) fn check_rank(&self, context: impl FnOnce() -> String) -> Result<()> {
        for j in 0..self.k() {
            let norm = self.col_norms[j];
            let rjj = self.r[(j, j)].abs();
            if !(norm > 0.0) || !(rjj > RANK_RTOL * norm) {
                return Err(DetectError::Collinear { context: context() });
            }
        }
        Ok(())
    }

    /// `(Q'y)_i`, the response's coordinate along the i-th orthogonal direction.
    pub(crate) fn qty(&self, i: usize) -> f64 {
        self.r[(i, self.k())]
    }

    /// Residual sum of squares of the regression on the first `j` regressors (`j <= k`).
    pub(crate) fn ssr_prefix(&self, j: usize) -> f64 {
        let k = self.k();
        (j.min(k)..=k).map(|i| self.r[(i, k)].powi(2)).sum()
    }

    /// Residual sum of squares of the full regression.
    pub(crate) fn ssr(&self) -> f64 {
        let k = self.k();
        self.r[(k, k)].powi(2)
    }

    /// Sum of `(Q'y)_i^2` for `i` in `from..to`: the drop in SSR from adding regressors
    /// `from..to` to the first `from` (exact identity, no cancellation).
    pub(crate) fn ssr_reduction(&self, from: usize, to: usize) -> f64 {
        (from..to.min(self.k())).map(|i| self.qty(i).powi(2)).sum()
    }

    /// Coefficients by back substitution `R_11 b = (Q'y)_1`.
    pub(crate) fn params(&self) -> Result<Vec<f64>> {
        let k = self.k();
        let mut b = vec![0.0; k];
        for i in (0..k).rev() {
            let mut acc = self.qty(i);
            for (j, bj) in b.iter().enumerate().skip(i + 1) {
                acc -= self.r[(i, j)] * bj;
            }
            let d = self.r[(i, i)];
            if d == 0.0 {
                return Err(DetectError::Collinear {
                    context: "back substitution".into(),
                });
            }
            b[i] = acc / d;
        }
        Ok(b)
    }

    /// Diagonal of `(X'X)^{-1} = R^{-1} R^{-T}`: squared row norms of `R^{-1}`.
    pub(crate) fn inv_xtx_diag(&self) -> Result<Vec<f64>> {
        let k = self.k();
        let r11 = self.r.view((0, 0), (k, k)).into_owned();
        let eye = DMatrix::<f64>::identity(k, k);
        let rinv = r11
            .solve_upper_triangular(&eye)
            .ok_or_else(|| DetectError::Collinear {
                context: "R inverse".into(),
            })?;
        Ok((0..k).map(|i| rinv.row(i).norm_squared()).collect())
    }
}

/// Gaussian log-likelihood of an OLS fit at the MLE of the variance:
/// `-n/2 (ln(2 pi) + ln(ssr/n) + 1)` (statsmodels `RegressionResults.llf` for OLS).
pub(crate) fn gaussian_llf(ssr: f64, nobs: usize) -> f64 {
    let n = nobs as f64;
    -n / 2.0 * ((2.0 * std::f64::consts::PI).ln() + (ssr / n).ln() + 1.0)
}

/// Result of [`ols`].
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct OlsFit {
    /// Coefficients, one per column of `X`.
    pub params: Vec<f64>,
    /// Standard errors `sqrt(sigma^2 diag((X'X)^-1))`, `sigma^2 = ssr / df_resid`.
    pub bse: Vec<f64>,
    /// Residual sum of squares.
    pub ssr: f64,
    /// Number of observations.
    pub nobs: usize,
    /// Residual degrees of freedom `n - k`.
    pub df_resid: usize,
    /// Gaussian log-likelihood (see statsmodels `OLS.loglike`).
    pub llf: f64,
    /// Akaike information criterion `-2 llf + 2 k`.
    pub aic: f64,
    /// Bayesian information criterion `-2 llf + k ln n`.
    pub bic: f64,
}

/// Fit `y = X b + e` by least squares. `columns` are the columns of `X` (include a column of
/// ones for an intercept). Fails on collinear regressors, non-finite input or `n <= k`.
pub fn ols(columns: &[&[f64]], y: &[f64]) -> Result<OlsFit> {
    let n = y.len();
    let k = columns.len();
    if k == 0 {
        return Err(DetectError::Empty {
            what: "regressor columns",
        });
    }
    crate::error::check_finite("y", y)?;
    for c in columns {
        if c.len() != n {
            return Err(DetectError::LengthMismatch {
                left: "column",
                left_len: c.len(),
                right: "y",
                right_len: n,
            });
        }
        crate::error::check_finite("x", c)?;
    }
    if n <= k {
        return Err(DetectError::TooFewObservations {
            what: "ols",
            needed: k + 1,
            got: n,
        });
    }
    let m = DMatrix::from_fn(n, k + 1, |i, j| if j < k { columns[j][i] } else { y[i] });
    let qr = AugmentedQr::factor(m)?;
    qr.check_rank(|| "ols".into())?;
    let params = qr.params()?;
    let ssr = qr.ssr();
    let df_resid = n - k;
    let sigma2 = ssr / df_resid as f64;
    let bse = qr
        .inv_xtx_diag()?
        .into_iter()
        .map(|d| (sigma2 * d).sqrt())
        .collect();
    let llf = gaussian_llf(ssr, n);
    Ok(OlsFit {
        params,
        bse,
        ssr,
        nobs: n,
        df_resid,
        llf,
        aic: -2.0 * llf + 2.0 * k as f64,
        bic: -2.0 * llf + (n as f64).ln() * k as f64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn exact_line_is_recovered() {
        let x: Vec<f64> = (0..10).map(f64::from).collect();
        let ones = vec![1.0; 10];
        let y: Vec<f64> = x
            .iter()
            .map(|v| 2.0 + 0.5 * v + if (*v as i32) % 2 == 0 { 0.1 } else { -0.1 })
            .collect();
        let fit = ols(&[&ones, &x], &y).unwrap_or_else(|e| panic!("{e}"));
        assert!((fit.params[1] - 0.5).abs() < 0.05, "{:?}", fit.params);
        assert_eq!(fit.df_resid, 8);
        assert!(fit.ssr > 0.0);
    }

    #[test]
    fn collinear_is_refused() {
        let a = [1.0, 2.0, 3.0, 4.0, 5.0];
        let b = [2.0, 4.0, 6.0, 8.0, 10.0];
        let y = [1.0, 0.0, 1.0, 0.0, 2.0];
        assert!(matches!(
            ols(&[&a, &b], &y),
            Err(DetectError::Collinear { .. })
        ));
        assert!(matches!(
            ols(&[&a], &[1.0, f64::NAN, 0.0, 0.0, 0.0]),
            Err(DetectError::NonFinite { .. })
        ));
    }

    proptest! {
        #[test]
        fn residuals_orthogonal_and_nested_ssr(
            data in proptest::collection::vec((-10.0f64..10.0, -10.0f64..10.0, -10.0f64..10.0), 8..40)
        ) {
            let x1: Vec<f64> = data.iter().map(|d| d.0).collect();
            let x2: Vec<f64> = data.iter().map(|d| d.1).collect();
            let y: Vec<f64> = data.iter().map(|d| d.2).collect();
            let ones = vec![1.0; y.len()];
            if let (Ok(full), Ok(small)) = (ols(&[&ones, &x1, &x2], &y), ols(&[&ones, &x1], &y)) {
                // adding a regressor never increases the SSR
                prop_assert!(full.ssr <= small.ssr * (1.0 + 1e-10) + 1e-10);
                // residuals are orthogonal to every column
                for col in [&ones, &x1, &x2] {
                    let dot: f64 = (0..y.len()).map(|i| {
                        let fitted = full.params[0] + full.params[1] * x1[i] + full.params[2] * x2[i];
                        (y[i] - fitted) * col[i]
                    }).sum();
                    let scale: f64 = col.iter().map(|v| v * v).sum::<f64>().sqrt() * full.ssr.sqrt().max(1.0);
                    prop_assert!(dot.abs() <= 1e-8 * scale.max(1.0), "dot {dot}");
                }
                // ssr equals the explicit residual sum of squares
                let ssr: f64 = (0..y.len()).map(|i| {
                    let fitted = full.params[0] + full.params[1] * x1[i] + full.params[2] * x2[i];
                    (y[i] - fitted).powi(2)
                }).sum();
                prop_assert!((ssr - full.ssr).abs() <= 1e-9 * ssr.max(1.0));
            }
        }
    }
}
