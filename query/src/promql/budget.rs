//! What one PromQL evaluation may spend: time (a [`Deadline`]) and memory (samples held at
//! once, Prometheus' `--query.max-samples`).
//!
//! **What is counted.** As in Prometheus, the samples evaluation holds in memory at the same
//! time: the raw samples a selector loaded (while its result is built from them), the points
//! of every intermediate result that is still alive (the left side of a binary operator while
//! the right side is evaluated, the argument of a function while its result is built), and the
//! points of the result. A point is one step of one series of an instant vector, one step of a
//! scalar, or one sample of a range vector. Unlike Prometheus, which counts only the steps at
//! which a series has a value, every step of an instant-vector series counts, present or not,
//! because that is the memory the evaluator holds (one slot per step). Results are reserved
//! before they are allocated where their size is known (selectors), so a query over budget
//! stops before it holds the memory, not after.

use std::cell::Cell;

use sightline_storage::Deadline;

use super::value::Value;
use crate::error::{QueryError, Result};

/// Prometheus' default `--query.max-samples`.
pub const DEFAULT_MAX_SAMPLES: usize = 50_000_000;

/// The limits of one evaluation. `Budget::default()` never times out and allows
/// [`DEFAULT_MAX_SAMPLES`].
#[derive(Clone, Debug)]
pub struct Budget {
    /// When evaluation must stop; checked per expression node, per series and per step of a
    /// range function, per selector fetch, and by storage per row group of its scans.
    pub deadline: Deadline,
    /// Most samples held in memory at once (see the module documentation for what counts).
    pub max_samples: usize,
}

impl Default for Budget {
    fn default() -> Self {
        Self {
            deadline: Deadline::none(),
            max_samples: DEFAULT_MAX_SAMPLES,
        }
    }
}

impl Budget {
    /// [`DEFAULT_MAX_SAMPLES`] until `deadline`.
    pub fn until(deadline: Deadline) -> Self {
        Self {
            deadline,
            ..Self::default()
        }
    }

    /// The same deadline with another sample limit.
    pub fn with_max_samples(mut self, max_samples: usize) -> Self {
        self.max_samples = max_samples;
        self
    }

    /// `Err(QueryError::Timeout)` once the deadline has passed or the request was cancelled.
    #[inline(never)]
    pub fn check_deadline(&self) -> Result<()> {
        self.deadline.check().map_err(QueryError::from)
    }
}

/// The running count of samples one evaluation holds.
pub(crate) struct Held {
    now: Cell<usize>,
    max: usize,
}

impl Held {
    pub(crate) fn new(max: usize) -> Self {
        Self {
            now: Cell::new(0),
            max,
        }
    }

    /// Samples held now.
    pub(crate) fn get(&self) -> usize {
        self.now.get()
    }

    /// Samples that may still be taken.
    pub(crate) fn left(&self) -> usize {
        self.max.saturating_sub(self.now.get())
    }

    /// Takes `n` more, or fails with [`QueryError::TooManySamples`].
    pub(crate) fn take(&self, n: usize) -> Result<()> {
        match self.now.get().checked_add(n) {
            Some(total) if total <= self.max => {
                self.now.set(total);
                Ok(())
            }
            _ => Err(QueryError::TooManySamples),
        }
    }

    /// Back to `mark` (what was held before a node whose inputs are now consumed), then takes
    /// the node's result.
    #[inline(never)]
    pub(crate) fn settle(&self, mark: usize, result: &Value) -> Result<()> {
        self.now.set(mark);
        self.take(points(result))
    }
}

/// The points a value holds.
pub(crate) fn points(v: &Value) -> usize {
    match v {
        Value::Scalar(s) => s.len(),
        Value::String(_) => 0,
        Value::Vector(v) => v.iter().map(|s| s.values.len()).sum(),
        Value::Matrix(m) => m.iter().map(|s| s.timestamps.len()).sum(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_up_to_the_limit_and_settles_to_the_result() {
        let h = Held::new(10);
        assert!(h.take(6).is_ok());
        assert!(matches!(h.take(5), Err(QueryError::TooManySamples)));
        assert_eq!((h.get(), h.left()), (6, 4));
        assert!(h.settle(2, &Value::Scalar(vec![0.0; 3])).is_ok());
        assert_eq!(h.get(), 5);
        assert!(matches!(
            h.take(usize::MAX),
            Err(QueryError::TooManySamples)
        ));
    }
}
