//! Granger causality across many series at once, returned as a directed graph.
//!
//! Recipe: (1) align timestamped series on a common grid ([`crate::timeseries::align`]);
//! (2) ADF-check each series and difference it (at most twice) until a unit root is rejected,
//! then trim all series to a common length so time indices still match (each series' history
//! is reported); (3) for every ordered pair (cause, effect), run [`granger_tests`] for lags
//! `1..=max_lag`, pick the lag by AIC or BIC and keep that lag's `ssr_ftest` p-value;
//! (4) adjust all p-values with Benjamini-Hochberg and keep edges whose adjusted p-value is
//! below `fdr`. The effect size on an edge is the partial R^2 of the cause lags.

use crate::error::{DetectError, Result};
use crate::granger::{StationarityVerdict, difference, granger_tests};
use crate::stats::benjamini_hochberg;
use crate::timeseries::{Aggregation, TimeSeries, align};
use serde::{Deserialize, Serialize};

/// Most series in one graph request (a limit: pairs grow quadratically).
pub const MAX_SERIES: usize = 200;

/// Which information criterion picks each pair's lag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum LagCriterion {
    /// Akaike.
    #[default]
    Aic,
    /// Schwarz / Bayesian.
    Bic,
}

/// Options for [`causal_graph`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CausalGraphOptions {
    /// Largest lag tested.
    pub max_lag: usize,
    /// False discovery rate for Benjamini-Hochberg.
    pub fdr: f64,
    /// Significance level of the ADF stationarity checks.
    pub adf_alpha: f64,
    /// Lag selection rule.
    pub criterion: LagCriterion,
    /// Difference non-stationary series (recommended; `false` tests levels as given).
    pub difference: bool,
}

impl Default for CausalGraphOptions {
    fn default() -> Self {
        Self {
            max_lag: 4,
            fdr: 0.05,
            adf_alpha: 0.05,
            criterion: LagCriterion::Aic,
            difference: true,
        }
    }
}

/// One tested direction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CausalEdge {
    /// Cause series name.
    pub cause: String,
    /// Effect series name.
    pub effect: String,
    /// Lag selected for this pair.
    pub lag: usize,
    /// `ssr_ftest` F statistic at that lag.
    pub f: f64,
    /// Its p-value.
    pub p_value: f64,
    /// Benjamini-Hochberg adjusted p-value across all tested pairs.
    pub p_adjusted: f64,
    /// Partial R^2 of the cause lags (effect size).
    pub partial_r2: f64,
}

/// A pair that could not be tested, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkippedPair {
    /// Cause series name.
    pub cause: String,
    /// Effect series name.
    pub effect: String,
    /// The error.
    pub reason: String,
}

/// What was done to one series before testing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeriesPreparation {
    /// Series name.
    pub name: String,
    /// Times differenced.
    pub differences: usize,
    /// ADF verdict at each stage (index = differences so far).
    pub verdicts: Vec<StationarityVerdict>,
}

/// The directed graph.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CausalGraph {
    /// Node names.
    pub nodes: Vec<String>,
    /// Significant edges (adjusted p below `fdr`), strongest first.
    pub edges: Vec<CausalEdge>,
    /// Every tested direction, in pair order.
    pub tested: Vec<CausalEdge>,
    /// Directions that could not be tested.
    pub skipped: Vec<SkippedPair>,
    /// Per-series stationarity handling.
    pub preparation: Vec<SeriesPreparation>,
    /// Common length after differencing/trimming.
    pub nobs: usize,
}

/// Build the causal graph over equally spaced, aligned series (see module docs).
pub fn causal_graph(
    names: &[String],
    series: &[Vec<f64>],
    opts: &CausalGraphOptions,
) -> Result<CausalGraph> {
    if names.len() != series.len() {
        return Err(DetectError::LengthMismatch {
            left: "names",
            left_len: names.len(),
            right: "series",
            right_len: series.len(),
        });
    }
    if series.len() < 2 {
        return Err(DetectError::TooFewObservations {
            what: "causal graph series",
            needed: 2,
            got: series.len(),
        });
    }
    if series.len() > MAX_SERIES {
        return Err(DetectError::InvalidParameter {
            name: "series",
            reason: format!("at most {MAX_SERIES} series per graph"),
        });
    }
    if !(opts.fdr > 0.0 && opts.fdr < 1.0 && opts.adf_alpha > 0.0 && opts.adf_alpha < 1.0) {
        return Err(DetectError::InvalidParameter {
            name: "fdr/adf_alpha",
            reason: "must be in (0, 1)".into(),
        });
    }
    let n = series[0].len();
    for (i, s) in series.iter().enumerate() {
        if s.len() != n {
            return Err(DetectError::LengthMismatch {
                left: "series[0]",
                left_len: n,
                right: "series[i]",
                right_len: series[i].len(),
            });
        }
        crate::error::check_finite("series", s)?;
    }

    // stationarity: difference each series until ADF rejects a unit root (at most twice)
    let mut prepared: Vec<Vec<f64>> = Vec::with_capacity(series.len());
    let mut preparation = Vec::with_capacity(series.len());
    for (name, s) in names.iter().zip(series) {
        let mut cur = s.clone();
        let mut verdicts = Vec::new();
        let mut d = 0;
        loop {
            let v = StationarityVerdict::check(&cur, opts.adf_alpha);
            let non_stationary = v.stationary == Some(false);
            verdicts.push(v);
            if !opts.difference || !non_stationary || d >= 2 {
                break;
            }
            cur = difference(&cur);
            d += 1;
        }
        prepared.push(cur);
        preparation.push(SeriesPreparation {
            name: name.clone(),
            differences: d,
            verdicts,
        });
    }
    // trim so index i means the same time step everywhere
    let common = prepared.iter().map(Vec::len).min().unwrap_or(0);
    let prepared: Vec<&[f64]> = prepared.iter().map(|s| &s[s.len() - common..]).collect();

    let mut tested = Vec::new();
    let mut skipped = Vec::new();
    for (ci, cause) in prepared.iter().enumerate() {
        for (ei, effect) in prepared.iter().enumerate() {
            if ci == ei {
                continue;
            }
            match granger_tests(cause, effect, opts.max_lag) {
                Ok(t) => {
                    let lag = match opts.criterion {
                        LagCriterion::Aic => t.selected_lag.aic,
                        LagCriterion::Bic => t.selected_lag.bic,
                    };
                    let chosen = t.lags.iter().find(|l| l.lag == lag).or(t.lags.first());
                    if let Some(l) = chosen {
                        tested.push(CausalEdge {
                            cause: names[ci].clone(),
                            effect: names[ei].clone(),
                            lag: l.lag,
                            f: l.ssr_ftest.f,
                            p_value: l.ssr_ftest.p,
                            p_adjusted: 1.0,
                            partial_r2: l.partial_r2,
                        });
                    }
                }
                Err(e) => skipped.push(SkippedPair {
                    cause: names[ci].clone(),
                    effect: names[ei].clone(),
                    reason: e.to_string(),
                }),
            }
        }
    }
    let p: Vec<f64> = tested.iter().map(|e| e.p_value).collect();
    let adjusted = benjamini_hochberg(&p)?;
    for (e, q) in tested.iter_mut().zip(adjusted) {
        e.p_adjusted = q;
    }
    let mut edges: Vec<CausalEdge> = tested
        .iter()
        .filter(|e| e.p_adjusted < opts.fdr)
        .cloned()
        .collect();
    edges.sort_by(|a, b| {
        a.p_adjusted
            .total_cmp(&b.p_adjusted)
            .then(b.partial_r2.total_cmp(&a.partial_r2))
    });
    Ok(CausalGraph {
        nodes: names.to_vec(),
        edges,
        tested,
        skipped,
        preparation,
        nobs: common,
    })
}

/// Align timestamped series on a `step_ms` grid, then build the graph.
pub fn causal_graph_from_timeseries(
    series: &[TimeSeries],
    step_ms: i64,
    aggregation: Aggregation,
    opts: &CausalGraphOptions,
) -> Result<CausalGraph> {
    let aligned = align(series, step_ms, aggregation)?;
    causal_graph(&aligned.names, &aligned.values, opts)
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
    fn finds_the_planted_edge_only() {
        let n = 400;
        let quality = noise(n, 11);
        let other = noise(n, 12);
        let e = noise(n, 13);
        let mut kpi = vec![0.0; n];
        for t in 1..n {
            kpi[t] = 0.2 * kpi[t - 1] + 0.9 * quality[t - 1] + 0.3 * e[t];
        }
        let names: Vec<String> = ["quality", "other", "kpi"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let g = causal_graph(
            &names,
            &[quality, other, kpi],
            &CausalGraphOptions::default(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(g.tested.len(), 6);
        assert_eq!(g.edges.len(), 1, "{:?}", g.edges);
        assert_eq!(
            (g.edges[0].cause.as_str(), g.edges[0].effect.as_str()),
            ("quality", "kpi")
        );
        assert_eq!(g.edges[0].lag, 1);
        assert!(g.edges[0].partial_r2 > 0.5);
    }

    #[test]
    fn timestamped_input_and_skips() {
        let n = 120;
        let ts: Vec<i64> = (0..n).map(|i| i * 60_000).collect();
        let a = TimeSeries {
            name: "a".into(),
            timestamps_ms: ts.clone(),
            values: noise(n as usize, 1),
        };
        let c = TimeSeries {
            name: "const".into(),
            timestamps_ms: ts,
            values: vec![3.0; n as usize],
        };
        let g = causal_graph_from_timeseries(
            &[a, c],
            60_000,
            Aggregation::Mean,
            &CausalGraphOptions::default(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(g.skipped.len(), 2);
        assert!(g.edges.is_empty());
    }
}
