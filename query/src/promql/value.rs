//! Values flowing through PromQL evaluation.
//!
//! Evaluation is step-wise over a grid `start, start+step, .., end` (an instant query is a grid
//! of one step). Every vector-valued node yields [`Series`] with one optional value per step.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde::Serialize;

use crate::error::{QueryError, Result};

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

/// Prometheus' rule for a vector whose labels stopped being unique (a function or operator
/// dropped `__name__`, `label_replace` rewrote a label, `or` added the other side's series):
/// series with equal labels become one series, and two of them holding a value at the same
/// step fail the query with Prometheus' execution error, "vector cannot contain metrics with
/// the same labelset". Without it, `rate({__name__=~"a|b"}[5m])` over metrics sharing their
/// other labels would answer twice for one label set, and an enclosing `sum by (__name__)`
/// would silently add different metrics together. Order follows each label set's first series.
pub fn merge_same_labelsets(v: Vec<Series>) -> Result<Vec<Series>> {
    if v.len() < 2 {
        return Ok(v);
    }
    let mut seen: HashSet<&Labels> = HashSet::with_capacity(v.len());
    if v.iter().all(|s| seen.insert(&s.labels)) {
        return Ok(v);
    }
    let mut index: HashMap<Labels, usize> = HashMap::with_capacity(v.len());
    let mut out: Vec<Series> = Vec::with_capacity(v.len());
    for s in v {
        match index.entry(s.labels.clone()) {
            Entry::Vacant(e) => {
                e.insert(out.len());
                out.push(s);
            }
            Entry::Occupied(e) => {
                let merged = &mut out[*e.get()];
                for (a, b) in merged.values.iter_mut().zip(s.values) {
                    if b.is_some() {
                        if a.is_some() {
                            return Err(QueryError::Execution(format!(
                                "vector cannot contain metrics with the same labelset {}",
                                format_labels(&merged.labels)
                            )));
                        }
                        *a = b;
                    }
                }
            }
        }
    }
    Ok(out)
}

/// A label set as PromQL writes it, `{a="x", b="y"}`.
pub fn format_labels(labels: &Labels) -> String {
    let inner: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
    format!("{{{}}}", inner.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(labels: &[(&str, &str)], values: &[Option<f64>]) -> Series {
        Series {
            labels: Arc::new(
                labels
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
            ),
            values: values.to_vec(),
        }
    }

    #[test]
    fn unique_labelsets_pass_unchanged() {
        let v = vec![
            series(&[("job", "a")], &[Some(1.0), None]),
            series(&[("job", "b")], &[None, Some(2.0)]),
        ];
        assert_eq!(merge_same_labelsets(v.clone()).expect("unique"), v);
    }

    #[test]
    fn equal_labelsets_merge_where_they_do_not_overlap() {
        let v = vec![
            series(&[("job", "a")], &[Some(1.0), None, None]),
            series(&[("job", "b")], &[Some(5.0), None, None]),
            series(&[("job", "a")], &[None, None, Some(3.0)]),
        ];
        assert_eq!(
            merge_same_labelsets(v).expect("mergeable"),
            vec![
                series(&[("job", "a")], &[Some(1.0), None, Some(3.0)]),
                series(&[("job", "b")], &[Some(5.0), None, None]),
            ]
        );
    }

    #[test]
    fn equal_labelsets_at_one_step_fail_like_prometheus() {
        let v = vec![
            series(&[("instance", "i-0"), ("job", "a")], &[None, Some(1.0)]),
            series(
                &[("instance", "i-0"), ("job", "a")],
                &[Some(2.0), Some(3.0)],
            ),
        ];
        let err = merge_same_labelsets(v).expect_err("overlapping duplicates");
        assert!(matches!(err, QueryError::Execution(_)), "{err:?}");
        assert_eq!(
            err.to_string(),
            r#"vector cannot contain metrics with the same labelset {instance="i-0", job="a"}"#
        );
    }
}
