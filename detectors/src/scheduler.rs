//! The scheduler: a bounded pool of worker threads (`--detector-threads`, default 1; 0 turns
//! detectors off) fed by a ticker thread. Work runs on its own OS threads, never on the async
//! runtime, so ingest and queries keep being served while a model trains.
//!
//! Every 250 ms the ticker looks at each idle detector and queues at most one job for it:
//! a training run (whole history) when it is new, asked to run (`POST .../run`), due for
//! `retrain_every`, or failed (retried every `max(step, 30 s)`); otherwise a scoring run once
//! per `step`, which evaluates just enough recent history to score the points that arrived.
//! A suspended detector (the process died during its last run) waits for an explicit run; a
//! refused one (its stored definition is over this server's limits) is never run.
//!
//! The queue is round-robin across tenants ([`FairQueue`]), so a tenant with many detectors
//! due does not hold up another tenant's, and a run trains for at most
//! `limits.max_detector_training_secs`.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use sightline_storage::Store;

use super::DetectorError;
use super::limits::DetectorLimits;
use super::queue::FairQueue;
use super::registry::{Detector, Registry};
use super::status::State;
use sightline_storage::TenantId;

/// How often the ticker looks for due work.
pub const TICK: Duration = Duration::from_millis(250);
/// Stack of a worker thread: PromQL evaluation and model code recurse, and a worker must not
/// be the first thread to run out.
pub const WORKER_STACK_BYTES: usize = 16 << 20;

struct Job {
    det: Arc<Detector>,
    train: bool,
}

/// The detectors of a server: registry plus scheduler.
pub struct Detectors {
    store: Arc<Store>,
    registry: Registry,
    threads: usize,
    queue: Mutex<FairQueue<TenantId, Job>>,
    cv: Condvar,
    stop: AtomicBool,
    handles: Mutex<Vec<JoinHandle<()>>>,
}

impl std::fmt::Debug for Detectors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Detectors")
            .field("threads", &self.threads)
            .finish_non_exhaustive()
    }
}

impl Detectors {
    /// Load the detectors stored under the store's data directory and start `threads` workers
    /// plus the ticker (none when `threads` is 0); definitions are held to `limits`.
    pub fn start(
        store: Arc<Store>,
        threads: usize,
        limits: DetectorLimits,
    ) -> Result<Arc<Self>, DetectorError> {
        let registry = Registry::open(store.root(), limits)?;
        let this = Arc::new(Self {
            store,
            registry,
            threads,
            queue: Mutex::new(FairQueue::new()),
            cv: Condvar::new(),
            stop: AtomicBool::new(false),
            handles: Mutex::new(Vec::new()),
        });
        if threads > 0 {
            let mut handles = this.handles.lock();
            for i in 0..threads {
                let me = this.clone();
                let h = std::thread::Builder::new()
                    .name(format!("detector-{i}"))
                    .stack_size(WORKER_STACK_BYTES)
                    .spawn(move || me.worker())
                    .map_err(|e| DetectorError::Io(format!("cannot start a worker: {e}")))?;
                handles.push(h);
            }
            let me = this.clone();
            let h = std::thread::Builder::new()
                .name("detector-tick".into())
                .spawn(move || me.ticker())
                .map_err(|e| DetectorError::Io(format!("cannot start the ticker: {e}")))?;
            handles.push(h);
        }
        Ok(this)
    }

    /// The registry.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Whether the scheduler runs.
    pub fn enabled(&self) -> bool {
        self.threads > 0
    }

    /// Ask for a training run as soon as a worker is free (this also resumes a suspended
    /// detector). A refused definition is [`DetectorError::Invalid`]: it has to be replaced.
    pub fn request_run(&self, det: &Detector) -> Result<(), DetectorError> {
        if !self.enabled() {
            return Err(DetectorError::Disabled);
        }
        if let Some(why) = &det.refused {
            return Err(DetectorError::Invalid(why.clone()));
        }
        det.force.store(true, Ordering::SeqCst);
        Ok(())
    }

    /// Stop the ticker and the workers (a running training stops at its next progress
    /// report) and wait for them.
    pub fn shutdown(&self) {
        self.stop.store(true, Ordering::SeqCst);
        {
            let _q = self.queue.lock();
            self.cv.notify_all();
        }
        let handles: Vec<_> = self.handles.lock().drain(..).collect();
        for h in handles {
            let _ = h.join();
        }
    }

    fn stopping(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    fn ticker(self: Arc<Self>) {
        while !self.stopping() {
            self.tick(self.store.now().as_millis());
            let mut q = self.queue.lock();
            if !self.stopping() {
                self.cv.wait_for(&mut q, TICK);
            }
        }
    }

    /// Queue the jobs due at `now`.
    fn tick(&self, now: i64) {
        for det in self.registry.all() {
            if let Some(train) = due(&det, now) {
                det.busy.store(true, Ordering::SeqCst);
                let tenant = det.tenant.clone();
                self.queue.lock().push(tenant, Job { det, train });
                self.cv.notify_one();
            }
        }
    }

    fn worker(self: Arc<Self>) {
        loop {
            let job = {
                let mut q = self.queue.lock();
                loop {
                    if self.stopping() {
                        return;
                    }
                    if let Some(j) = q.pop() {
                        break j;
                    }
                    self.cv.wait_for(&mut q, TICK);
                }
            };
            let stop = || self.stopping();
            let det = job.det.clone();
            let limits = self.registry.limits();
            let result = std::panic::catch_unwind(AssertUnwindSafe(|| {
                super::run::run(
                    &self.store,
                    &det,
                    job.train,
                    self.store.now().as_millis(),
                    limits,
                    &stop,
                )
            }));
            let failure = match result {
                Ok(Ok(())) | Ok(Err(DetectorError::Cancelled)) => None,
                Ok(Err(e)) => Some(e.to_string()),
                Err(_) => Some("internal error while running the detector".to_owned()),
            };
            if let Some(msg) = failure {
                tracing::warn!(detector = %det.name(), error = %msg, "detector run failed");
                let mut st = det.status.lock();
                st.state = State::Failed;
                st.progress = None;
                st.error = Some(msg);
                st.last_run_ms = Some(self.store.now().as_millis());
                drop(st);
                if !det.deleted.load(Ordering::SeqCst) {
                    let _ = det.save_status();
                }
            }
            det.busy.store(false, Ordering::SeqCst);
        }
    }
}

/// The job `det` is due for at `now`: `Some(true)` a training run, `Some(false)` a scoring run.
/// Takes a pending `POST .../run` request (which lifts a suspension).
fn due(det: &Detector, now: i64) -> Option<bool> {
    if det.busy.load(Ordering::SeqCst) || det.deleted.load(Ordering::SeqCst) {
        return None;
    }
    if det.refused.is_some() {
        return None;
    }
    let (step, retrain) = {
        let spec = det.spec.read();
        (spec.step_ms(), spec.retrain_ms())
    };
    let forced = det.force.swap(false, Ordering::SeqCst);
    let mut st = det.status.lock();
    if st.suspended.is_some() {
        if !forced {
            return None;
        }
        st.suspended = None;
    }
    let since = |t: Option<i64>| t.map_or(i64::MAX, |t| now - t);
    if forced || st.state == State::Pending {
        Some(true)
    } else if st.state == State::Failed {
        (since(st.last_run_ms) >= step.max(30_000)).then_some(true)
    } else if since(st.last_trained_ms) >= retrain {
        Some(true)
    } else {
        (since(st.last_run_ms) >= step).then_some(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::{RUN_MARKER, RunInfo, write_json};
    use crate::spec::DetectorSpec;

    fn spec(json: &str) -> DetectorSpec {
        serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}"))
    }

    fn tenant(s: &str) -> TenantId {
        TenantId::new(s.to_owned()).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_crashed_run_suspends_the_detector_until_it_is_run_again() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let t = tenant("acme");
        let limits = DetectorLimits::default();
        {
            let reg = Registry::open(dir.path(), limits.clone()).unwrap_or_else(|e| panic!("{e}"));
            for name in ["crashed", "healthy"] {
                let s = spec(&format!(r#"{{"name": "{name}", "query": "up"}}"#));
                reg.put(&t, s, false).unwrap_or_else(|e| panic!("{e}"));
            }
        }
        // what a crash in the middle of a run leaves behind
        let det_dir = dir.path().join("detectors/acme/crashed");
        let info = RunInfo {
            started_ms: 1_700_000_000_000,
            training: true,
        };
        write_json(&det_dir.join(RUN_MARKER), &info).unwrap_or_else(|e| panic!("{e}"));

        let reg = Registry::open(dir.path(), limits.clone()).unwrap_or_else(|e| panic!("{e}"));
        let det = reg.get(&t, "crashed").unwrap_or_else(|| panic!("missing"));
        let public = det.to_json()["status"].clone();
        assert_eq!(public["state"], "failed", "{public}");
        let error = public["error"].as_str().unwrap_or_default();
        assert!(
            error.contains("training run") && error.contains("may have crashed"),
            "{error}"
        );
        assert!(!det_dir.join(RUN_MARKER).exists(), "marker handled");
        let far = 1_800_000_000_000;
        assert_eq!(
            due(&det, far),
            None,
            "a suspended detector is not scheduled"
        );
        let healthy = reg.get(&t, "healthy").unwrap_or_else(|| panic!("missing"));
        assert_eq!(due(&healthy, far), Some(true));

        // the suspension survives another restart (it is in state.json)
        drop(reg);
        let reg = Registry::open(dir.path(), limits.clone()).unwrap_or_else(|e| panic!("{e}"));
        let det = reg.get(&t, "crashed").unwrap_or_else(|| panic!("missing"));
        assert_eq!(due(&det, far), None);
        // an explicit run lifts it
        det.force.store(true, Ordering::SeqCst);
        assert_eq!(due(&det, far), Some(true));
        assert_eq!(det.status.lock().suspended, None);

        // so does a replaced definition
        write_json(&det_dir.join(RUN_MARKER), &info).unwrap_or_else(|e| panic!("{e}"));
        drop(reg);
        let reg = Registry::open(dir.path(), limits).unwrap_or_else(|e| panic!("{e}"));
        let (det, existed) = reg
            .put(&t, spec(r#"{"name": "crashed", "query": "up"}"#), true)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(existed);
        assert_eq!(det.status.lock().state, State::Pending);
        assert_eq!(due(&det, far), Some(true));
    }

    #[test]
    fn a_stored_definition_over_the_limits_is_kept_but_never_run() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let t = tenant("acme");
        {
            let lenient = DetectorLimits {
                min_retrain_secs: 0,
                ..DetectorLimits::default()
            };
            let reg = Registry::open(dir.path(), lenient).unwrap_or_else(|e| panic!("{e}"));
            let s = spec(r#"{"name": "eager", "query": "up", "retrain_every": "1ms"}"#);
            reg.put(&t, s, false).unwrap_or_else(|e| panic!("{e}"));
        }
        let reg =
            Registry::open(dir.path(), DetectorLimits::default()).unwrap_or_else(|e| panic!("{e}"));
        let det = reg.get(&t, "eager").unwrap_or_else(|| panic!("missing"));
        let status = det.to_json()["status"].clone();
        assert_eq!(status["state"], "failed");
        let error = status["error"].as_str().unwrap_or_default();
        assert!(
            error.contains("limits.min_detector_retrain_secs"),
            "{error}"
        );
        det.force.store(true, Ordering::SeqCst);
        assert_eq!(due(&det, i64::MAX / 2), None);
        // replacing it with a valid definition is how it comes back
        let (det, _) = reg
            .put(&t, spec(r#"{"name": "eager", "query": "up"}"#), true)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(due(&det, i64::MAX / 2), Some(true));
    }

    #[test]
    fn tenant_quota() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let limits = DetectorLimits {
            max_per_tenant: 2,
            ..DetectorLimits::default()
        };
        let reg = Registry::open(dir.path(), limits).unwrap_or_else(|e| panic!("{e}"));
        let (a, b) = (tenant("a"), tenant("b"));
        let s = |n: &str| spec(&format!(r#"{{"name": "{n}", "query": "up"}}"#));
        for n in ["d1", "d2"] {
            reg.put(&a, s(n), false).unwrap_or_else(|e| panic!("{e}"));
        }
        match reg.put(&a, s("d3"), false) {
            Err(DetectorError::Invalid(m)) => {
                assert!(m.contains("limits.max_detectors_per_tenant"), "{m}")
            }
            other => panic!("{other:?}"),
        }
        // replacing one at the quota is fine, and another tenant has its own
        reg.put(&a, s("d2"), true).unwrap_or_else(|e| panic!("{e}"));
        reg.put(&b, s("d1"), false)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(reg.list(&a).len(), 2);
        reg.delete(&a, "d1").unwrap_or_else(|e| panic!("{e}"));
        reg.put(&a, s("d3"), false)
            .unwrap_or_else(|e| panic!("{e}"));
    }
}
