//! The one quantile of the query layer, Prometheus' `quantile`: linear interpolation at rank
//! `q * (n - 1)` between the closest ranks (numpy's default), over values ordered with NaN
//! first ([`nan_first`]). PromQL's `quantile` and `quantile_over_time`, the quantile aggregate
//! of plans and RED's latency percentiles all compute it here.

use std::cmp::Ordering;

/// Ascending order with NaN before everything, as Go's `sort.Sort(vectorByValueHeap)` orders
/// values in Prometheus (`quantile`, `quantile_over_time`, `sort`).
pub fn nan_first(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
        _ => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

/// Quantile `q` of `values`, which it reorders: NaN when `values` is empty or `q` is NaN,
/// `-inf` below 0 and `+inf` above 1 (Prometheus' answers for a `q` out of range). Linear in
/// the number of values (a selection, not a sort).
pub fn quantile(values: &mut [f64], q: f64) -> f64 {
    if values.is_empty() || q.is_nan() {
        return f64::NAN;
    }
    if q < 0.0 {
        return f64::NEG_INFINITY;
    }
    if q > 1.0 {
        return f64::INFINITY;
    }
    let n = values.len();
    let rank = q * (n - 1) as f64;
    let lower = rank.floor() as usize;
    let upper = (lower + 1).min(n - 1);
    let (_, lo, rest) = values.select_nth_unstable_by(lower, |a, b| nan_first(*a, *b));
    let lo = *lo;
    // The next rank is the smallest of what the selection put after `lower`.
    let hi = if upper == lower {
        lo
    } else {
        rest.iter()
            .copied()
            .min_by(|a, b| nan_first(*a, *b))
            .unwrap_or(lo)
    };
    let weight = rank - rank.floor();
    lo * (1.0 - weight) + hi * weight
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn interpolates_between_closest_ranks() {
        let mut v = vec![4.0, 1.0, 3.0, 2.0];
        assert_eq!(quantile(&mut v, 0.0), 1.0);
        assert_eq!(quantile(&mut v, 1.0), 4.0);
        assert!((quantile(&mut v, 0.5) - 2.5).abs() < 1e-12);
        assert!((quantile(&mut v, 0.9) - 3.7).abs() < 1e-12);
        assert!(quantile(&mut [], 0.5).is_nan());
        assert!(quantile(&mut [1.0], f64::NAN).is_nan());
        assert_eq!(quantile(&mut [1.0], -0.1), f64::NEG_INFINITY);
        assert_eq!(quantile(&mut [1.0], 1.1), f64::INFINITY);
        // NaN sorts first, as in Prometheus.
        assert!(quantile(&mut [2.0, f64::NAN, 1.0], 0.0).is_nan());
        assert_eq!(quantile(&mut [2.0, f64::NAN, 1.0], 1.0), 2.0);
    }

    proptest! {
        /// Selection gives exactly what sorting and reading the two ranks gives.
        #[test]
        fn equals_the_sorted_definition(
            mut v in prop::collection::vec(-1e6f64..1e6, 1..200),
            q in 0.0f64..=1.0,
        ) {
            let mut sorted = v.clone();
            sorted.sort_by(|a, b| nan_first(*a, *b));
            let rank = q * (sorted.len() - 1) as f64;
            let (lower, w) = (rank.floor() as usize, rank - rank.floor());
            let upper = (lower + 1).min(sorted.len() - 1);
            let want = sorted[lower] * (1.0 - w) + sorted[upper] * w;
            prop_assert_eq!(quantile(&mut v, q).to_bits(), want.to_bits());
        }
    }
}
