//! Deterministic generator of LLM-service metric series: daily and weekly seasonality, trend,
//! noise, level shifts and (optionally) injected anomalies with known windows. Used by the tests
//! and by the `forecast_eval` example; the same seed always gives the same series.

use serde::{Deserialize, Serialize};

use super::rng::SplitMix64;

/// Shape of one generated series. Amplitudes are relative to `base`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeriesSpec {
    /// Name, e.g. `"request_rate"`.
    pub name: String,
    /// Number of samples.
    pub len: usize,
    /// Samples per day (24: hourly).
    pub samples_per_day: usize,
    /// Mean level.
    pub base: f64,
    /// Daily cycle amplitude (relative).
    pub daily_amplitude: f64,
    /// Weekend dip (relative).
    pub weekly_amplitude: f64,
    /// Linear trend per day (relative).
    pub trend_per_day: f64,
    /// Noise standard deviation (relative).
    pub noise: f64,
    /// Number of permanent level shifts.
    pub level_shifts: usize,
    /// Size of each level shift (relative, random sign).
    pub shift_size: f64,
    /// Number of injected anomalies.
    pub anomalies: usize,
    /// Anomaly size in noise standard deviations.
    pub anomaly_sigmas: f64,
}

/// A generated series with ground truth.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GeneratedSeries {
    /// Name from the spec.
    pub name: String,
    /// Samples.
    pub values: Vec<f64>,
    /// Unix seconds, regular.
    pub timestamps: Vec<i64>,
    /// Injected anomalies as inclusive index ranges.
    pub anomaly_windows: Vec<(usize, usize)>,
    /// Indices where a level shift starts.
    pub level_shift_at: Vec<usize>,
}

/// Start of the generated time axis (2025-01-06, a Monday, 00:00 UTC).
pub const EPOCH_START: i64 = 1_736_121_600;

/// Generate `spec` with `seed`.
pub fn generate(spec: &SeriesSpec, seed: u64) -> GeneratedSeries {
    let mut rng = SplitMix64::new(seed ^ 0x5EED_0F5E_41E5);
    let per_day = spec.samples_per_day.max(1);
    let step = 86_400 / per_day as i64;
    let n = spec.len;
    let phase = rng.uniform(0.0, 0.5);
    // Level shifts in the middle 30%..90% of the series.
    let mut level_shift_at: Vec<usize> = (0..spec.level_shifts)
        .map(|_| (n as f64 * rng.uniform(0.3, 0.9)) as usize)
        .collect();
    level_shift_at.sort_unstable();
    let shifts: Vec<f64> = level_shift_at
        .iter()
        .map(|_| {
            if rng.next_f64() < 0.5 {
                -spec.shift_size
            } else {
                spec.shift_size
            }
        })
        .collect();
    let mut values = Vec::with_capacity(n);
    let mut timestamps = Vec::with_capacity(n);
    for i in 0..n {
        let day = i as f64 / per_day as f64;
        let tod = day.fract();
        let dow = (i / per_day) % 7;
        let daily = (std::f64::consts::TAU * (tod - 0.25 - phase)).sin()
            + 0.35 * (2.0 * std::f64::consts::TAU * (tod - phase)).sin();
        let weekend = if dow >= 5 {
            -spec.weekly_amplitude
        } else {
            0.0
        };
        let level: f64 = 1.0
            + spec.trend_per_day * day
            + level_shift_at
                .iter()
                .zip(&shifts)
                .filter(|(at, _)| i >= **at)
                .map(|(_, s)| s)
                .sum::<f64>();
        let clean = spec.base * level * (1.0 + spec.daily_amplitude * daily + weekend);
        let noisy = clean + spec.base * spec.noise * rng.normal();
        values.push(noisy.max(0.0));
        timestamps.push(EPOCH_START + i as i64 * step);
    }
    // Anomalies in the last 60% (after a warm-up), non-overlapping, 2..=8 samples long.
    let mut anomaly_windows: Vec<(usize, usize)> = Vec::new();
    let mut tries = 0;
    while anomaly_windows.len() < spec.anomalies && tries < 1000 && n > 20 {
        tries += 1;
        let len = 2 + rng.below(7);
        let start = (n as f64 * rng.uniform(0.4, 0.98)) as usize;
        let end = (start + len - 1).min(n - 1);
        let clear = anomaly_windows
            .iter()
            .all(|(s, e)| end + 2 * per_day < *s || start > *e + 2 * per_day);
        if !clear {
            continue;
        }
        let sign = if rng.next_f64() < 0.7 { 1.0 } else { -1.0 };
        let size = sign * spec.anomaly_sigmas * spec.noise * spec.base;
        for v in &mut values[start..=end] {
            *v = (*v + size).max(0.0);
        }
        anomaly_windows.push((start, end));
    }
    anomaly_windows.sort_unstable();
    GeneratedSeries {
        name: spec.name.clone(),
        values,
        timestamps,
        anomaly_windows,
        level_shift_at,
    }
}

/// The standard evaluation set: `count` hourly series of `weeks` weeks, cycling through
/// request rate, token throughput, latency p50 and error count shapes with varied noise, trend
/// and level shifts. `anomalies` per series are injected at `anomaly_sigmas` noise sds.
pub fn llm_service_set(
    count: usize,
    weeks: usize,
    anomalies: usize,
    anomaly_sigmas: f64,
    seed: u64,
) -> Vec<GeneratedSeries> {
    let mut rng = SplitMix64::new(seed);
    (0..count)
        .map(|i| {
            let kind = i % 4;
            let (name, base, daily, weekly) = match kind {
                0 => ("request_rate", 120.0, 0.6, 0.35),
                1 => ("token_throughput", 5_000.0, 0.5, 0.3),
                2 => ("latency_p50_ms", 800.0, 0.15, 0.05),
                _ => ("error_count", 6.0, 0.5, 0.3),
            };
            let spec = SeriesSpec {
                name: format!("{name}_{i}"),
                len: weeks * 7 * 24,
                samples_per_day: 24,
                base,
                daily_amplitude: daily * rng.uniform(0.7, 1.3),
                weekly_amplitude: weekly * rng.uniform(0.7, 1.3),
                trend_per_day: rng.uniform(-0.002, 0.006),
                noise: rng.uniform(0.03, 0.10),
                level_shifts: rng.below(2),
                shift_size: rng.uniform(0.1, 0.25),
                anomalies,
                anomaly_sigmas,
            };
            generate(&spec, rng.next_u64())
        })
        .collect()
}

/// A sine with noise, for tests: `len` samples, period `period`.
pub fn noisy_sine(len: usize, period: usize, noise: f64, seed: u64) -> Vec<f64> {
    let mut rng = SplitMix64::new(seed);
    (0..len)
        .map(|i| {
            10.0 + 3.0 * (std::f64::consts::TAU * i as f64 / period.max(1) as f64).sin()
                + noise * rng.normal()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_labelled() {
        let a = llm_service_set(4, 4, 2, 6.0, 1);
        let b = llm_service_set(4, 4, 2, 6.0, 1);
        assert_eq!(a, b);
        for s in &a {
            assert_eq!(s.values.len(), 4 * 7 * 24);
            assert!(s.values.iter().all(|v| v.is_finite() && *v >= 0.0));
            assert_eq!(s.anomaly_windows.len(), 2);
            assert!(s.timestamps.windows(2).all(|w| w[1] - w[0] == 3600));
        }
    }
}
