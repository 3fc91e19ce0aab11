//! Where detectors live on disk, and the in-memory table of them.
//!
//! ```text
//! <data-dir>/detectors/<tenant>/<name>/
//!     spec.json                 the definition (as accepted, defaults filled in)
//!     state.json                status: state, times, per-series write positions
//!     events.json               anomaly events, oldest first
//!     models/<series-key>/      N-BEATS per series: model.safetensors + model.json (card)
//! ```
//!
//! Every JSON file is replaced atomically (write to a temporary file, fsync, rename), so a
//! crash leaves the old or the new version. The storage engine never reads this directory.

use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::{Mutex, RwLock};
use sightline_detect::forecast::TrainedModel;
use sightline_storage::TenantId;

use super::DetectorError;
use super::events::AnomalyEvent;
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
    table: RwLock<HashMap<(TenantId, String), Arc<Detector>>>,
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> DetectorError + '_ {
    move |e| DetectorError::Io(format!("{}: {e}", path.display()))
}

/// Write `value` as pretty JSON to `path` atomically.
pub fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<(), DetectorError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let tmp = path.with_extension("json.tmp");
    let bytes = serde_json::to_vec_pretty(value).map_err(|e| DetectorError::Io(e.to_string()))?;
    let mut f = std::fs::File::create(&tmp).map_err(io(&tmp))?;
    f.write_all(&bytes).map_err(io(&tmp))?;
    f.sync_all().map_err(io(&tmp))?;
    drop(f);
    std::fs::rename(&tmp, path).map_err(io(path))?;
    Ok(())
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Option<T>, DetectorError> {
    match std::fs::read(path) {
        Ok(b) => serde_json::from_slice(&b)
            .map(Some)
            .map_err(|e| DetectorError::Io(format!("{}: {e}", path.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io(path)(e)),
    }
}

impl Registry {
    /// The registry under `<data_dir>/detectors`, loading every stored detector. Damaged
    /// entries are logged and skipped (their files stay for inspection).
    pub fn open(data_dir: &Path) -> Result<Self, DetectorError> {
        let root = data_dir.join("detectors");
        std::fs::create_dir_all(&root).map_err(io(&root))?;
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
                match load_one(&tenant, &dir) {
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
            table: RwLock::new(table),
        })
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
    /// events and the write positions, drops the models, and sets the state back to pending.
    pub fn put(
        &self,
        tenant: &TenantId,
        spec: DetectorSpec,
        replace: bool,
    ) -> Result<(Arc<Detector>, bool), DetectorError> {
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
        if existing.is_some() {
            let models = det.dir.join("models");
            if models.exists() {
                std::fs::remove_dir_all(&models).map_err(io(&models))?;
            }
        }
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

fn load_one(tenant: &TenantId, dir: &Path) -> Result<Option<Detector>, DetectorError> {
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
    Ok(Some(Detector::new(
        tenant,
        spec,
        status,
        events,
        dir.to_owned(),
    )))
}
