//! The in-flight decoded-bytes budget: what the requests being decoded and stored hold in
//! memory at once, across both transports and remote write. Each request reserves its
//! decompressed body and the pre-scan's estimate of its decoded size before it allocates
//! them, and gives them back when it is done (the [`Reservation`] drops). A request that
//! does not fit is refused with [`IngestError::Busy`] (429 / `RESOURCE_EXHAUSTED` with a
//! retry delay), like the in-flight request limit.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::error::IngestError;

/// How long clients are asked to wait when the budget is spent.
pub const RETRY_AFTER: Duration = Duration::from_secs(1);

/// A byte budget shared by concurrent requests.
#[derive(Debug)]
pub struct DecodedBudget {
    limit: u64,
    used: AtomicU64,
}

impl DecodedBudget {
    /// A budget of `limit` bytes.
    pub fn new(limit: u64) -> Arc<Self> {
        Arc::new(Self {
            limit,
            used: AtomicU64::new(0),
        })
    }

    /// Bytes reserved now.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Acquire)
    }

    /// The budget's size.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// An empty reservation, to grow as the request learns its size.
    pub fn reservation(self: &Arc<Self>) -> Reservation {
        Reservation {
            budget: Arc::clone(self),
            bytes: 0,
        }
    }

    fn take(&self, n: u64) -> Result<(), IngestError> {
        let mut cur = self.used.load(Ordering::Acquire);
        loop {
            let next = cur.saturating_add(n);
            if next > self.limit {
                return Err(IngestError::Busy {
                    retry_after: RETRY_AFTER,
                });
            }
            match self
                .used
                .compare_exchange_weak(cur, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Ok(()),
                Err(seen) => cur = seen,
            }
        }
    }

    fn give(&self, n: u64) {
        self.used.fetch_sub(n, Ordering::AcqRel);
    }
}

/// Bytes one request holds of a [`DecodedBudget`]; released on drop.
#[derive(Debug)]
pub struct Reservation {
    budget: Arc<DecodedBudget>,
    bytes: u64,
}

impl Reservation {
    /// Bytes held.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Holds `n` more bytes, or refuses with [`IngestError::Busy`] (holding what it held).
    pub fn grow(&mut self, n: u64) -> Result<(), IngestError> {
        self.budget.take(n)?;
        self.bytes += n;
        Ok(())
    }

    /// Holds at least `n` bytes in all.
    pub fn grow_to(&mut self, n: u64) -> Result<(), IngestError> {
        if n > self.bytes {
            self.grow(n - self.bytes)?;
        }
        Ok(())
    }

    /// Gives back `n` bytes (at most what is held).
    pub fn release(&mut self, n: u64) {
        let n = n.min(self.bytes);
        self.budget.give(n);
        self.bytes -= n;
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.budget.give(self.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserves_up_to_the_limit_and_releases_on_drop() {
        let b = DecodedBudget::new(100);
        let mut r1 = b.reservation();
        assert!(r1.grow(60).is_ok());
        let mut r2 = b.reservation();
        assert!(matches!(r2.grow(41), Err(IngestError::Busy { .. })));
        assert_eq!(r2.bytes(), 0);
        assert!(r2.grow_to(40).is_ok());
        assert_eq!(b.used(), 100);
        r1.release(50);
        assert_eq!((r1.bytes(), b.used()), (10, 50));
        drop(r1);
        drop(r2);
        assert_eq!(b.used(), 0);
    }
}
