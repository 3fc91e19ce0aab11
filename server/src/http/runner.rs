//! The one way a route runs work that is not a few microseconds of parameter handling: query
//! parsing and evaluation, metadata scans, detector and detect-API computations.
//!
//! [`Runner::run`] takes a slot of the tenant's share (`max_concurrent_queries_per_tenant`),
//! then a global slot (`max_concurrent_queries`), waiting for both within the request's
//! deadline, and runs the work on the blocking pool (never on the async workers, so a slow
//! regex compilation or evaluation cannot stall `/health` or ingest). The work gets a
//! [`Deadline`] that expires at the request's deadline and also when the request is abandoned
//! (timed out, or the client went away); the query engine and storage check it per step, per
//! series and per row group and stop. A timed-out request answers 503 `timeout` at once; its
//! slots are released when the work has noticed the deadline and returned.
//!
//! Waiting for a tenant slot before a global one means one tenant's queue never holds global
//! slots: another tenant's query only waits for work that is actually running.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use sightline_storage::{Deadline, TenantId};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::error::ApiError;

/// Bounds of the runner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunnerLimits {
    /// Most units of work running at once, all tenants together.
    pub max_concurrent: usize,
    /// Most units of work of one tenant running at once.
    pub max_concurrent_per_tenant: usize,
    /// The longest deadline a request may have.
    pub max_timeout: Duration,
}

/// Runs request work on the blocking pool under slots and a deadline (see the module docs).
#[derive(Debug)]
pub struct Runner {
    limits: RunnerLimits,
    global: Arc<Semaphore>,
    tenants: Arc<Mutex<HashMap<TenantId, Arc<Semaphore>>>>,
}

/// Sets the cancel flag when dropped, so work whose request was abandoned stops.
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// A tenant slot; dropping it forgets the tenant's semaphore once nobody holds or awaits it,
/// so the map holds only tenants with work in flight.
struct TenantSlot {
    tenant: TenantId,
    sem: Option<Arc<Semaphore>>,
    permit: Option<OwnedSemaphorePermit>,
    tenants: Arc<Mutex<HashMap<TenantId, Arc<Semaphore>>>>,
}

impl Drop for TenantSlot {
    fn drop(&mut self) {
        self.permit.take();
        let mut map = self.tenants.lock();
        // Every clone of the semaphore is made under this lock, so the count is exact here:
        // one for the map and one for `self.sem`.
        if let Some(sem) = self.sem.take()
            && Arc::strong_count(&sem) == 2
        {
            map.remove(&self.tenant);
        }
    }
}

impl Runner {
    /// A runner with these bounds (each at least 1).
    pub fn new(limits: RunnerLimits) -> Self {
        let limits = RunnerLimits {
            max_concurrent: limits.max_concurrent.max(1),
            max_concurrent_per_tenant: limits.max_concurrent_per_tenant.max(1),
            max_timeout: limits.max_timeout,
        };
        Self {
            global: Arc::new(Semaphore::new(limits.max_concurrent)),
            tenants: Arc::default(),
            limits,
        }
    }

    /// The bounds in force.
    pub fn limits(&self) -> RunnerLimits {
        self.limits
    }

    /// Tenants with work running or waiting (for tests and telemetry).
    pub fn active_tenants(&self) -> usize {
        self.tenants.lock().len()
    }

    /// The deadline of a request that asked for `requested` (capped by `max_timeout`).
    pub fn timeout(&self, requested: Option<Duration>) -> Duration {
        match requested {
            Some(d) if !d.is_zero() => d.min(self.limits.max_timeout),
            _ => self.limits.max_timeout,
        }
    }

    /// Runs `work` for `tenant` within `timeout` (see [`Runner::timeout`]); `work` gets the
    /// deadline to check and must return soon after it expires.
    pub async fn run<T, F>(
        &self,
        tenant: &TenantId,
        timeout: Duration,
        work: F,
    ) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce(&Deadline) -> Result<T, ApiError> + Send + 'static,
    {
        let started = tokio::time::Instant::now();
        let until = started + timeout;
        let std_until = std::time::Instant::now() + timeout;
        let sem =
            {
                let mut map = self.tenants.lock();
                Arc::clone(map.entry(tenant.clone()).or_insert_with(|| {
                    Arc::new(Semaphore::new(self.limits.max_concurrent_per_tenant))
                }))
            };
        let mut slot = TenantSlot {
            tenant: tenant.clone(),
            sem: Some(Arc::clone(&sem)),
            permit: None,
            tenants: Arc::clone(&self.tenants),
        };
        let waited = |what: &str| {
            ApiError::timeout(format!(
                "query timed out waiting for {what} (after {:.1} s)",
                started.elapsed().as_secs_f64()
            ))
        };
        slot.permit = Some(
            tokio::time::timeout_at(until, sem.acquire_owned())
                .await
                .map_err(|_| waited("one of the tenant's evaluation slots"))?
                .map_err(|_| ApiError::internal("query slots closed"))?,
        );
        let global = tokio::time::timeout_at(until, Arc::clone(&self.global).acquire_owned())
            .await
            .map_err(|_| waited("an evaluation slot"))?
            .map_err(|_| ApiError::internal("query slots closed"))?;
        let flag = Arc::new(AtomicBool::new(false));
        let cancel = CancelOnDrop(Arc::clone(&flag));
        let deadline = Deadline::at(std_until).with_cancel(flag);
        let task = tokio::task::spawn_blocking(move || {
            let _slots = (slot, global);
            work(&deadline)
        });
        let out = match tokio::time::timeout_at(until, task).await {
            Err(_) => Err(ApiError::timeout(
                "query timed out in expression evaluation",
            )),
            Ok(Err(e)) => Err(ApiError::internal(format!("query task failed: {e}"))),
            Ok(Ok(r)) => r,
        };
        drop(cancel);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::error::ErrorKind;

    fn tenant(s: &str) -> TenantId {
        TenantId::new(s).unwrap_or_else(|e| panic!("{e}"))
    }

    fn runner(total: usize, per_tenant: usize) -> Arc<Runner> {
        Arc::new(Runner::new(RunnerLimits {
            max_concurrent: total,
            max_concurrent_per_tenant: per_tenant,
            max_timeout: Duration::from_secs(10),
        }))
    }

    /// Work that runs until its deadline expires, like a query that would run for ever.
    fn until_cancelled(d: &Deadline) -> Result<u32, ApiError> {
        while !d.expired() {
            std::thread::sleep(Duration::from_millis(2));
        }
        Err(ApiError::timeout("stopped"))
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_timed_out_run_is_cancelled_and_frees_its_slots() {
        let r = runner(1, 1);
        let a = tenant("a");
        let e = r
            .run(&a, Duration::from_millis(50), until_cancelled)
            .await
            .err()
            .map(|e| e.kind);
        assert_eq!(e, Some(ErrorKind::Timeout));
        // The one global slot comes back once the work noticed its deadline.
        let ok = r.run(&a, Duration::from_secs(5), |_| Ok(7)).await;
        assert_eq!(ok, Ok(7));
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(r.active_tenants(), 0, "idle tenants are forgotten");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn one_tenant_cannot_take_every_slot() {
        let r = runner(4, 2);
        let a = tenant("a");
        let mut hogs = Vec::new();
        for _ in 0..6 {
            let r = Arc::clone(&r);
            let a = a.clone();
            hogs.push(tokio::spawn(async move {
                r.run(&a, Duration::from_millis(600), until_cancelled).await
            }));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        let t = std::time::Instant::now();
        let b = r.run(&tenant("b"), Duration::from_secs(5), |_| Ok(1)).await;
        assert_eq!(b, Ok(1));
        assert!(
            t.elapsed() < Duration::from_millis(300),
            "tenant b waited {:?} behind tenant a",
            t.elapsed()
        );
        for h in hogs {
            let _ = h.await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_abandoned_request_cancels_its_work() {
        let r = runner(1, 1);
        let a = tenant("a");
        let seen = Arc::new(AtomicBool::new(false));
        let seen2 = Arc::clone(&seen);
        let fut = r.run(&a, Duration::from_secs(10), move |d| {
            while !d.expired() {
                std::thread::sleep(Duration::from_millis(2));
            }
            seen2.store(true, Ordering::Relaxed);
            Ok(())
        });
        // The client goes away: the request future is dropped.
        let _ = tokio::time::timeout(Duration::from_millis(50), fut).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(
            seen.load(Ordering::Relaxed),
            "the work saw the cancellation"
        );
    }

    #[test]
    fn timeouts_are_capped() {
        let r = runner(1, 1);
        assert_eq!(r.timeout(None), Duration::from_secs(10));
        assert_eq!(r.timeout(Some(Duration::ZERO)), Duration::from_secs(10));
        assert_eq!(
            r.timeout(Some(Duration::from_secs(3))),
            Duration::from_secs(3)
        );
        assert_eq!(
            r.timeout(Some(Duration::from_secs(300))),
            Duration::from_secs(10)
        );
    }
}
