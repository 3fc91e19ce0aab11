//! Point-forecast accuracy: MAE, sMAPE and MASE as defined for M4 (Oreshkin et al. 2020, §2;
//! Hyndman & Koehler 2006 for MASE).

use super::input::seasonal_mae;
use super::model::ForecastMetrics;
use crate::error::{DetectError, Result, check_finite};

/// Symmetric MAPE in percent: `200/n · Σ |y − ŷ| / (|y| + |ŷ|)`, with `0/0` counted as 0.
pub fn smape(actual: &[f64], predicted: &[f64]) -> Result<f64> {
    check_pair(actual, predicted)?;
    let s: f64 = actual
        .iter()
        .zip(predicted)
        .map(|(y, p)| {
            let den = y.abs() + p.abs();
            if den > 0.0 { (y - p).abs() / den } else { 0.0 }
        })
        .sum();
    Ok(200.0 * s / actual.len() as f64)
}

/// Mean absolute error.
pub fn mae(actual: &[f64], predicted: &[f64]) -> Result<f64> {
    check_pair(actual, predicted)?;
    Ok(actual
        .iter()
        .zip(predicted)
        .map(|(y, p)| (y - p).abs())
        .sum::<f64>()
        / actual.len() as f64)
}

/// MASE: MAE divided by the in-sample seasonal-naive MAE of `history` with period `season`.
/// `Err(DegenerateData)` when that scale is zero or `history` is too short.
pub fn mase(actual: &[f64], predicted: &[f64], history: &[f64], season: usize) -> Result<f64> {
    let m = mae(actual, predicted)?;
    let scale = seasonal_mae(history, season).ok_or_else(|| DetectError::DegenerateData {
        what: "mase",
        reason: format!("seasonal naive error of the history (m = {season}) is zero or undefined"),
    })?;
    Ok(m / scale)
}

/// All three at once (MASE `None` when its scale is undefined).
pub fn forecast_metrics(
    actual: &[f64],
    predicted: &[f64],
    history: &[f64],
    season: usize,
) -> Result<ForecastMetrics> {
    Ok(ForecastMetrics {
        mae: mae(actual, predicted)?,
        smape: smape(actual, predicted)?,
        mase: mase(actual, predicted, history, season).ok(),
    })
}

fn check_pair(actual: &[f64], predicted: &[f64]) -> Result<()> {
    if actual.is_empty() {
        return Err(DetectError::Empty {
            what: "actual values",
        });
    }
    if actual.len() != predicted.len() {
        return Err(DetectError::LengthMismatch {
            left: "actual",
            left_len: actual.len(),
            right: "predicted",
            right_len: predicted.len(),
        });
    }
    check_finite("actual", actual)?;
    check_finite("predicted", predicted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_computed() {
        let y = [1.0, 2.0, 3.0];
        let p = [1.0, 3.0, 3.0];
        assert_eq!(mae(&y, &p).ok(), Some(1.0 / 3.0));
        // 200/3 * (1/5)
        let s = smape(&y, &p).unwrap_or(f64::NAN);
        assert!((s - 200.0 / 15.0).abs() < 1e-12);
        // history 0,1,2,3 with m = 1: scale 1
        let m = mase(&y, &p, &[0.0, 1.0, 2.0, 3.0], 1).unwrap_or(f64::NAN);
        assert!((m - 1.0 / 3.0).abs() < 1e-12);
        assert!(mase(&y, &p, &[1.0, 1.0], 1).is_err());
        assert!(smape(&[0.0], &[0.0]).is_ok_and(|v| v == 0.0));
    }
}
