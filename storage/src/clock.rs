//! An injectable clock, so retention and flush ages are testable without sleeping.

use std::sync::atomic::{AtomicI64, Ordering};

use crate::types::UnixNanos;

/// Source of the current time.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Now, in nanoseconds since the epoch.
    fn now(&self) -> UnixNanos;
}

/// The system's wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> UnixNanos {
        let d = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        UnixNanos(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
    }
}

/// A clock that only moves when told to (tests).
#[derive(Debug, Default)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    /// A clock stopped at `t`.
    pub fn new(t: UnixNanos) -> Self {
        Self(AtomicI64::new(t.0))
    }

    /// Sets the time.
    pub fn set(&self, t: UnixNanos) {
        self.0.store(t.0, Ordering::SeqCst);
    }

    /// Moves the time forward by `nanos`.
    pub fn advance(&self, nanos: i64) {
        self.0.fetch_add(nanos, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> UnixNanos {
        UnixNanos(self.0.load(Ordering::SeqCst))
    }
}
