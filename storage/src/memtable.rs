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
    text: Arc<Mutex<TextState>>,
}

/// A log memtable's in-memory token index and the bytes of the memory budget charged for it.
#[derive(Debug, Default)]
struct TextState {
    index: Option<RamTextIndex>,
    /// Bytes forced into the [`MemoryBudget`] as the index grew; given back by
    /// [`MemSnapshot::retire_text_index`].
    charged: usize,
    /// The rows are in a segment now: the index was dropped and is not built again.
    retired: bool,
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
            text: Arc::new(Mutex::new(TextState::default())),
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
    text: Arc<Mutex<TextState>>,
}

impl MemSnapshot {
    /// Rows of the snapshot that may match `query` ([`Candidates::exact`] says whether each
    /// does), indexing not-yet-indexed rows first (one batch at a time, checking `deadline`
    /// before each; what was indexed stays indexed). The index's memory is charged to `budget`
    /// as it grows (forced: a search is never refused for it), and given back when the rows are
    /// flushed; a snapshot read after that checks its bodies instead.
    pub fn search_text(
        &self,
        query: &TextQuery,
        deadline: &crate::Deadline,
        budget: &MemoryBudget,
    ) -> Result<Candidates> {
        let mut guard = self.text.lock();
        if guard.retired {
            drop(guard);
            return self.check_bodies(query, deadline);
        }
        let state = &mut *guard;
        let idx = state.index.get_or_insert_with(RamTextIndex::new);
        let indexed = idx.indexed_rows();
        for mb in &self.batches {
            let end = mb.first_row + mb.batch.num_rows() as u32;
            if end <= indexed {
                continue;
            }
            deadline.check()?;
            let bodies = body_column(mb)?;
            let skip = indexed.saturating_sub(mb.first_row) as usize;
            idx.extend((skip..bodies.len()).map(|i| bodies.value(i)));
            let bytes = idx.heap_bytes();
            if bytes > state.charged {
                budget.force(bytes - state.charged);
                state.charged = bytes;
            }
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

    /// The rows whose bodies match `query`, checked one by one (exact).
    fn check_bodies(&self, query: &TextQuery, deadline: &crate::Deadline) -> Result<Candidates> {
        let mut rows = roaring::RoaringBitmap::new();
        for mb in &self.batches {
            deadline.check()?;
            let bodies = body_column(mb)?;
            let found = crate::text_index::matching_rows(query, bodies.iter());
            rows.extend(found.iter().map(|r| mb.first_row + r));
        }
        Ok(Candidates { rows, exact: true })
    }

    /// Drops the in-memory token index once the rows are in a segment, and returns the budget
    /// bytes charged for it (the caller releases them). Readers still holding this snapshot
    /// check bodies from then on, so nothing is charged or built after this.
    pub fn retire_text_index(&self) -> usize {
        let mut state = self.text.lock();
        state.retired = true;
        state.index = None;
        std::mem::take(&mut state.charged)
    }
}

fn body_column(mb: &MemBatch) -> Result<&arrow_array::StringArray> {
    crate::columnar::decode_column::<arrow_array::StringArray>(&mb.batch, crate::schema::col::BODY)
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
    use crate::model::{AttrValue, Attributes, LogRecord};

    fn log_memtable(bodies: &[&str]) -> Memtable {
        let logs: Vec<LogRecord> = bodies
            .iter()
            .enumerate()
            .map(|(i, b)| LogRecord {
                time: UnixNanos(i as i64),
                observed_time: UnixNanos(i as i64),
                severity_number: 9,
                severity_text: "INFO".into(),
                body: AttrValue::Str((*b).into()),
                trace_id: None,
                span_id: None,
                flags: 0,
                service_name: "svc".into(),
                scope_name: String::new(),
                event_name: String::new(),
                resource_attributes: Attributes::default(),
                attributes: Attributes::default(),
            })
            .collect();
        let batch = crate::columnar::logs_to_batch(&logs).expect("batch");
        let mut m = Memtable::new(Signal::Logs);
        let n = logs.len() as i64;
        m.insert(batch, UnixNanos(0), UnixNanos(n - 1), 100, Lsn(1))
            .expect("insert");
        m
    }

    #[test]
    fn the_token_index_is_charged_to_the_budget_until_retired_and_not_rebuilt_after() {
        let m = log_memtable(&["tool call failed", "all good", "Tool timeout", "call me"]);
        let budget = MemoryBudget::new(1 << 30);
        let deadline = crate::Deadline::none();
        let snap = m.snapshot();
        let q = TextQuery::parse("tool").expect("query");
        let found = snap.search_text(&q, &deadline, &budget).expect("search");
        assert_eq!(found.rows.iter().collect::<Vec<_>>(), [0, 2]);
        let charged = budget.used();
        assert!(charged > 0, "the index's memory is in the budget");
        // Searching again indexes nothing new and charges nothing more.
        snap.search_text(&q, &deadline, &budget).expect("search");
        assert_eq!(budget.used(), charged);
        // The flush gives the charge back; a reader still holding the snapshot gets the same
        // answer from the bodies, and nothing is charged again.
        assert_eq!(snap.retire_text_index(), charged);
        budget.release(charged);
        let q2 = TextQuery::parse("\"tool call\" OR me").expect("query");
        let again = snap.search_text(&q2, &deadline, &budget).expect("search");
        assert!(again.exact);
        assert_eq!(again.rows.iter().collect::<Vec<_>>(), [0, 3]);
        assert_eq!(budget.used(), 0);
        assert_eq!(snap.retire_text_index(), 0);
    }

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
