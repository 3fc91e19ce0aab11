//! The memory scans hold: every batch a scan reads (segment rows, memtable rows, rollup rows) is
//! counted against the store's scan memory budget ([`crate::StoreConfig::scan_memory_bytes`]),
//! shared by all running scans, until the [`crate::ScanResult`] holding it is dropped. A scan
//! that would pass the budget stops reading and fails with [`StorageError::ScanMemory`] instead
//! of growing, so concurrent heavy queries cannot take the process past its memory.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::error::{Result, StorageError};

/// The budget and what running scans hold of it (one per store).
#[derive(Debug)]
pub(crate) struct ScanMemoryPool {
    budget: usize,
    held: AtomicUsize,
}

impl ScanMemoryPool {
    pub(crate) fn new(budget: usize) -> Arc<Self> {
        Arc::new(Self {
            budget,
            held: AtomicUsize::new(0),
        })
    }

    /// Bytes held by running scans and results not yet dropped.
    pub(crate) fn held(&self) -> usize {
        self.held.load(Ordering::Acquire)
    }

    /// The budget.
    pub(crate) fn budget(&self) -> usize {
        self.budget
    }

    /// An empty share of the pool for one scan.
    pub(crate) fn share(self: &Arc<Self>) -> ScanMemory {
        ScanMemory {
            pool: Some(Arc::clone(self)),
            bytes: AtomicUsize::new(0),
        }
    }
}

/// One scan's share of the scan memory budget: the bytes of the rows it holds, given back when
/// dropped. Safe to grow from the scan's reader threads at once.
#[derive(Default)]
pub struct ScanMemory {
    pool: Option<Arc<ScanMemoryPool>>,
    bytes: AtomicUsize,
}

impl std::fmt::Debug for ScanMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScanMemory")
            .field("bytes", &self.bytes())
            .finish_non_exhaustive()
    }
}

impl ScanMemory {
    /// Bytes this scan holds.
    pub fn bytes(&self) -> usize {
        self.bytes.load(Ordering::Acquire)
    }

    /// Counts `n` more bytes; fails, counting nothing, when the pool's budget would be passed.
    pub(crate) fn grow(&self, n: usize) -> Result<()> {
        let Some(pool) = &self.pool else {
            return Ok(());
        };
        match pool
            .held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |h| {
                h.checked_add(n).filter(|&t| t <= pool.budget)
            }) {
            Ok(_) => {
                self.bytes.fetch_add(n, Ordering::AcqRel);
                Ok(())
            }
            Err(held) => {
                let mine = self.bytes();
                Err(StorageError::ScanMemory {
                    budget_bytes: pool.budget,
                    scan_bytes: mine.saturating_add(n),
                    others_bytes: held.saturating_sub(mine),
                })
            }
        }
    }
}

impl Drop for ScanMemory {
    fn drop(&mut self) {
        let n = *self.bytes.get_mut();
        if let Some(pool) = &self.pool
            && n > 0
        {
            let _ = pool
                .held
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |h| {
                    Some(h.saturating_sub(n))
                });
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn shares_count_against_one_budget_and_give_back_when_dropped() {
        let pool = ScanMemoryPool::new(1000);
        let a = pool.share();
        let b = pool.share();
        a.grow(600).unwrap();
        match b.grow(500) {
            Err(StorageError::ScanMemory {
                budget_bytes,
                scan_bytes,
                others_bytes,
            }) => assert_eq!((budget_bytes, scan_bytes, others_bytes), (1000, 500, 600)),
            other => panic!("expected ScanMemory, got {other:?}"),
        }
        assert_eq!(b.bytes(), 0, "a refused grow counts nothing");
        b.grow(400).unwrap();
        assert_eq!(pool.held(), 1000);
        drop(b);
        assert_eq!(pool.held(), 600);
        drop(a);
        assert_eq!(pool.held(), 0);
        // Without a pool nothing is counted or refused.
        ScanMemory::default().grow(usize::MAX).unwrap();
    }
}
