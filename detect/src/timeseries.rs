//! Aligning timestamped series onto one common time grid before they are compared
//! (Granger tests need the same time steps in both series).
//!
//! Rule: the grid starts at the latest first timestamp (floored to the step) and ends at the
//! earliest last timestamp, so every bucket lies inside every series' observed range. Each
//! bucket `[t0 + i step, t0 + (i+1) step)` aggregates the points that fall in it; an empty
//! bucket is filled by linear interpolation between its nearest non-empty neighbours (it is
//! always bracketed, because the grid is inside every series' range). The number of filled
//! buckets is reported so a caller can judge how much of the data is interpolated.

use crate::error::{DetectError, Result};
use serde::{Deserialize, Serialize};

/// Most buckets one alignment may produce (a limit on memory and work).
pub const MAX_BUCKETS: usize = 1_000_000;

/// A named series of `(timestamp, value)` points.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimeSeries {
    /// Series name (e.g. a metric name).
    pub name: String,
    /// Timestamps in milliseconds since the Unix epoch, strictly increasing.
    pub timestamps_ms: Vec<i64>,
    /// Values, one per timestamp, finite.
    pub values: Vec<f64>,
}

/// How points inside one bucket are combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Aggregation {
    /// Arithmetic mean (gauges, rates).
    #[default]
    Mean,
    /// Sum (counts per interval).
    Sum,
    /// Last value in the bucket.
    Last,
}

/// Series resampled onto a common grid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AlignedSeries {
    /// Start of the first bucket (ms).
    pub start_ms: i64,
    /// Bucket width (ms).
    pub step_ms: i64,
    /// Names, in input order.
    pub names: Vec<String>,
    /// One resampled value vector per input series, all the same length.
    pub values: Vec<Vec<f64>>,
    /// Per series, how many buckets were empty and filled by interpolation.
    pub interpolated: Vec<usize>,
}

fn validate(s: &TimeSeries) -> Result<()> {
    if s.timestamps_ms.len() != s.values.len() {
        return Err(DetectError::LengthMismatch {
            left: "timestamps_ms",
            left_len: s.timestamps_ms.len(),
            right: "values",
            right_len: s.values.len(),
        });
    }
    if s.values.is_empty() {
        return Err(DetectError::Empty {
            what: "time series",
        });
    }
    crate::error::check_finite("values", &s.values)?;
    if let Some(i) = s.timestamps_ms.windows(2).position(|w| w[1] <= w[0]) {
        return Err(DetectError::InvalidTimestamps {
            series: s.name.clone(),
            reason: format!("not strictly increasing at index {}", i + 1),
        });
    }
    Ok(())
}

/// Resample every series onto a grid of `step_ms` (see module docs for the rule).
pub fn align(
    series: &[TimeSeries],
    step_ms: i64,
    aggregation: Aggregation,
) -> Result<AlignedSeries> {
    if step_ms <= 0 {
        return Err(DetectError::InvalidParameter {
            name: "step_ms",
            reason: format!("must be positive, got {step_ms}"),
        });
    }
    if series.is_empty() {
        return Err(DetectError::Empty {
            what: "series list",
        });
    }
    for s in series {
        validate(s)?;
    }
    let first = series
        .iter()
        .filter_map(|s| s.timestamps_ms.first())
        .copied()
        .max()
        .unwrap_or(0);
    let last = series
        .iter()
        .filter_map(|s| s.timestamps_ms.last())
        .copied()
        .min()
        .unwrap_or(0);
    let start = first.div_euclid(step_ms) * step_ms;
    if last < first {
        return Err(DetectError::InvalidTimestamps {
            series: "all".into(),
            reason: "series do not overlap in time".into(),
        });
    }
    let span = i128::from(last) - i128::from(start);
    let buckets = usize::try_from(span / i128::from(step_ms) + 1).unwrap_or(usize::MAX);
    if buckets > MAX_BUCKETS {
        return Err(DetectError::InvalidParameter {
            name: "step_ms",
            reason: format!("{buckets} buckets exceed the limit of {MAX_BUCKETS}"),
        });
    }
    let mut values = Vec::with_capacity(series.len());
    let mut interpolated = Vec::with_capacity(series.len());
    for s in series {
        let mut acc: Vec<(f64, usize)> = vec![(0.0, 0); buckets];
        for (t, v) in s.timestamps_ms.iter().zip(&s.values) {
            if *t < start {
                continue;
            }
            let b = ((i128::from(*t) - i128::from(start)) / i128::from(step_ms)) as usize;
            if b >= buckets {
                break;
            }
            let slot = &mut acc[b];
            match aggregation {
                Aggregation::Last => *slot = (*v, 1),
                _ => *slot = (slot.0 + v, slot.1 + 1),
            }
        }
        let mut out: Vec<Option<f64>> = acc
            .iter()
            .map(|(sum, n)| match (aggregation, *n) {
                (_, 0) => None,
                (Aggregation::Mean, n) => Some(sum / n as f64),
                _ => Some(*sum),
            })
            .collect();
        let filled = fill_gaps(&mut out, s)?;
        interpolated.push(filled);
        values.push(out.into_iter().map(|v| v.unwrap_or(0.0)).collect());
    }
    Ok(AlignedSeries {
        start_ms: start,
        step_ms,
        names: series.iter().map(|s| s.name.clone()).collect(),
        values,
        interpolated,
    })
}

/// Linear interpolation over runs of empty buckets; edges take the nearest value (can only
/// happen when the first bucket starts before the floored start).
fn fill_gaps(out: &mut [Option<f64>], s: &TimeSeries) -> Result<usize> {
    let known: Vec<usize> = out
        .iter()
        .enumerate()
        .filter(|(_, v)| v.is_some())
        .map(|(i, _)| i)
        .collect();
    if known.is_empty() {
        return Err(DetectError::InvalidTimestamps {
            series: s.name.clone(),
            reason: "no point inside the common time range".into(),
        });
    }
    let mut filled = 0;
    let value = |i: usize, out: &[Option<f64>]| out[i].unwrap_or(0.0);
    for i in 0..out.len() {
        if out[i].is_some() {
            continue;
        }
        filled += 1;
        let next = known.partition_point(|&k| k < i);
        let v = match (
            next.checked_sub(1).map(|p| known[p]),
            known.get(next).copied(),
        ) {
            (Some(a), Some(b)) => {
                let (va, vb) = (value(a, out), value(b, out));
                va + (vb - va) * (i - a) as f64 / (b - a) as f64
            }
            (Some(a), None) => value(a, out),
            (None, Some(b)) => value(b, out),
            (None, None) => 0.0,
        };
        out[i] = Some(v);
    }
    Ok(filled)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(name: &str, t: &[i64], v: &[f64]) -> TimeSeries {
        TimeSeries {
            name: name.into(),
            timestamps_ms: t.to_vec(),
            values: v.to_vec(),
        }
    }

    #[test]
    fn aligns_on_overlap_and_interpolates() {
        let a = ts(
            "a",
            &[0, 1000, 2000, 3000, 4000],
            &[1.0, 2.0, 3.0, 4.0, 5.0],
        );
        let b = ts("b", &[1500, 3500, 4500], &[10.0, 30.0, 40.0]);
        let r = align(&[a, b], 1000, Aggregation::Mean).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.start_ms, 1000);
        assert_eq!(r.values[0], vec![2.0, 3.0, 4.0, 5.0]);
        // b: buckets 1000:[10], 2000: empty, 3000:[30], 4000: [40]? no, 4000 > last common (4000 ok)
        assert_eq!(r.values[1], vec![10.0, 20.0, 30.0, 40.0]);
        assert_eq!(r.interpolated, vec![0, 1]);
    }

    #[test]
    fn bad_timestamps_are_errors() {
        let a = ts("a", &[0, 0], &[1.0, 2.0]);
        assert!(matches!(
            align(&[a], 10, Aggregation::Mean),
            Err(DetectError::InvalidTimestamps { .. })
        ));
        let a = ts("a", &[0, 10], &[1.0, 2.0]);
        let b = ts("b", &[20, 30], &[1.0, 2.0]);
        assert!(matches!(
            align(&[a, b], 10, Aggregation::Mean),
            Err(DetectError::InvalidTimestamps { .. })
        ));
        let a = ts("a", &[0, 10_000_000_000], &[1.0, 2.0]);
        assert!(matches!(
            align(&[a], 1, Aggregation::Sum),
            Err(DetectError::InvalidParameter { .. })
        ));
    }
}
