//! Cooperative cancellation for long reads: a [`Deadline`] is an optional point in time plus an
//! optional shared cancel flag. Code that does unbounded work on a caller's behalf (scans per
//! row group and memtable batch, query evaluation per step and per series) calls
//! [`Deadline::check`] between units of work and stops with [`StorageError::DeadlineExceeded`]
//! once the time has passed or the flag is set, so a request that timed out or was abandoned
//! stops using CPU and memory instead of finishing in the background.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::error::{Result, StorageError};

/// When work done for one request must stop. `Deadline::default()` never expires.
#[derive(Clone, Debug, Default)]
pub struct Deadline {
    at: Option<Instant>,
    cancel: Option<Arc<AtomicBool>>,
}

impl Deadline {
    /// A deadline that never expires.
    pub fn none() -> Self {
        Self::default()
    }

    /// Expires at `at`.
    pub fn at(at: Instant) -> Self {
        Self {
            at: Some(at),
            cancel: None,
        }
    }

    /// Expires `timeout` from now.
    pub fn after(timeout: Duration) -> Self {
        Self::at(Instant::now() + timeout)
    }

    /// Also expires once `flag` is set (by whoever abandoned the request).
    pub fn with_cancel(mut self, flag: Arc<AtomicBool>) -> Self {
        self.cancel = Some(flag);
        self
    }

    /// The instant it expires at, if any.
    pub fn instant(&self) -> Option<Instant> {
        self.at
    }

    /// Whether the deadline has passed or the request was cancelled.
    pub fn expired(&self) -> bool {
        self.cancel
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Relaxed))
            || self.at.is_some_and(|at| Instant::now() >= at)
    }

    /// `Err(StorageError::DeadlineExceeded)` once [`Deadline::expired`].
    pub fn check(&self) -> Result<()> {
        if self.expired() {
            Err(StorageError::DeadlineExceeded)
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn none_never_expires_and_past_instants_do() {
        assert!(Deadline::none().check().is_ok());
        assert!(Deadline::after(Duration::from_secs(3600)).check().is_ok());
        let past = Deadline::at(Instant::now() - Duration::from_millis(1));
        assert!(matches!(past.check(), Err(StorageError::DeadlineExceeded)));
    }

    #[test]
    fn the_cancel_flag_expires_it() {
        let flag = Arc::new(AtomicBool::new(false));
        let d = Deadline::none().with_cancel(Arc::clone(&flag));
        assert!(!d.expired());
        flag.store(true, Ordering::Relaxed);
        assert!(d.expired());
    }
}
