//! Expected values and local scales per point: what each detector predicts before seeing
//! `y_t`. Baselines (seasonal naive, rolling z-score, rolling median/MAD) and N-BEATS one-step
//! forecasts all produce an [`Expectation`], so calibration, scoring and alerting are shared.

use crate::error::{DetectError, Result};
use crate::forecast::input::window_scale;
use crate::forecast::{Forecaster, TrainedModel};

/// Per-point expectations for indices `start..n`.
#[derive(Debug, Clone, PartialEq)]
pub struct Expectation {
    /// First index with an expectation (earlier points are warm-up).
    pub start: usize,
    /// Expected value of `y_t` for `t = start..n`.
    pub expected: Vec<f64>,
    /// Local scale `σ_t > 0` for `t = start..n`.
    pub scale: Vec<f64>,
}

fn too_short(what: &'static str, needed: usize, got: usize) -> DetectError {
    DetectError::TooFewObservations { what, needed, got }
}

/// Floor of a local scale: a tiny fraction of the series' typical magnitude, so flat stretches
/// give large but finite standardised residuals.
fn scale_floor(values: &[f64]) -> f64 {
    let mean_abs = values.iter().map(|v| v.abs()).sum::<f64>() / values.len().max(1) as f64;
    (1e-3 * mean_abs).max(1e-9)
}

/// Seasonal naive: `ŷ_t = y_{t−m}`, `σ_t` = mean absolute seasonal difference over the
/// previous `window` points (an in-sample MASE scale), floored.
pub fn seasonal_naive(values: &[f64], season: usize, window: usize) -> Result<Expectation> {
    if season == 0 || window == 0 {
        return Err(DetectError::InvalidParameter {
            name: "season/window",
            reason: "must be >= 1".into(),
        });
    }
    let start = season + window;
    if values.len() <= start {
        return Err(too_short(
            "seasonal naive detector",
            start + 1,
            values.len(),
        ));
    }
    let floor = scale_floor(values);
    let diffs: Vec<f64> = (season..values.len())
        .map(|t| (values[t] - values[t - season]).abs())
        .collect();
    // prefix sums over diffs (diff index d corresponds to t = d + season)
    let mut prefix = vec![0.0; diffs.len() + 1];
    for (i, d) in diffs.iter().enumerate() {
        prefix[i + 1] = prefix[i] + d;
    }
    let mut expected = Vec::with_capacity(values.len() - start);
    let mut scale = Vec::with_capacity(values.len() - start);
    for t in start..values.len() {
        expected.push(values[t - season]);
        let hi = t - season; // diffs for times < t
        let lo = hi - window;
        scale.push(((prefix[hi] - prefix[lo]) / window as f64).max(floor));
    }
    Ok(Expectation {
        start,
        expected,
        scale,
    })
}

/// Rolling z-score: `ŷ_t` = mean and `σ_t` = standard deviation of the previous `window` points.
pub fn rolling_zscore(values: &[f64], window: usize) -> Result<Expectation> {
    if window < 2 {
        return Err(DetectError::InvalidParameter {
            name: "window",
            reason: "must be >= 2".into(),
        });
    }
    if values.len() <= window {
        return Err(too_short(
            "rolling z-score detector",
            window + 1,
            values.len(),
        ));
    }
    let floor = scale_floor(values);
    let mut expected = Vec::with_capacity(values.len() - window);
    let mut scale = Vec::with_capacity(values.len() - window);
    for t in window..values.len() {
        let (m, s) = window_scale(&values[t - window..t]);
        expected.push(m);
        scale.push(s.max(floor));
    }
    Ok(Expectation {
        start: window,
        expected,
        scale,
    })
}

/// Rolling median / MAD: `ŷ_t` = median and `σ_t = 1.4826 · MAD` of the previous `window` points
/// (robust to the anomalies themselves; Rousseeuw & Croux 1993).
pub fn rolling_median_mad(values: &[f64], window: usize) -> Result<Expectation> {
    if window < 3 {
        return Err(DetectError::InvalidParameter {
            name: "window",
            reason: "must be >= 3".into(),
        });
    }
    if values.len() <= window {
        return Err(too_short(
            "rolling median/MAD detector",
            window + 1,
            values.len(),
        ));
    }
    let floor = scale_floor(values);
    let mut expected = Vec::with_capacity(values.len() - window);
    let mut scale = Vec::with_capacity(values.len() - window);
    // Keep a sorted copy of the window, updated by binary-search insert/remove: O(n·w).
    let mut sorted: Vec<f64> = values[..window].to_vec();
    sorted.sort_by(f64::total_cmp);
    let mut dev = Vec::with_capacity(window);
    for t in window..values.len() {
        let med = median_sorted(&sorted);
        dev.clear();
        dev.extend(sorted.iter().map(|v| (v - med).abs()));
        dev.sort_by(f64::total_cmp);
        let mad = median_sorted(&dev);
        expected.push(med);
        scale.push((1.4826 * mad).max(floor));
        let out = values[t - window];
        let pos = sorted.partition_point(|v| v.total_cmp(&out).is_lt());
        if pos < sorted.len() {
            sorted.remove(pos);
        }
        let inn = values[t];
        let pos = sorted.partition_point(|v| v.total_cmp(&inn).is_lt());
        sorted.insert(pos, inn);
    }
    Ok(Expectation {
        start: window,
        expected,
        scale,
    })
}

/// N-BEATS `k`-step-ahead expectations (`1 <= k <= H`): `ŷ_t` is step `k` of the forecast made
/// from the `L` values before `t − k + 1`, so a level shift keeps being compared with what was
/// expected before it for `k` points instead of being absorbed into the next lookback at once;
/// `σ_t` is that window's standard deviation. `k = 1` is [`nbeats_one_step`].
pub fn nbeats_k_step<F: Forecaster + ?Sized>(
    model: &F,
    values: &[f64],
    k: usize,
) -> Result<Expectation> {
    let l = model.lookback();
    let h = model.horizon();
    if k == 0 || k > h {
        return Err(DetectError::InvalidParameter {
            name: "k",
            reason: format!("must be in 1..={h} (the model's horizon), got {k}"),
        });
    }
    let start = l + k - 1;
    if values.len() <= start {
        return Err(too_short("n-beats detector", start + 1, values.len()));
    }
    let floor = scale_floor(values);
    let windows: Vec<&[f64]> = (start..values.len())
        .map(|t| &values[t + 1 - k - l..t + 1 - k])
        .collect();
    let forecasts = model.forecast_many(&windows)?;
    let expected = forecasts
        .iter()
        .zip(&windows)
        .map(|(f, w)| f.get(k - 1).copied().unwrap_or_else(|| w[w.len() - 1]))
        .collect();
    let scale = windows
        .iter()
        .map(|w| window_scale(w).1.max(floor))
        .collect();
    Ok(Expectation {
        start,
        expected,
        scale,
    })
}

fn median_sorted(s: &[f64]) -> f64 {
    let n = s.len();
    if n == 0 {
        0.0
    } else if n % 2 == 1 {
        s[n / 2]
    } else {
        0.5 * (s[n / 2 - 1] + s[n / 2])
    }
}

/// N-BEATS one-step-ahead expectations: `ŷ_t` is the first forecast step from the `L` values
/// before `t`; `σ_t` is that window's standard deviation (the model's own input scale).
/// `values` must be finite (fill gaps first).
pub fn nbeats_one_step(model: &TrainedModel, values: &[f64]) -> Result<Expectation> {
    nbeats_k_step(model, values, 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn baselines_hand_checked() {
        let v = [1.0, 2.0, 3.0, 4.0, 100.0, 6.0];
        let e = rolling_median_mad(&v, 3).unwrap_or_else(|_| unreachable!());
        assert_eq!(e.start, 3);
        assert_eq!(e.expected, vec![2.0, 3.0, 4.0]);
        assert!((e.scale[0] - 1.4826).abs() < 1e-12);
        let z = rolling_zscore(&v, 2).unwrap_or_else(|_| unreachable!());
        assert_eq!(z.expected[0], 1.5);
        let s = seasonal_naive(&[1.0, 5.0, 2.0, 6.0, 3.0, 7.0], 2, 2)
            .unwrap_or_else(|_| unreachable!());
        assert_eq!(s.start, 4);
        assert_eq!(s.expected, vec![2.0, 6.0]);
        assert_eq!(s.scale, vec![1.0, 1.0]);
        assert!(rolling_zscore(&v, 10).is_err());
    }
}
