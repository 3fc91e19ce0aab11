//! The background threads. The store thread flushes on size and age, applies retention and
//! fsyncs the WAL under the interval policy; the compaction thread first puts the rollups of the
//! segments found at open in the cache, then merges small segments after each flush. They share no lock but the short commit, so a long merge never holds up a flush
//! (and with it the memory budget).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::Inner;
use crate::wal::FsyncPolicy;

/// How often the store thread wakes when nothing asks it to.
const TICK: Duration = Duration::from_millis(200);
/// How often the compaction thread looks for work when no flush wakes it.
const COMPACT_TICK: Duration = Duration::from_secs(30);
/// How often retention is applied.
const RETENTION_EVERY: Duration = Duration::from_secs(60);

/// A wake-up flag a thread waits on with a timeout.
#[derive(Default)]
pub(super) struct Wakeup {
    woken: Mutex<bool>,
    cv: Condvar,
}

impl Wakeup {
    pub(super) fn notify(&self) {
        *self.woken.lock() = true;
        self.cv.notify_all();
    }

    /// Waits until notified (or `timeout` passes), then clears the flag.
    fn wait(&self, timeout: Duration) {
        let mut woken = self.woken.lock();
        if !*woken {
            self.cv.wait_for(&mut woken, timeout);
        }
        *woken = false;
    }
}

fn should_flush(inner: &Inner) -> bool {
    if inner.budget.used() >= inner.config.flush_threshold_bytes {
        return true;
    }
    let state = inner.state.lock();
    !state.frozen.is_empty()
        || state.active.values().any(|m| {
            !m.is_empty()
                && (m.age() >= inner.config.flush_interval
                    || inner.config.memtable_full(m.signal, m.bytes()))
        })
}

/// Starts the store thread and the compaction thread.
pub(super) fn spawn(inner: Arc<Inner>) -> crate::Result<Vec<std::thread::JoinHandle<()>>> {
    let start = |name: &str, body: fn(&Inner), inner: Arc<Inner>| {
        let root = inner.root.clone();
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || body(&inner))
            .map_err(|e| crate::StorageError::io(root, e))
    };
    let store = start("sightline-store", run, inner.clone())?;
    let compact = start("sightline-compact", run_compaction, inner)?;
    Ok(vec![store, compact])
}

fn run(inner: &Inner) {
    let mut last_retention = Instant::now();
    let mut last_sync = Instant::now();
    let sync_every = match inner.config.fsync {
        FsyncPolicy::Interval { interval_ms } => Some(Duration::from_millis(interval_ms.max(1))),
        _ => None,
    };
    let tick = sync_every.map_or(TICK, |s| s.min(TICK));
    loop {
        inner.wake.wait(tick);
        if inner.shutdown.load(Ordering::Acquire) {
            return;
        }
        if let Some(every) = sync_every
            && last_sync.elapsed() >= every
        {
            if let Err(e) = inner.wal.sync_now() {
                tracing::error!(error = %e, "background WAL sync failed");
            }
            last_sync = Instant::now();
        }
        if should_flush(inner) {
            match super::flush::flush(inner) {
                Ok(()) => inner.compact_wake.notify(),
                Err(e) => tracing::error!(error = %e, "flush failed; will retry"),
            }
        }
        if last_retention.elapsed() >= RETENTION_EVERY {
            if let Err(e) = super::maintenance::apply_retention(inner) {
                tracing::error!(error = %e, "retention failed");
            }
            last_retention = Instant::now();
        }
    }
}

/// Nice value of the compaction thread. Merges take the CPU that ingest and queries leave: at
/// full weight on two cores, merging sample segments while remote write ran at full speed took
/// a tenth of the ingest rate.
const COMPACTION_NICE: i32 = 10;

fn run_compaction(inner: &Inner) {
    // Linux keeps a nice value per thread, addressed by the thread's id.
    let me = rustix::thread::gettid();
    if let Err(e) = rustix::process::setpriority_process(Some(me), COMPACTION_NICE) {
        tracing::debug!(error = %e, "could not lower the compaction thread's priority");
    }
    // The segments found at open: their rollups into the cache, newest first, so queries right
    // after a restart answer at their usual speed.
    let mut opened = inner.live_segments();
    opened.sort_by_key(|s| std::cmp::Reverse(s.meta().partition_start));
    for seg in opened {
        if inner.shutdown.load(Ordering::Acquire) {
            return;
        }
        seg.warm();
    }
    loop {
        inner.compact_wake.wait(COMPACT_TICK);
        // Passes until nothing is left to merge (each merges at most once per partition).
        while !inner.shutdown.load(Ordering::Acquire) {
            match super::maintenance::compact(inner) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => {
                    tracing::error!(error = %e, "compaction failed");
                    break;
                }
            }
        }
        if inner.shutdown.load(Ordering::Acquire) {
            return;
        }
    }
}
