//! Values flowing through PromQL evaluation.
//!
//! Evaluation is step-wise over a grid `start, start+step, .., end` (an instant query is a grid
//! of one step). Every vector-valued node yields [`Series`] with one optional value per step.

use std::sync::Arc;

use serde::Serialize;

/// A label set, sorted by name, `__name__` included when present.
pub type Labels = Arc<Vec<(String, String)>>;

/// The label holding the metric name.
pub const METRIC_NAME: &str = "__name__";

/// The bit pattern Prometheus writes as a staleness marker.
pub const STALE_NAN_BITS: u64 = 0x7ff0_0000_0000_0002;

/// Whether `v` is Prometheus' staleness marker (not just any NaN).
pub fn is_stale(v: f64) -> bool {
    v.to_bits() == STALE_NAN_BITS
}

/// The evaluation grid.
#[derive(Clone, Copy, Debug)]
pub struct Grid {
    /// First step, ms.
    pub start: i64,
    /// Last step, ms (inclusive).
    pub end: i64,
    /// Step, ms (> 0).
    pub step: i64,
}

impl Grid {
    /// Number of steps.
    pub fn len(&self) -> usize {
        ((self.end - self.start) / self.step + 1).max(0) as usize
    }

    /// Whether there is no step.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Timestamp of step `i`, ms.
    pub fn at(&self, i: usize) -> i64 {
        self.start + i as i64 * self.step
    }
}

/// One series over the grid.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Its labels.
    pub labels: Labels,
    /// A value per step, `None` where the series has no value.
    pub values: Vec<Option<f64>>,
}

/// Raw samples of one stored series, sorted by time.
#[derive(Clone, Debug, PartialEq)]
pub struct RawSeries {
    /// Its labels (including `__name__`).
    pub labels: Labels,
    /// Sample timestamps, ms, ascending.
    pub timestamps: Vec<i64>,
    /// Sample values.
    pub values: Vec<f64>,
}

/// The value of an evaluated expression.
#[derive(Clone, Debug)]
pub enum Value {
    /// A scalar per step.
    Scalar(Vec<f64>),
    /// An instant vector.
    Vector(Vec<Series>),
    /// A string literal.
    String(String),
    /// A range vector (only as the result of an instant query of a bare range selector).
    Matrix(Vec<RawSeries>),
}

/// One series of a query result with its points, as the Prometheus HTTP API returns them.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ResultSeries {
    /// Labels, sorted.
    pub labels: Vec<(String, String)>,
    /// `(timestamp ms, value)` points.
    pub points: Vec<(i64, f64)>,
}

/// The result of a query, shaped like Prometheus' `resultType`s.
#[derive(Clone, Debug, PartialEq)]
pub enum QueryResult {
    /// `scalar`: one `(t, v)` per step.
    Scalar(Vec<(i64, f64)>),
    /// `string`.
    String(i64, String),
    /// `vector` (instant queries): one point per series.
    Vector(Vec<ResultSeries>),
    /// `matrix` (range queries, or an instant query of a range selector).
    Matrix(Vec<ResultSeries>),
}

/// Drops `__name__` from a label set.
pub fn drop_name(labels: &Labels) -> Labels {
    if labels.iter().any(|(k, _)| k == METRIC_NAME) {
        Arc::new(
            labels
                .iter()
                .filter(|(k, _)| k != METRIC_NAME)
                .cloned()
                .collect(),
        )
    } else {
        labels.clone()
    }
}

/// Value of label `name` ("" when absent).
pub fn label<'a>(labels: &'a Labels, name: &str) -> &'a str {
    labels
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
        .unwrap_or("")
}

/// A label set with `name` set to `value` (removed when `value` is empty).
pub fn with_label(labels: &Labels, name: &str, value: &str) -> Labels {
    let mut v: Vec<(String, String)> = labels.iter().filter(|(k, _)| k != name).cloned().collect();
    if !value.is_empty() {
        v.push((name.to_owned(), value.to_owned()));
        v.sort();
    }
    Arc::new(v)
}
