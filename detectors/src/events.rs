//! Anomaly events: sustained alerts turned into intervals of wall-clock time with a severity,
//! a direction and a human explanation, merged run after run into the detector's persisted
//! list (an open event is extended while the alert lasts and closed when it recovers).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Most events kept per detector (oldest dropped first).
pub const MAX_EVENTS: usize = 10_000;

/// One anomaly event.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AnomalyEvent {
    /// Stable id: `<detector>-<series hash>-<start ms>`.
    pub id: String,
    /// Detector name.
    pub detector: String,
    /// Labels of the series (without `__name__`); service events carry `role`.
    pub labels: BTreeMap<String, String>,
    /// First anomalous point (ms).
    pub start_ms: i64,
    /// Last anomalous point once recovered; `null` while open.
    pub end_ms: Option<i64>,
    /// 0..1: conformal peak score times a magnitude factor.
    pub severity: f64,
    /// `low` (< 0.4), `medium` (< 0.7) or `high`.
    pub level: String,
    /// `above` or `below` the band.
    pub direction: String,
    /// Highest conformal anomaly score inside the event.
    pub peak_score: f64,
    /// One line for humans.
    pub explanation: String,
    /// Last breaching point seen (ms), open or closed.
    pub last_ms: i64,
    /// Service mode: the roles that moved.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub moved: Vec<String>,
    /// Service mode: `hidden_degradation` or `visible_degradation`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
}

/// One alert of the current run, in time.
#[derive(Clone, Debug, PartialEq)]
pub struct Observed {
    /// Series key (see [`series_key`]).
    pub key: String,
    /// Labels.
    pub labels: BTreeMap<String, String>,
    /// First point (ms).
    pub start_ms: i64,
    /// Last breaching point (ms).
    pub last_ms: i64,
    /// Whether the alert recovered.
    pub closed: bool,
    /// Severity 0..1.
    pub severity: f64,
    /// `above`/`below`.
    pub direction: String,
    /// Peak score.
    pub peak_score: f64,
    /// Explanation.
    pub explanation: String,
    /// Roles that moved (service mode).
    pub moved: Vec<String>,
    /// Finding kind (service mode).
    pub kind: Option<String>,
}

/// The level of a severity.
pub fn level(severity: f64) -> &'static str {
    if severity < 0.4 {
        "low"
    } else if severity < 0.7 {
        "medium"
    } else {
        "high"
    }
}

/// Severity from the peak conformal score and the mean excess over the band (|residual| /
/// half band width, 1 at the band edge): `peak · (1 − e^{−excess/2})`, in 0..1.
pub fn severity(peak_score: f64, excess: f64) -> f64 {
    let peak = if peak_score.is_finite() {
        peak_score.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let excess = if excess.is_finite() {
        excess.max(0.0)
    } else {
        0.0
    };
    (peak * (1.0 - (-excess / 2.0).exp())).clamp(0.0, 1.0)
}

/// A stable key of a label set (used in ids, write positions and model directories).
pub fn series_key(labels: &BTreeMap<String, String>) -> String {
    let mut buf = Vec::new();
    for (k, v) in labels {
        buf.extend_from_slice(&(k.len() as u32).to_le_bytes());
        buf.extend_from_slice(k.as_bytes());
        buf.extend_from_slice(&(v.len() as u32).to_le_bytes());
        buf.extend_from_slice(v.as_bytes());
    }
    format!("{:016x}", xxhash_rust::xxh3::xxh3_64(&buf))
}

/// `"38% above expected"`-style wording of a relative deviation.
pub fn deviation_words(actual: f64, expected: f64) -> String {
    let dir = if actual >= expected { "above" } else { "below" };
    if expected.abs() > 1e-12 {
        let pct = ((actual - expected) / expected.abs() * 100.0).abs();
        format!("{pct:.0}% {dir} expected")
    } else {
        format!("{actual:.3} vs expected {expected:.3} ({dir})")
    }
}

/// `"25 min"`, `"3 h"`, `"40 s"`.
pub fn duration_words(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    if s < 120 {
        format!("{s} s")
    } else if s < 2 * 3600 {
        format!("{} min", s / 60)
    } else if s < 2 * 86_400 {
        format!("{:.1} h", s as f64 / 3600.0)
    } else {
        format!("{:.1} d", s as f64 / 86_400.0)
    }
}

/// A display name of a series: `name{k="v",...}`.
pub fn display(name: &str, labels: &BTreeMap<String, String>) -> String {
    if labels.is_empty() {
        return name.to_owned();
    }
    let inner: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
    format!("{name}{{{}}}", inner.join(","))
}

/// Merge this run's alerts into `events`. An observed alert continues an existing event of the
/// same series when they overlap in time (or the event is still open and the alert starts
/// within `gap_ms` of its last point); otherwise it opens a new one. Open events of scored
/// series that no alert continues are closed at their last point: the scored range no longer
/// shows them. `scored_from_ms` bounds that rule to what this run looked at.
pub fn merge(
    events: &mut Vec<AnomalyEvent>,
    detector: &str,
    observed: Vec<Observed>,
    scored: &BTreeMap<String, i64>,
    gap_ms: i64,
) {
    let mut touched = vec![false; events.len()];
    for o in observed {
        let hit = events.iter().position(|e| {
            series_key(&e.labels) == o.key
                && e.start_ms <= o.last_ms
                && (e.last_ms >= o.start_ms
                    || (e.end_ms.is_none() && e.last_ms + gap_ms >= o.start_ms))
        });
        match hit {
            Some(i) => {
                let e = &mut events[i];
                e.start_ms = e.start_ms.min(o.start_ms);
                e.last_ms = e.last_ms.max(o.last_ms);
                e.end_ms = if o.closed { Some(e.last_ms) } else { None };
                e.peak_score = e.peak_score.max(o.peak_score);
                e.severity = e.severity.max(o.severity);
                e.level = level(e.severity).into();
                e.direction = o.direction;
                e.explanation = o.explanation;
                e.moved = o.moved;
                e.kind = o.kind;
                touched[i] = true;
            }
            None => {
                events.push(AnomalyEvent {
                    id: format!("{detector}-{}-{}", o.key, o.start_ms),
                    detector: detector.to_owned(),
                    labels: o.labels,
                    start_ms: o.start_ms,
                    end_ms: o.closed.then_some(o.last_ms),
                    severity: o.severity,
                    level: level(o.severity).into(),
                    direction: o.direction,
                    peak_score: o.peak_score,
                    explanation: o.explanation,
                    last_ms: o.last_ms,
                    moved: o.moved,
                    kind: o.kind,
                });
                touched.push(true);
            }
        }
    }
    for (e, t) in events.iter_mut().zip(&touched) {
        if !t
            && e.end_ms.is_none()
            && scored
                .get(&series_key(&e.labels))
                .is_some_and(|from| *from <= e.last_ms)
        {
            e.end_ms = Some(e.last_ms);
        }
    }
    events.sort_by_key(|e| e.start_ms);
    if events.len() > MAX_EVENTS {
        let drop = events.len() - MAX_EVENTS;
        events.drain(..drop);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(start: i64, last: i64, closed: bool) -> Observed {
        Observed {
            key: series_key(&BTreeMap::new()),
            labels: BTreeMap::new(),
            start_ms: start,
            last_ms: last,
            closed,
            severity: 0.8,
            direction: "above".into(),
            peak_score: 0.99,
            explanation: "x".into(),
            moved: Vec::new(),
            kind: None,
        }
    }

    #[test]
    fn open_event_is_extended_then_closed() {
        let mut ev = Vec::new();
        let scored = BTreeMap::from([(series_key(&BTreeMap::new()), 0)]);
        merge(&mut ev, "d", vec![obs(100, 200, false)], &scored, 60);
        assert_eq!((ev.len(), ev[0].end_ms), (1, None));
        merge(&mut ev, "d", vec![obs(100, 400, true)], &scored, 60);
        assert_eq!((ev.len(), ev[0].end_ms), (1, Some(400)));
        // A later, separate alert is a new event.
        merge(&mut ev, "d", vec![obs(10_000, 10_100, false)], &scored, 60);
        assert_eq!(ev.len(), 2);
        // Nothing observed any more: the open one closes at its last point.
        merge(&mut ev, "d", vec![], &scored, 60);
        assert_eq!(ev[1].end_ms, Some(10_100));
        assert_eq!(level(severity(0.99, 6.0)), "high");
        assert_eq!(level(severity(0.5, 1.0)), "low");
        assert_eq!(deviation_words(138.0, 100.0), "38% above expected");
    }
}
