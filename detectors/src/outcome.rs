//! What a run produced ([`Outcome`]: samples to write, alerts seen, what was scored and
//! skipped), what it takes over from the runs before it ([`Carried`]), and how one series'
//! report becomes points and alerts ([`collect`], [`alert_stats`]). Shared by single and
//! service mode; the run applies an outcome to its detector.

use std::collections::BTreeMap;

use sightline_detect::anomaly::{AnomalyReport, Direction, ValueRange};

use super::events::{Observed, deviation_words, duration_words, severity};
use super::grid::GridSeries;
use super::spec::DetectorSpec;
use super::writeback::{Point, Writer};

/// What a run produced, before it is applied to the detector.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Samples to write.
    pub writer: Writer,
    /// Alerts seen.
    pub observed: Vec<Observed>,
    /// Series key -> first scored point this run looked at (ms).
    pub scored_from: BTreeMap<String, i64>,
    /// Series key -> last point written (ms).
    pub written: BTreeMap<String, i64>,
    /// Series key -> range of the values seen (this run's window and what it was given).
    pub ranges: BTreeMap<String, ValueRange>,
    /// Series scored.
    pub series: usize,
    /// Last scored point (ms).
    pub last_scored_ms: Option<i64>,
    /// Skipped series and why.
    pub skipped: Vec<String>,
    /// Fallbacks used.
    pub fallbacks: Vec<String>,
    /// What the training budget cut short, when it did.
    pub budget: Option<String>,
}

/// What a run takes over from the runs before it, per series key.
#[derive(Debug)]
pub struct Carried {
    /// Last point written (ms): points are written once.
    pub written: BTreeMap<String, i64>,
    /// Values the series took before this run's window, since the last full run (empty for a
    /// full run): the likelihood's spatial novelty is judged against them, so a window shorter
    /// than the series' seasonality does not take each daily peak for a record.
    pub seen: BTreeMap<String, ValueRange>,
}

/// Turn one report into points to write and observed alerts.
#[allow(clippy::too_many_arguments)]
pub fn collect(
    out: &mut Outcome,
    spec: &DetectorSpec,
    s: &GridSeries,
    report: &AnomalyReport,
    key: &str,
    written_until: Option<i64>,
    step_ms: i64,
    label: &str,
) {
    let sc = &report.scored;
    let n = s.values.len();
    let t_of = |i: usize| s.start_ms + i as i64 * step_ms;
    let mut anomalous = vec![false; n];
    for a in &report.alerts {
        for flag in anomalous
            .iter_mut()
            .take(a.end.min(n - 1) + 1)
            .skip(a.start)
        {
            *flag = true;
        }
    }
    let mut points = Vec::new();
    for (j, exp) in sc.expected.iter().enumerate() {
        let i = sc.start + j;
        let t = t_of(i);
        if written_until.is_some_and(|wu| t <= wu) {
            continue;
        }
        points.push(Point {
            t,
            predicted: *exp,
            lower: sc.lower[j],
            upper: sc.upper[j],
            anomalous: anomalous[i],
            likelihood: report.likelihood.get(i).copied().unwrap_or(0.0),
        });
    }
    if let Some(p) = points.last() {
        out.written.insert(key.to_owned(), p.t);
    }
    if let Some(r) = report.range {
        out.ranges.insert(key.to_owned(), r);
    }
    out.writer.add(&spec.name, &s.labels, &points);
    if sc.start < n {
        out.scored_from.insert(key.to_owned(), t_of(sc.start));
        out.last_scored_ms = out.last_scored_ms.max(Some(t_of(n - 1)));
    }
    out.series += 1;
    for a in &report.alerts {
        let stats = alert_stats(&s.values, report, a.start, a.end);
        let dir = match spec.direction {
            Direction::Above => "above",
            Direction::Below => "below",
            Direction::Both if stats.actual >= stats.expected => "above",
            Direction::Both => "below",
        };
        let dur = t_of(a.end) - t_of(a.start) + step_ms;
        let explanation = format!(
            "{label} {} for {} (mean {:.4} vs expected {:.4}; band {:.4}..{:.4})",
            deviation_words(stats.actual, stats.expected),
            duration_words(dur),
            stats.actual,
            stats.expected,
            stats.lower,
            stats.upper,
        );
        out.observed.push(Observed {
            key: key.to_owned(),
            labels: s.labels.clone(),
            start_ms: t_of(a.start),
            last_ms: t_of(a.end),
            closed: a.closed,
            severity: severity(a.peak_score, stats.excess),
            direction: dir.into(),
            peak_score: a.peak_score,
            explanation,
            moved: Vec::new(),
            kind: None,
        });
    }
}

/// Means over the breaching points of an alert.
#[derive(Clone, Copy, Debug, Default)]
pub struct AlertStats {
    /// Mean value.
    pub actual: f64,
    /// Mean expectation.
    pub expected: f64,
    /// Mean lower edge.
    pub lower: f64,
    /// Mean upper edge.
    pub upper: f64,
    /// Mean |residual| / half band width.
    pub excess: f64,
}

/// [`AlertStats`] of input indices `start..=end` (breaching points, or all when none).
pub fn alert_stats(values: &[f64], report: &AnomalyReport, start: usize, end: usize) -> AlertStats {
    let sc = &report.scored;
    let idx: Vec<usize> = (start.max(sc.start)..=end)
        .filter(|i| i - sc.start < sc.expected.len() && values[*i].is_finite())
        .collect();
    let breaching: Vec<usize> = idx
        .iter()
        .copied()
        .filter(|i| sc.breach[i - sc.start])
        .collect();
    let use_idx = if breaching.is_empty() { idx } else { breaching };
    if use_idx.is_empty() {
        return AlertStats::default();
    }
    let k = use_idx.len() as f64;
    let mut st = AlertStats::default();
    for &i in &use_idx {
        let j = i - sc.start;
        st.actual += values[i] / k;
        st.expected += sc.expected[j] / k;
        st.lower += sc.lower[j] / k;
        st.upper += sc.upper[j] / k;
        let half = ((sc.upper[j] - sc.lower[j]) / 2.0).max(1e-12);
        st.excess += ((values[i] - sc.expected[j]).abs() / half) / k;
    }
    st
}
