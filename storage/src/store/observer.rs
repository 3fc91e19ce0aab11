//! Who is told when a tenant's samples change in a way that can change a query's answer.
//!
//! Result caches above the store keep answers computed from samples; they stay correct only if
//! they hear of every such change. The store tells its observers, after the change is visible
//! to scans:
//! - of every metric append (including one that failed after part of it became visible), with
//!   the earliest sample time in it: answers that depend only on samples before that time are
//!   unchanged;
//! - of every removal of samples (retention, quarantine of a damaged segment).
//!
//! Flushes and compactions change where samples live, never what a scan returns, so observers
//! are not told of them.

use std::sync::Arc;

use parking_lot::RwLock;

use crate::types::{TenantId, UnixNanos};

/// Receives the changes of samples (see the module doc). Calls come from ingest and
/// maintenance threads and must be cheap; an observer must not call back into the store.
pub trait SampleObserver: Send + Sync {
    /// Samples of `tenant`, none earlier than `earliest`, were made visible.
    fn samples_written(&self, tenant: &TenantId, earliest: UnixNanos);
    /// Samples of `tenant` were removed; any time range may have changed.
    fn samples_removed(&self, tenant: &TenantId);
}

/// The observers registered with one store.
#[derive(Default)]
pub(crate) struct Observers(RwLock<Vec<Arc<dyn SampleObserver>>>);

impl Observers {
    pub(crate) fn add(&self, o: Arc<dyn SampleObserver>) {
        self.0.write().push(o);
    }

    /// Tells every observer of an append whose earliest sample time (ms) `earliest` finds;
    /// computed only when someone listens, since it walks the append's samples.
    pub(crate) fn written(&self, tenant: &TenantId, earliest: impl FnOnce() -> Option<i64>) {
        let observers = self.0.read();
        if observers.is_empty() {
            return;
        }
        let Some(ms) = earliest() else { return };
        for o in observers.iter() {
            o.samples_written(tenant, UnixNanos::from_millis(ms));
        }
    }

    pub(crate) fn removed(&self, tenant: &TenantId) {
        for o in self.0.read().iter() {
            o.samples_removed(tenant);
        }
    }
}
