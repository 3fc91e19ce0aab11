//! The background thread: flushes on size and age, compacts, applies retention, and fsyncs the
//! WAL under the interval policy.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::Inner;
use crate::wal::FsyncPolicy;

/// How often the thread wakes when nothing asks it to.
const TICK: Duration = Duration::from_millis(200);
/// How often retention is applied.
const RETENTION_EVERY: Duration = Duration::from_secs(60);

fn should_flush(inner: &Inner) -> bool {
    if inner.budget.used() >= inner.config.flush_threshold_bytes {
        return true;
    }
    let state = inner.state.lock();
    !state.frozen.is_empty()
        || state
            .active
            .values()
            .any(|m| !m.is_empty() && m.age() >= inner.config.flush_interval)
}

pub(super) fn spawn(inner: Arc<Inner>) -> crate::Result<std::thread::JoinHandle<()>> {
    let root = inner.root.clone();
    std::thread::Builder::new()
        .name("sightline-store".into())
        .spawn(move || run(&inner))
        .map_err(|e| crate::StorageError::io(root, e))
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
        {
            let mut woken = inner.wake_lock.lock();
            if !*woken {
                inner.wake.wait_for(&mut woken, tick);
            }
            *woken = false;
        }
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
                Ok(()) => {
                    if let Err(e) = super::maintenance::compact(inner) {
                        tracing::error!(error = %e, "compaction failed");
                    }
                }
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
