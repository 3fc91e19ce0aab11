//! Alerts only on sustained deviation: an alert opens when at least `min_breaches` of the last
//! `window` points breach the band (each with enough volume), and closes after `recovery`
//! consecutive points without a breach. Single spikes therefore never page anyone unless
//! `min_breaches = 1`.

use serde::{Deserialize, Serialize};

use crate::error::{DetectError, Result};

/// Sustained-alert rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SustainedConfig {
    /// Look-back window in points (≥ 1).
    pub window: usize,
    /// Breaches needed within the window (1..=window).
    pub min_breaches: usize,
    /// Consecutive quiet points that close an alert (≥ 1).
    pub recovery: usize,
    /// Minimum volume (e.g. requests in the interval) for a breach to count; points with less
    /// (or NaN) volume are ignored, so a 3-request minute cannot raise a latency alert.
    pub min_volume: Option<f64>,
}

impl Default for SustainedConfig {
    /// 3 of the last 5 points, closed after 3 quiet points, no volume guard.
    fn default() -> Self {
        Self {
            window: 5,
            min_breaches: 3,
            recovery: 3,
            min_volume: None,
        }
    }
}

/// One alert: an interval of sustained deviation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Alert {
    /// Index of the first breach of the qualifying window.
    pub start: usize,
    /// Index of the last breach (inclusive).
    pub end: usize,
    /// Whether recovery was seen (false: still open at the end of the data).
    pub closed: bool,
    /// Breaching points inside the alert.
    pub breaches: usize,
    /// Highest anomaly score inside the alert.
    pub peak_score: f64,
}

impl SustainedConfig {
    /// Check ranges.
    pub fn validate(&self) -> Result<()> {
        let bad = |reason: String| DetectError::InvalidParameter {
            name: "sustained",
            reason,
        };
        if self.window == 0 || self.recovery == 0 {
            return Err(bad("window and recovery must be >= 1".into()));
        }
        if self.min_breaches == 0 || self.min_breaches > self.window {
            return Err(bad(format!(
                "min_breaches must be in 1..={}, got {}",
                self.window, self.min_breaches
            )));
        }
        if let Some(v) = self.min_volume
            && !v.is_finite()
        {
            return Err(bad("min_volume must be finite".into()));
        }
        Ok(())
    }
}

/// Turn per-point breaches into alerts. `scores` (same length) supplies `peak_score`;
/// `volume` (same length, optional) feeds the minimum-volume guard.
pub fn sustained_alerts(
    breach: &[bool],
    scores: &[f64],
    volume: Option<&[f64]>,
    cfg: &SustainedConfig,
) -> Result<Vec<Alert>> {
    cfg.validate()?;
    let n = breach.len();
    let mismatch = |right: &'static str, right_len: usize| DetectError::LengthMismatch {
        left: "breach",
        left_len: n,
        right,
        right_len,
    };
    if scores.len() != n {
        return Err(mismatch("scores", scores.len()));
    }
    if let Some(v) = volume
        && v.len() != n
    {
        return Err(mismatch("volume", v.len()));
    }
    let eligible: Vec<bool> = (0..n)
        .map(|t| {
            breach[t]
                && match (cfg.min_volume, volume) {
                    (Some(min), Some(v)) => v[t] >= min,
                    _ => true,
                }
        })
        .collect();
    let mut alerts = Vec::new();
    let mut count = 0usize; // eligible points in (t - window, t]
    let mut open: Option<Alert> = None;
    let mut quiet = 0usize;
    for t in 0..n {
        if eligible[t] {
            count += 1;
        }
        if t >= cfg.window && eligible[t - cfg.window] {
            count -= 1;
        }
        let score = if scores[t].is_finite() {
            scores[t]
        } else {
            0.0
        };
        match open.as_mut() {
            None => {
                if count >= cfg.min_breaches {
                    let lo = (t + 1).saturating_sub(cfg.window);
                    let start = (lo..=t).find(|i| eligible[*i]).unwrap_or(t);
                    let peak = (start..=t)
                        .filter(|i| eligible[*i])
                        .map(|i| scores[i])
                        .filter(|s| s.is_finite())
                        .fold(0.0, f64::max);
                    open = Some(Alert {
                        start,
                        end: t,
                        closed: false,
                        breaches: count,
                        peak_score: peak,
                    });
                    quiet = 0;
                }
            }
            Some(a) => {
                if eligible[t] {
                    a.end = t;
                    a.breaches += 1;
                    a.peak_score = a.peak_score.max(score);
                    quiet = 0;
                } else {
                    quiet += 1;
                    if quiet >= cfg.recovery {
                        a.closed = true;
                        alerts.push(a.clone());
                        open = None;
                    }
                }
            }
        }
    }
    if let Some(a) = open {
        alerts.push(a);
    }
    Ok(alerts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Vec<bool> {
        s.chars().map(|c| c == '1').collect()
    }

    fn run(s: &str, cfg: &SustainedConfig) -> Vec<(usize, usize, bool)> {
        let br = b(s);
        let sc = vec![0.5; br.len()];
        sustained_alerts(&br, &sc, None, cfg)
            .unwrap_or_default()
            .iter()
            .map(|a| (a.start, a.end, a.closed))
            .collect()
    }

    #[test]
    fn single_spike_is_ignored() {
        let cfg = SustainedConfig::default();
        assert!(run("0001000000100000", &cfg).is_empty());
    }

    #[test]
    fn three_of_five_opens_and_recovery_closes() {
        let cfg = SustainedConfig::default();
        // breaches at 2, 4, 5 -> opens at t=5, starting at 2; quiet 6,7,8 -> closed, end 5
        assert_eq!(run("0010110000", &cfg), vec![(2, 5, true)]);
        // still breaching at the end: open alert
        assert_eq!(run("0000111", &cfg), vec![(4, 6, false)]);
    }

    #[test]
    fn short_gaps_do_not_close() {
        let cfg = SustainedConfig {
            recovery: 3,
            ..SustainedConfig::default()
        };
        assert_eq!(run("111001100111000", &cfg), vec![(0, 11, true)]);
    }

    #[test]
    fn volume_guard_and_bad_config() {
        let br = b("11111");
        let sc = vec![1.0; 5];
        let vol = [1.0, 1.0, 1.0, 100.0, 100.0];
        let cfg = SustainedConfig {
            window: 3,
            min_breaches: 3,
            recovery: 1,
            min_volume: Some(10.0),
        };
        assert!(sustained_alerts(&br, &sc, Some(&vol), &cfg).is_ok_and(|a| a.is_empty()));
        let vol = [1.0, 100.0, 100.0, 100.0, 100.0];
        assert!(
            sustained_alerts(&br, &sc, Some(&vol), &cfg)
                .is_ok_and(|a| a.len() == 1 && a[0].start == 1)
        );
        let bad = SustainedConfig {
            min_breaches: 4,
            ..cfg.clone()
        };
        assert!(sustained_alerts(&br, &sc, None, &bad).is_err());
        assert!(sustained_alerts(&br, &sc[..2], None, &cfg).is_err());
    }
}
