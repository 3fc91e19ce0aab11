//! The scheduler: a bounded pool of worker threads (`--detector-threads`, default 1; 0 turns
//! detectors off) fed by a ticker thread. Work runs on its own OS threads, never on the async
//! runtime, so ingest and queries keep being served while a model trains.
//!
//! Every 250 ms the ticker looks at each idle detector and queues at most one job for it:
//! a training run (whole history) when it is new, asked to run (`POST .../run`), due for
//! `retrain_every`, or failed (retried every `max(step, 30 s)`); otherwise a scoring run once
//! per `step`, which evaluates just enough recent history to score the points that arrived.

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use sightline_storage::Store;

use super::registry::{Detector, Registry};
use super::status::State;
use super::{DetectorError, now_ms};

/// How often the ticker looks for due work.
pub const TICK: Duration = Duration::from_millis(250);

struct Job {
    det: Arc<Detector>,
    train: bool,
}

/// The detectors of a server: registry plus scheduler.
pub struct Detectors {
    store: Arc<Store>,
    registry: Registry,
    threads: usize,
    queue: Mutex<VecDeque<Job>>,
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
    /// plus the ticker (none when `threads` is 0).
    pub fn start(store: Arc<Store>, threads: usize) -> Result<Arc<Self>, DetectorError> {
        let registry = Registry::open(store.root())?;
        let this = Arc::new(Self {
            store,
            registry,
            threads,
            queue: Mutex::new(VecDeque::new()),
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

    /// Ask for a training run as soon as a worker is free.
    pub fn request_run(&self, det: &Detector) -> Result<(), DetectorError> {
        if !self.enabled() {
            return Err(DetectorError::Disabled);
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
            self.tick(now_ms());
            let mut q = self.queue.lock();
            if !self.stopping() {
                self.cv.wait_for(&mut q, TICK);
            }
        }
    }

    /// Queue the jobs due at `now`.
    fn tick(&self, now: i64) {
        for det in self.registry.all() {
            if det.busy.load(Ordering::SeqCst) || det.deleted.load(Ordering::SeqCst) {
                continue;
            }
            let (step, retrain) = {
                let spec = det.spec.read();
                (spec.step_ms(), spec.retrain_ms())
            };
            let forced = det.force.swap(false, Ordering::SeqCst);
            let job = {
                let st = det.status.lock();
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
            };
            if let Some(train) = job {
                det.busy.store(true, Ordering::SeqCst);
                self.queue.lock().push_back(Job { det, train });
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
                    if let Some(j) = q.pop_front() {
                        break j;
                    }
                    self.cv.wait_for(&mut q, TICK);
                }
            };
            let stop = || self.stopping();
            let det = job.det.clone();
            let result = std::panic::catch_unwind(AssertUnwindSafe(|| {
                super::run::run(&self.store, &det, job.train, now_ms(), &stop)
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
                st.last_run_ms = Some(now_ms());
                drop(st);
                if !det.deleted.load(Ordering::SeqCst) {
                    let _ = det.save_status();
                }
            }
            det.busy.store(false, Ordering::SeqCst);
        }
    }
}
