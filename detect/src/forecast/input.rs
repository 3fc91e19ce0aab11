//! Checks and repairs of input series, shared by training, forecasting and anomaly scoring.
//!
//! Policy (documented once, applied everywhere):
//! * training refuses non-finite values ([`DetectError::NonFinite`]), too-short series
//!   ([`DetectError::TooFewObservations`]) and constant series ([`DetectError::ConstantSeries`]);
//! * scoring repairs gaps instead: NaN/inf samples are *missing*, the model sees them carried
//!   forward from the last finite value (LOCF), and they never get an anomaly score;
//! * timestamps, when given, must be strictly increasing with one step
//!   ([`DetectError::InvalidTimestamps`]); resample irregular series before calling.

use crate::error::{DetectError, Result, check_finite};

/// Refuse non-finite, too-short or constant training series.
pub fn check_training_series(values: &[f64], needed: usize) -> Result<()> {
    if values.len() < needed {
        return Err(DetectError::TooFewObservations {
            what: "n-beats training",
            needed,
            got: values.len(),
        });
    }
    check_finite("series", values)?;
    let first = values.first().copied().unwrap_or(0.0);
    if values.iter().all(|v| *v == first) {
        return Err(DetectError::ConstantSeries {
            series: "training series".into(),
        });
    }
    Ok(())
}

/// Check that `timestamps` (any unit) match `len` values and have one positive step; returns
/// the step.
pub fn check_regular(timestamps: &[i64], len: usize) -> Result<i64> {
    if timestamps.len() != len {
        return Err(DetectError::LengthMismatch {
            left: "timestamps",
            left_len: timestamps.len(),
            right: "values",
            right_len: len,
        });
    }
    let bad = |reason: String| DetectError::InvalidTimestamps {
        series: "series".into(),
        reason,
    };
    if timestamps.len() < 2 {
        return Ok(0);
    }
    let step = timestamps[1].checked_sub(timestamps[0]).unwrap_or(0);
    if step <= 0 {
        return Err(bad("timestamps must be strictly increasing".into()));
    }
    for (i, pair) in timestamps.windows(2).enumerate() {
        let d = pair[1].checked_sub(pair[0]).unwrap_or(0);
        if d != step {
            return Err(bad(format!(
                "irregular step at index {}: {d} instead of {step}; resample first",
                i + 1
            )));
        }
    }
    Ok(step)
}

/// Carry the last finite value forward over NaN/inf (leading gaps take the first finite value).
/// Returns the repaired series and a mask of which samples were missing.
pub fn fill_gaps(values: &[f64]) -> Result<(Vec<f64>, Vec<bool>)> {
    let first = values
        .iter()
        .copied()
        .find(|v| v.is_finite())
        .ok_or(DetectError::Empty {
            what: "finite values in series",
        })?;
    let mut last = first;
    let mut filled = Vec::with_capacity(values.len());
    let mut missing = Vec::with_capacity(values.len());
    for v in values {
        if v.is_finite() {
            last = *v;
            filled.push(*v);
            missing.push(false);
        } else {
            filled.push(last);
            missing.push(true);
        }
    }
    Ok((filled, missing))
}

/// Per-window standardisation: level = mean, scale = standard deviation, floored so a flat
/// window does not divide by zero. Returns `(level, scale)`, both finite.
pub fn window_scale(window: &[f64]) -> (f64, f64) {
    if window.is_empty() {
        return (0.0, 1.0);
    }
    let n = window.len() as f64;
    let mean = window.iter().sum::<f64>() / n;
    let var = window.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
    let floor = 1e-6 * mean.abs().max(1.0);
    let scale = var.sqrt().max(floor);
    if mean.is_finite() && scale.is_finite() {
        (mean, scale)
    } else {
        (0.0, 1.0)
    }
}

/// Mean absolute seasonal difference `mean |x_t − x_{t−m}|` (the MASE scale), or `None` when
/// the window is shorter than `m + 1` or the difference is zero.
pub fn seasonal_mae(window: &[f64], season: usize) -> Option<f64> {
    if season == 0 || window.len() <= season {
        return None;
    }
    let n = window.len() - season;
    let s = (0..n)
        .map(|i| (window[i + season] - window[i]).abs())
        .sum::<f64>()
        / n as f64;
    (s > 0.0 && s.is_finite()).then_some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_and_timestamps() {
        let (f, m) = fill_gaps(&[f64::NAN, 1.0, f64::NAN, 3.0]).unwrap_or_default();
        assert_eq!(f, vec![1.0, 1.0, 1.0, 3.0]);
        assert_eq!(m, vec![true, false, true, false]);
        assert!(fill_gaps(&[f64::NAN]).is_err());
        assert_eq!(check_regular(&[0, 60, 120], 3).ok(), Some(60));
        assert!(matches!(
            check_regular(&[0, 60, 130], 3),
            Err(DetectError::InvalidTimestamps { .. })
        ));
        assert!(check_regular(&[0, 0], 2).is_err());
        assert!(check_regular(&[0, 1], 3).is_err());
        assert!(matches!(
            check_training_series(&[1.0; 50], 10),
            Err(DetectError::ConstantSeries { .. })
        ));
        let (l, s) = window_scale(&[5.0; 4]);
        assert_eq!(l, 5.0);
        assert!(s > 0.0);
    }
}
