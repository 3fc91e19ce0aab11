//! Where detectors live on disk, and the in-memory table of them.
//!
//! ```text
//! <data-dir>/detectors/<tenant>/<name>/
//!     spec.json                 the definition (as accepted, defaults filled in)
//!     state.json                status: state, times, per-series write positions
//!     events.json               anomaly events, oldest first
//!     models/<series-key>/      N-BEATS per series: model.safetensors + model.json (card)
//!     run.inprogress            present while a run is in progress (see [`super::files`])
//! ```
//!
//! Every JSON file is replaced atomically (write to a temporary file, fsync, rename), so a
//! crash leaves the old or the new version; files are the server user's only (0600). The
//! storage engine never reads this directory.
//!
//! Creating or replacing a detector checks its definition against [`DetectorLimits`] and the
//! tenant's quota. At start, a detector whose run marker is still there (the process died
//! during that run) is marked failed and suspended, and one whose stored definition no longer
//! passes validation or the limits is kept, shown failed, and never run: a definition that
//! brings the process down cannot do so again at every restart.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::{Mutex, RwLock};
use sightline_detect::forecast::TrainedModel;
use sightline_storage::TenantId;

use super::DetectorError;
use super::events::AnomalyEvent;
use super::files::{self, io, read_json, write_json};
use super::limits::DetectorLimits;
use super::spec::DetectorSpec;
use super::status::{State, Status};

/// One detector in memory.
#[derive(Debug)]
pub struct Detector {
    /// Owner.
    pub tenant: TenantId,
    /// Definition.
    pub spec: RwLock<DetectorSpec>,
    /// Status.
    pub status: Mutex<Status>,
    /// Events.
    pub events: Mutex<Vec<AnomalyEvent>>,
    /// Trained models by series key (loaded lazily from `models/`).
    pub models: Mutex<HashMap<String, Arc<TrainedModel>>>,
    /// Bumped by PUT and DELETE: a run that started under another generation stops and
    /// discards its results.
    pub generation: AtomicU64,
    /// Set by DELETE.
    pub deleted: AtomicBool,
    /// A job for this detector is queued or running.
    pub busy: AtomicBool,
    /// `POST .../run` asked for a training run.
    pub force: AtomicBool,
    /// Serialises runs of this detector (a train and a score never interleave).
    pub run_lock: Mutex<()>,
    /// The directory.
    pub dir: PathBuf,
    /// Why the stored definition is not run (it fails this server's validation or limits);
    /// only a replaced definition clears it.
    pub refused: Option<String>,
}

impl Detector {
    /// A detector with no trained models, not running, stored under `dir`.
    fn new(
        tenant: &TenantId,
        spec: DetectorSpec,
        status: Status,
        events: Vec<AnomalyEvent>,
        dir: PathBuf,
    ) -> Self {
        Detector {
            tenant: tenant.clone(),
            spec: RwLock::new(spec),
            status: Mutex::new(status),
            events: Mutex::new(events),
            models: Mutex::new(HashMap::new()),
            generation: AtomicU64::new(0),
            deleted: AtomicBool::new(false),
            busy: AtomicBool::new(false),
            force: AtomicBool::new(false),
            run_lock: Mutex::new(()),
            dir,
            refused: None,
        }
    }

    /// The detector's name.
    pub fn name(&self) -> String {
        self.spec.read().name.clone()
    }

    /// `{...spec, "status": {...}}`.
    pub fn to_json(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(&*self.spec.read()).unwrap_or_default();
        if let Some(o) = v.as_object_mut() {
            o.insert("status".into(), self.status.lock().public());
        }
        v
    }

    /// Persist `state.json`.
    pub fn save_status(&self) -> Result<(), DetectorError> {
        let s = self.status.lock().clone();
        write_json(&self.dir.join("state.json"), &s)
    }

    /// Persist `events.json`.
    pub fn save_events(&self) -> Result<(), DetectorError> {
        let e = self.events.lock().clone();
        write_json(&self.dir.join("events.json"), &e)
    }

    /// Persist `spec.json`.
    pub fn save_spec(&self) -> Result<(), DetectorError> {
        let s = self.spec.read().clone();
        write_json(&self.dir.join("spec.json"), &s)
    }

    /// Directory of one series' model.
    pub fn model_dir(&self, key: &str) -> PathBuf {
        self.dir.join("models").join(key)
    }
}

/// All detectors of all tenants.
#[derive(Debug)]
pub struct Registry {
    root: PathBuf,
    limits: DetectorLimits,
    table: RwLock<HashMap<(TenantId, String), Arc<Detector>>>,
}

impl Registry {
    /// The registry under `<data_dir>/detectors`, loading every stored detector. Damaged
    /// entries are logged and skipped (their files stay for inspection).
    pub fn open(data_dir: &Path, limits: DetectorLimits) -> Result<Self, DetectorError> {
        let root = data_dir.join("detectors");
        files::create_dir(&root)?;
        // owner-only, whatever an older version or the detect crate (model files) left
        files::restrict(&root)?;
        let mut table = HashMap::new();
        for t in std::fs::read_dir(&root).map_err(io(&root))? {
            let t = t.map_err(io(&root))?;
            let Ok(tenant) = TenantId::new(t.file_name().to_string_lossy().into_owned()) else {
                continue;
            };
            if !t.path().is_dir() {
                continue;
            }
            for d in std::fs::read_dir(t.path()).map_err(io(&t.path()))? {
                let d = d.map_err(io(&t.path()))?;
                let dir = d.path();
                match load_one(&tenant, &dir, &limits) {
                    Ok(Some(det)) => {
                        table.insert((tenant.clone(), det.name()), Arc::new(det));
                    }
                    Ok(None) => {}
                    Err(e) => {
                        tracing::warn!(dir = %dir.display(), error = %e, "skipping damaged detector")
                    }
                }
            }
        }
        tracing::info!(detectors = table.len(), "detectors loaded");
        Ok(Self {
            root,
            limits,
            table: RwLock::new(table),
        })
    }

    /// The limits detectors are held to.
    pub fn limits(&self) -> &DetectorLimits {
        &self.limits
    }

    /// Every detector.
    pub fn all(&self) -> Vec<Arc<Detector>> {
        self.table.read().values().cloned().collect()
    }

    /// The detectors of `tenant`, by name.
    pub fn list(&self, tenant: &TenantId) -> Vec<Arc<Detector>> {
        let mut v: Vec<_> = self
            .table
            .read()
            .iter()
            .filter(|((t, _), _)| t == tenant)
            .map(|(_, d)| d.clone())
            .collect();
        v.sort_by_key(|d| d.name());
        v
    }

    /// One detector.
    pub fn get(&self, tenant: &TenantId, name: &str) -> Option<Arc<Detector>> {
        self.table
            .read()
            .get(&(tenant.clone(), name.to_owned()))
            .cloned()
    }

    /// Create (`replace` false: 409 when it exists) or replace a detector. Replacing keeps the
    /// events and the write positions, drops the models, and sets the state back to pending
    /// (a suspended or refused detector gets a fresh start). A definition that fails
    /// validation or the limits, or a new detector past the tenant's quota, is
    /// [`DetectorError::Invalid`] (400).
    pub fn put(
        &self,
        tenant: &TenantId,
        spec: DetectorSpec,
        replace: bool,
    ) -> Result<(Arc<Detector>, bool), DetectorError> {
        spec.validate()
            .and_then(|()| self.limits.check(&spec))
            .map_err(|e| DetectorError::Invalid(format!("invalid detector: {e}")))?;
        let key = (tenant.clone(), spec.name.clone());
        let existing = self.table.read().get(&key).cloned();
        if existing.is_some() && !replace {
            return Err(DetectorError::Exists(spec.name));
        }
        let mut status = Status::default();
        let mut events = Vec::new();
        if let Some(old) = &existing {
            old.generation.fetch_add(1, Ordering::SeqCst);
            old.deleted.store(true, Ordering::SeqCst);
            // Let a running job of the old definition stop before its files are replaced
            // (outside the table lock, so other requests are not held up meanwhile).
            let _guard = old.run_lock.lock();
            events = old.events.lock().clone();
            // Points already written stay; the new definition writes from there on.
            status.written = old.status.lock().written.clone();
        }
        let dir = self.root.join(tenant.as_str()).join(&spec.name);
        let det = Arc::new(Detector::new(tenant, spec, status, events, dir));
        let mut table = self.table.write();
        if !replace && table.contains_key(&key) {
            return Err(DetectorError::Exists(key.1));
        }
        if !table.contains_key(&key) {
            let max = self.limits.max_per_tenant;
            let count = table.keys().filter(|(t, _)| t == tenant).count();
            if count >= max {
                return Err(DetectorError::Invalid(format!(
                    "invalid detector: tenant {:?} already has {count} detectors, the limit is {max} (limits.max_detectors_per_tenant); delete one first",
                    tenant.as_str()
                )));
            }
        }
        if existing.is_some() {
            let models = det.dir.join("models");
            if models.exists() {
                std::fs::remove_dir_all(&models).map_err(io(&models))?;
            }
        }
        // a marker the old definition's crashed run left has been dealt with
        files::clear_marker(&det.dir)?;
        det.save_spec()?;
        det.save_status()?;
        det.save_events()?;
        table.insert(key, det.clone());
        Ok((det, existing.is_some()))
    }

    /// Delete a detector with its events and models (its written series stay in the store).
    pub fn delete(&self, tenant: &TenantId, name: &str) -> Result<bool, DetectorError> {
        let removed = self
            .table
            .write()
            .remove(&(tenant.clone(), name.to_owned()));
        let Some(det) = removed else {
            return Ok(false);
        };
        det.generation.fetch_add(1, Ordering::SeqCst);
        det.deleted.store(true, Ordering::SeqCst);
        // Wait for a running job to notice, so it cannot write files after the removal.
        let _guard = det.run_lock.lock();
        if det.dir.exists() {
            std::fs::remove_dir_all(&det.dir).map_err(io(&det.dir))?;
        }
        Ok(true)
    }
}

/// The status message of a detector whose run the process did not survive.
fn crashed_message(name: &str, info: Option<&files::RunInfo>) -> String {
    let run = match info {
        Some(i) if i.training => format!("training run (started at {} ms)", i.started_ms),
        Some(i) => format!("scoring run (started at {} ms)", i.started_ms),
        None => "run".to_owned(),
    };
    format!(
        "the server stopped during this detector's last {run} and may have crashed in it; it is not scheduled again until its definition is replaced (PUT /api/v1/detectors/{name}) or it is run explicitly (POST /api/v1/detectors/{name}/run)"
    )
}

fn load_one(
    tenant: &TenantId,
    dir: &Path,
    limits: &DetectorLimits,
) -> Result<Option<Detector>, DetectorError> {
    let Some(spec) = read_json::<DetectorSpec>(&dir.join("spec.json"))? else {
        return Ok(None);
    };
    let mut status: Status = read_json(&dir.join("state.json"))?.unwrap_or_default();
    if status.state == State::Training {
        // Interrupted by a restart: train again.
        status.state = State::Pending;
    }
    status.progress = None;
    let events = read_json(&dir.join("events.json"))?.unwrap_or_default();
    let refused = spec
        .validate()
        .and_then(|()| limits.check(&spec))
        .err()
        .map(|e| {
            format!(
                "the stored definition is refused by this server ({e}); it is not run until it is replaced"
            )
        });
    let crashed = files::leftover_marker(dir);
    if let Some(info) = &crashed {
        let msg = crashed_message(&spec.name, info.as_ref());
        tracing::warn!(dir = %dir.display(), "{msg}");
        status.state = State::Failed;
        status.error = Some(msg.clone());
        status.suspended = Some(msg);
    }
    let mut det = Detector::new(tenant, spec, status, events, dir.to_owned());
    if crashed.is_some() {
        // the suspension is durable before the marker goes
        det.save_status()?;
        files::clear_marker(dir)?;
    }
    if let Some(msg) = refused {
        tracing::warn!(dir = %dir.display(), "{msg}");
        let mut st = det.status.lock();
        st.state = State::Failed;
        st.error = Some(msg.clone());
        drop(st);
        det.refused = Some(msg);
    }
    Ok(Some(det))
}
