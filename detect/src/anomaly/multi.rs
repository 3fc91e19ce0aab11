//! Judging one service's (or model's) signals together: latency p50/p90/p99, request rate,
//! error ratio and token throughput. Each series gets its own calibrated detector in its "bad"
//! direction; a sustained alert on one series while every series with a static threshold (say,
//! a p99 SLO) stays under that threshold is a **hidden degradation**: the dashboards' alerts
//! stay green, yet something moved, and the finding names what moved.

use serde::{Deserialize, Serialize};

use super::conformal::Direction;
use super::score::{AnomalyConfig, detect};
use super::sustained::Alert;
use crate::error::{DetectError, Result};

/// What a series measures; decides which direction is bad.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SignalRole {
    /// Median latency (bad: up).
    LatencyP50,
    /// 90th percentile latency (bad: up).
    LatencyP90,
    /// 99th percentile latency (bad: up).
    LatencyP99,
    /// Requests per interval (bad: either way).
    RequestRate,
    /// Errors / requests (bad: up).
    ErrorRatio,
    /// Output tokens per second (bad: down).
    TokenThroughput,
    /// Anything else (bad: either way).
    Other,
}

impl SignalRole {
    /// The direction that signals degradation.
    pub fn bad_direction(self) -> Direction {
        match self {
            SignalRole::LatencyP50
            | SignalRole::LatencyP90
            | SignalRole::LatencyP99
            | SignalRole::ErrorRatio => Direction::Above,
            SignalRole::TokenThroughput => Direction::Below,
            SignalRole::RequestRate | SignalRole::Other => Direction::Both,
        }
    }
}

/// One input series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServiceSeries {
    /// Display name, e.g. `"latency_p50_ms"`.
    pub name: String,
    /// Role.
    pub role: SignalRole,
    /// Samples, aligned across all series of the call.
    pub values: Vec<f64>,
    /// A static alert threshold in the bad direction (e.g. the p99 SLO), if one exists.
    pub static_threshold: Option<f64>,
}

/// Kind of finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    /// Series moved while all static thresholds stayed green.
    HiddenDegradation,
    /// Series moved and at least one static threshold was crossed too.
    VisibleDegradation,
}

/// One finding over an interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// Kind.
    pub kind: FindingKind,
    /// First index (inclusive).
    pub start: usize,
    /// Last index (inclusive).
    pub end: usize,
    /// Series with a sustained alert overlapping the interval.
    pub moved: Vec<String>,
    /// Thresholded series that stayed under their threshold throughout.
    pub under_threshold: Vec<String>,
    /// Thresholded series that crossed it.
    pub over_threshold: Vec<String>,
    /// One-line human summary.
    pub summary: String,
}

/// Per-series result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeriesVerdict {
    /// Name.
    pub name: String,
    /// Direction judged.
    pub direction: Direction,
    /// Sustained alerts.
    pub alerts: Vec<Alert>,
    /// Highest anomaly score.
    pub max_score: f64,
}

/// Result of [`judge_service`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServiceReport {
    /// Per-series verdicts, in input order.
    pub series: Vec<SeriesVerdict>,
    /// Findings, ordered by start.
    pub findings: Vec<Finding>,
}

/// Judge the series together. `base` is applied to every series with its direction replaced
/// by the role's bad direction; `volume` (e.g. request counts) feeds the volume guard.
pub fn judge_service(
    series: &[ServiceSeries],
    volume: Option<&[f64]>,
    base: &AnomalyConfig,
) -> Result<ServiceReport> {
    let first = series.first().ok_or(DetectError::Empty {
        what: "service series",
    })?;
    let n = first.values.len();
    for s in series {
        if s.values.len() != n {
            return Err(DetectError::LengthMismatch {
                left: "first series",
                left_len: n,
                right: "another series",
                right_len: s.values.len(),
            });
        }
    }
    let mut verdicts = Vec::with_capacity(series.len());
    for s in series {
        let cfg = AnomalyConfig {
            direction: s.role.bad_direction(),
            ..base.clone()
        };
        let report = detect(&s.values, volume, &cfg, None)?;
        verdicts.push(SeriesVerdict {
            name: s.name.clone(),
            direction: cfg.direction,
            max_score: report.scored.score.iter().copied().fold(0.0, f64::max),
            alerts: report.alerts,
        });
    }
    // Merge overlapping alert intervals of all series into episodes.
    let mut intervals: Vec<(usize, usize)> = verdicts
        .iter()
        .flat_map(|v| v.alerts.iter().map(|a| (a.start, a.end)))
        .collect();
    intervals.sort_unstable();
    let mut episodes: Vec<(usize, usize)> = Vec::new();
    for (s, e) in intervals {
        match episodes.last_mut() {
            Some(last) if s <= last.1 + 1 => last.1 = last.1.max(e),
            _ => episodes.push((s, e)),
        }
    }
    let mut findings = Vec::new();
    for (start, end) in episodes {
        let moved: Vec<String> = verdicts
            .iter()
            .filter(|v| v.alerts.iter().any(|a| a.start <= end && a.end >= start))
            .map(|v| v.name.clone())
            .collect();
        let mut under = Vec::new();
        let mut over = Vec::new();
        for s in series {
            if let Some(th) = s.static_threshold {
                let crossed =
                    s.values[start..=end.min(n - 1)]
                        .iter()
                        .any(|v| match s.role.bad_direction() {
                            Direction::Below => *v < th,
                            Direction::Above => *v > th,
                            Direction::Both => v.abs() > th.abs(),
                        });
                if crossed {
                    over.push(s.name.clone())
                } else {
                    under.push(s.name.clone())
                }
            }
        }
        let kind = if over.is_empty() {
            FindingKind::HiddenDegradation
        } else {
            FindingKind::VisibleDegradation
        };
        let summary = match kind {
            FindingKind::HiddenDegradation if !under.is_empty() => format!(
                "hidden degradation: {} moved while {} stayed under threshold",
                moved.join(", "),
                under.join(", ")
            ),
            FindingKind::HiddenDegradation => format!(
                "degradation without static thresholds: {} moved",
                moved.join(", ")
            ),
            FindingKind::VisibleDegradation => format!(
                "degradation: {} moved; {} over threshold",
                moved.join(", "),
                over.join(", ")
            ),
        };
        findings.push(Finding {
            kind,
            start,
            end,
            moved,
            under_threshold: under,
            over_threshold: over,
            summary,
        });
    }
    Ok(ServiceReport {
        series: verdicts,
        findings,
    })
}
