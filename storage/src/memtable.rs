//! Memtables: unflushed rows of one tenant and signal, as a list of immutable Arrow batches.
//!
//! A batch is inserted whole under the store's state lock, so a reader's snapshot holds either
//! all of an append or none of it. Rows are numbered in insertion order across batches; the
//! in-memory text index of log memtables uses those numbers.
//!
//! The memory of all memtables (active and frozen) is accounted in a [`MemoryBudget`]; appends
//! past it are refused with [`crate::StorageError::OverBudget`] instead of growing.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use arrow_array::{Array, RecordBatch};
use parking_lot::Mutex;

use crate::error::{Result, StorageError};
use crate::text_index::{Candidates, RamTextIndex, TextQuery};
use crate::types::{Lsn, Signal, UnixNanos};

/// One appended batch and its time bounds.
#[derive(Clone, Debug)]
pub struct MemBatch {
    /// The rows.
    pub batch: RecordBatch,
    /// Smallest time-column value, in nanoseconds.
    pub min_time: UnixNanos,
    /// Largest time-column value, in nanoseconds.
    pub max_time: UnixNanos,
    /// Number of the batch's first row within its memtable.
    pub first_row: u32,
    /// Memory accounted for the batch.
    pub bytes: usize,
}

/// Unflushed rows of one tenant and signal.
#[derive(Debug)]
pub struct Memtable {
    /// Signal of the rows.
    pub signal: Signal,
    batches: Vec<MemBatch>,
    rows: u32,
    bytes: usize,
    created: Instant,
    max_lsn: Lsn,
    /// Lazily built full-text index of log bodies (logs only).
    text: Arc<Mutex<Option<RamTextIndex>>>,
}

impl Memtable {
    /// A new, empty memtable.
    pub fn new(signal: Signal) -> Self {
        Self {
            signal,
            batches: Vec::new(),
            rows: 0,
            bytes: 0,
            created: Instant::now(),
            max_lsn: Lsn(0),
            text: Arc::new(Mutex::new(None)),
        }
    }

    /// Appends a batch (already durable or about to be). Fails only when the memtable would pass
    /// `u32::MAX` rows, which the flush thresholds prevent in practice.
    pub fn insert(
        &mut self,
        batch: RecordBatch,
        min_time: UnixNanos,
        max_time: UnixNanos,
        bytes: usize,
        lsn: Lsn,
    ) -> Result<()> {
        let n = u32::try_from(batch.num_rows())
            .ok()
            .and_then(|n| self.rows.checked_add(n))
            .ok_or_else(|| StorageError::InvalidInput("memtable row count overflow".into()))?;
        self.batches.push(MemBatch {
            batch,
            min_time,
            max_time,
            first_row: self.rows,
            bytes,
        });
        self.rows = n;
        self.bytes += bytes;
        self.max_lsn = self.max_lsn.max(lsn);
        Ok(())
    }

    /// Rows held.
    pub fn rows(&self) -> u32 {
        self.rows
    }

    /// Bytes accounted.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Time since the memtable was created.
    pub fn age(&self) -> Duration {
        self.created.elapsed()
    }

    /// Whether it holds no rows.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Highest LSN inserted.
    pub fn max_lsn(&self) -> Lsn {
        self.max_lsn
    }

    /// The batches, in insertion order.
    pub fn batches(&self) -> &[MemBatch] {
        &self.batches
    }

    /// A cheap snapshot for readers.
    pub fn snapshot(&self) -> MemSnapshot {
        MemSnapshot {
            signal: self.signal,
            batches: self.batches.clone(),
            text: self.text.clone(),
        }
    }
}

/// A reader's view of a memtable at one instant.
#[derive(Clone, Debug)]
pub struct MemSnapshot {
    /// Signal of the rows.
    pub signal: Signal,
    /// Batches visible to the reader.
    pub batches: Vec<MemBatch>,
    text: Arc<Mutex<Option<RamTextIndex>>>,
}

impl MemSnapshot {
    /// Rows of the snapshot that may match `query` ([`Candidates::exact`] says whether each
    /// does), indexing not-yet-indexed rows first (one batch at a time, checking `deadline`
    /// before each; what was indexed stays indexed).
    pub fn search_text(&self, query: &TextQuery, deadline: &crate::Deadline) -> Result<Candidates> {
        let mut guard = self.text.lock();
        let idx = guard.get_or_insert_with(RamTextIndex::new);
        let indexed = idx.indexed_rows();
        for mb in &self.batches {
            let end = mb.first_row + mb.batch.num_rows() as u32;
            if end <= indexed {
                continue;
            }
            deadline.check()?;
            let bodies = crate::columnar::decode_column::<arrow_array::StringArray>(
                &mb.batch,
                crate::schema::col::BODY,
            )?;
            let skip = indexed.saturating_sub(mb.first_row) as usize;
            idx.extend((skip..bodies.len()).map(|i| bodies.value(i)));
        }
        let mut found = idx.candidates(query)?;
        // Rows indexed from a newer snapshot are not visible to this one.
        let visible = self
            .batches
            .last()
            .map(|b| b.first_row + b.batch.num_rows() as u32)
            .unwrap_or(0);
        found.rows.remove_range(visible..);
        Ok(found)
    }
}

/// The global budget for unflushed data.
#[derive(Debug)]
pub struct MemoryBudget {
    limit: usize,
    used: AtomicUsize,
}

impl MemoryBudget {
    /// A budget of `limit` bytes.
    pub fn new(limit: usize) -> Self {
        Self {
            limit,
            used: AtomicUsize::new(0),
        }
    }

    /// Whether `bytes` more would fit now (the condition [`MemoryBudget::reserve`] applies),
    /// without reserving them. A batch larger than the whole budget fits an empty store only,
    /// otherwise it could never be written.
    fn fits(&self, cur: usize, bytes: usize) -> bool {
        cur == 0 || cur.saturating_add(bytes) <= self.limit
    }

    /// Refuses with a retry hint, as [`MemoryBudget::reserve`] would, when `bytes` more would
    /// not fit now; reserves nothing. Lets a caller refuse a request before paying for its
    /// decoding.
    pub fn check(&self, bytes: usize, retry_after: Duration) -> Result<()> {
        if self.fits(self.used.load(Ordering::Relaxed), bytes) {
            Ok(())
        } else {
            Err(StorageError::OverBudget {
                budget_bytes: self.limit,
                retry_after,
            })
        }
    }

    /// Reserves `bytes`, or refuses with a retry hint when the budget would be exceeded.
    pub fn reserve(&self, bytes: usize, retry_after: Duration) -> Result<()> {
        let mut cur = self.used.load(Ordering::Relaxed);
        loop {
            if !self.fits(cur, bytes) {
                return Err(StorageError::OverBudget {
                    budget_bytes: self.limit,
                    retry_after,
                });
            }
            match self.used.compare_exchange_weak(
                cur,
                cur + bytes,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Ok(()),
                Err(actual) => cur = actual,
            }
        }
    }

    /// Reserves without checking (WAL replay must load what was acknowledged).
    pub fn force(&self, bytes: usize) {
        self.used.fetch_add(bytes, Ordering::AcqRel);
    }

    /// Returns `bytes` to the budget.
    pub fn release(&self, bytes: usize) {
        let _ = self
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Relaxed, |u| {
                Some(u.saturating_sub(bytes))
            });
    }

    /// Bytes in use.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// The limit.
    pub fn limit(&self) -> usize {
        self.limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_refuses_past_limit() {
        let b = MemoryBudget::new(100);
        b.reserve(150, Duration::from_secs(1))
            .expect("first batch always fits");
        assert!(matches!(
            b.reserve(1, Duration::from_secs(1)),
            Err(StorageError::OverBudget { .. })
        ));
        b.release(150);
        b.reserve(60, Duration::from_secs(1)).expect("fits");
        b.reserve(40, Duration::from_secs(1)).expect("fits exactly");
        assert!(b.check(1, Duration::from_secs(1)).is_err());
        assert!(b.reserve(1, Duration::from_secs(1)).is_err());
        assert_eq!(b.used(), 100);
        b.release(30);
        b.check(30, Duration::from_secs(1))
            .expect("fits after a release");
        assert!(b.check(31, Duration::from_secs(1)).is_err());
        assert_eq!(b.used(), 70, "a check reserves nothing");
    }
}
