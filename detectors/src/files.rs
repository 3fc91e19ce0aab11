//! The detectors' files: JSON replaced atomically and readable by the server's user only, and
//! the run-in-progress marker that tells a restart which detector's run was cut short by the
//! process dying.
//!
//! A run writes [`RUN_MARKER`] into the detector's directory (fsynced, with the directory)
//! before it starts and removes it when it ends, whatever the result. A marker found at start
//! therefore means the process died during that run, possibly because of it (a query or model
//! that exhausts the stack or memory): the registry then marks the detector failed and keeps it
//! off the schedule until its definition is replaced or it is run explicitly, so one bad
//! definition cannot crash every restart.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sightline_detect::forecast::{ComputeDevice, TrainedModel, candle_device};
use sightline_storage::fsutil;

use super::DetectorError;

/// Permission bits of every detector file: the server's user only (the store's).
pub const FILE_MODE: u32 = fsutil::FILE_MODE;
/// Permission bits of the detector directories (the store's).
pub const DIR_MODE: u32 = fsutil::DIR_MODE;
/// The run-in-progress marker in a detector's directory.
pub const RUN_MARKER: &str = "run.inprogress";

pub(super) fn io(path: &Path) -> impl Fn(std::io::Error) -> DetectorError + '_ {
    move |e| DetectorError::Io(format!("{}: {e}", path.display()))
}

fn storage(e: sightline_storage::StorageError) -> DetectorError {
    DetectorError::Io(e.to_string())
}

/// `dir` and its missing parents, owner-only ([`DIR_MODE`]).
pub fn create_dir(dir: &Path) -> Result<(), DetectorError> {
    fsutil::create_private_dir_all(dir).map_err(storage)
}

/// Bring every file below `dir` down to [`FILE_MODE`] and every directory to [`DIR_MODE`]
/// (model files are written by the detect crate, and older versions used the default modes).
pub fn restrict(dir: &Path) -> Result<(), DetectorError> {
    fsutil::restrict_tree(dir).map_err(storage)
}

/// fsync `dir`, so that entries created, renamed or removed in it are durable.
fn sync_dir(dir: &Path) -> Result<(), DetectorError> {
    fsutil::sync_dir(dir).map_err(storage)
}

/// Replace `path` with `bytes` atomically and durably (the store's `rewrite_file`: temporary
/// file of mode [`FILE_MODE`], fsync, rename, fsync of the directory): a crash leaves the old
/// or the new content.
pub fn write_private(path: &Path, bytes: &[u8]) -> Result<(), DetectorError> {
    if let Some(dir) = path.parent() {
        create_dir(dir)?;
    }
    fsutil::rewrite_file(path, bytes).map_err(storage)
}

/// Write `value` as pretty JSON to `path` with [`write_private`].
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), DetectorError> {
    let bytes = serde_json::to_vec_pretty(value).map_err(|e| DetectorError::Io(e.to_string()))?;
    write_private(path, &bytes)
}

/// File name of a model's weights inside its directory.
pub const WEIGHTS_FILE: &str = "model.safetensors";
/// File name of a model's card inside its directory.
pub const CARD_FILE: &str = "model.json";

/// Saves a trained model into `dir` as [`WEIGHTS_FILE`] and [`CARD_FILE`], each replaced
/// atomically with [`write_private`]. The weights go first: a crash between the two leaves a
/// card whose `weights_hash` does not match, which [`load_model`] refuses (the series is then
/// trained again), never a model assembled from two trainings.
pub fn save_model(dir: &Path, model: &TrainedModel) -> Result<(), DetectorError> {
    let saved = model
        .to_bytes()
        .map_err(|e| DetectorError::Io(format!("{}: {e}", dir.display())))?;
    write_private(&dir.join(WEIGHTS_FILE), &saved.weights)?;
    write_private(&dir.join(CARD_FILE), saved.card_json.as_bytes())
}

/// Loads the model [`save_model`] wrote into `dir` (onto the CPU, where scoring runs).
pub fn load_model(dir: &Path) -> Result<TrainedModel, DetectorError> {
    let device = candle_device(ComputeDevice::Cpu)
        .map_err(|e| DetectorError::Io(format!("{}: {e}", dir.display())))?;
    let w = dir.join(WEIGHTS_FILE);
    let weights = std::fs::read(&w).map_err(io(&w))?;
    let c = dir.join(CARD_FILE);
    let card = std::fs::read_to_string(&c).map_err(io(&c))?;
    TrainedModel::from_bytes(&weights, &card, &device)
        .map_err(|e| DetectorError::Io(format!("{}: {e}", dir.display())))
}

/// Read JSON from `path`; `None` when the file does not exist.
pub fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Option<T>, DetectorError> {
    match std::fs::read(path) {
        Ok(b) => serde_json::from_slice(&b)
            .map(Some)
            .map_err(|e| DetectorError::Io(format!("{}: {e}", path.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io(path)(e)),
    }
}

/// What the marker records about the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// Wall-clock start (ms).
    pub started_ms: i64,
    /// A training run (else a scoring run).
    pub training: bool,
}

/// The marker of a run in progress; dropping it removes the file.
#[derive(Debug)]
pub struct RunMarker {
    path: PathBuf,
}

impl RunMarker {
    /// Write the marker into `dir` durably, before the run starts.
    pub fn begin(dir: &Path, info: &RunInfo) -> Result<Self, DetectorError> {
        let path = dir.join(RUN_MARKER);
        write_json(&path, info)?;
        Ok(Self { path })
    }
}

impl Drop for RunMarker {
    fn drop(&mut self) {
        match std::fs::remove_file(&self.path) {
            Ok(()) => {
                if let Some(dir) = self.path.parent()
                    && let Err(e) = sync_dir(dir)
                {
                    tracing::warn!(error = %e, "cannot sync the detector directory");
                }
            }
            // the detector was deleted meanwhile
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!(path = %self.path.display(), error = %e, "cannot remove the run marker")
            }
        }
    }
}

/// The marker a run that did not end left in `dir`, if any (an unreadable one counts, with
/// nothing known about the run).
pub fn leftover_marker(dir: &Path) -> Option<Option<RunInfo>> {
    let path = dir.join(RUN_MARKER);
    if !path.exists() {
        return None;
    }
    Some(read_json(&path).ok().flatten())
}

/// Remove a leftover marker once what it says has been recorded.
pub fn clear_marker(dir: &Path) -> Result<(), DetectorError> {
    let path = dir.join(RUN_MARKER);
    match std::fs::remove_file(&path) {
        Ok(()) => sync_dir(dir),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io(&path)(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p)
            .map(|m| m.permissions().mode() & 0o777)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn json_is_replaced_atomically_owner_only() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("t/a/state.json");
        // a stale temporary file with loose bits does not leak them
        create_dir(&dir.path().join("t/a")).unwrap_or_else(|e| panic!("{e}"));
        let tmp = dir.path().join("t/a/state.tmp");
        std::fs::write(&tmp, b"old").unwrap_or_else(|e| panic!("{e}"));
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o644))
            .unwrap_or_else(|e| panic!("{e}"));
        write_json(&path, &serde_json::json!({"v": 1})).unwrap_or_else(|e| panic!("{e}"));
        write_json(&path, &serde_json::json!({"v": 2})).unwrap_or_else(|e| panic!("{e}"));
        let back: Option<serde_json::Value> = read_json(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back, Some(serde_json::json!({"v": 2})));
        assert_eq!(mode(&path), FILE_MODE);
        assert_eq!(mode(&dir.path().join("t/a")), DIR_MODE);
        assert!(!tmp.exists());
        // what another writer left with its own modes is brought down
        let model = dir.path().join("t/a/models/k/model.json");
        std::fs::create_dir_all(model.parent().unwrap_or(dir.path()))
            .unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(&model, b"{}").unwrap_or_else(|e| panic!("{e}"));
        std::fs::set_permissions(&model, std::fs::Permissions::from_mode(0o644))
            .unwrap_or_else(|e| panic!("{e}"));
        restrict(&dir.path().join("t")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(mode(&model), FILE_MODE);
        assert_eq!(mode(&dir.path().join("t/a/models")), DIR_MODE);
        let missing: Option<serde_json::Value> =
            read_json(&dir.path().join("nope.json")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(missing, None);
    }

    #[test]
    fn models_are_saved_atomically_owner_only_and_a_torn_pair_is_refused() {
        use sightline_detect::forecast::{
            Architecture, NBeatsConfig, TrainConfig, no_progress, train,
        };
        let mut cfg = NBeatsConfig::small(Architecture::Generic, 4, 2);
        for st in &mut cfg.stacks {
            st.width = 8;
            st.layers = 1;
            st.blocks = 1;
        }
        let tc = TrainConfig {
            max_steps: 5,
            batch_size: 8,
            eval_every: 5,
            ..TrainConfig::default()
        };
        let series: Vec<f64> = (0..64).map(|i| (i as f64 / 4.0).sin()).collect();
        let trained = |seed| {
            let tc = TrainConfig { seed, ..tc.clone() };
            train(&series, None, &cfg, &tc, &mut no_progress).unwrap_or_else(|e| panic!("{e}"))
        };
        let (a, b) = (trained(1), trained(2));
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let m = dir.path().join("models/k");
        save_model(&m, &a).unwrap_or_else(|e| panic!("{e}"));
        let back = load_model(&m).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back.forecast(&series).ok(), a.forecast(&series).ok());
        assert_eq!(mode(&m.join(WEIGHTS_FILE)), FILE_MODE);
        assert_eq!(mode(&m.join(CARD_FILE)), FILE_MODE);
        assert!(!m.join("model.tmp").exists());
        // A crash between the two writes: b's weights with a's card. Refused, not mixed.
        let b_bytes = b.to_bytes().unwrap_or_else(|e| panic!("{e}"));
        write_private(&m.join(WEIGHTS_FILE), &b_bytes.weights).unwrap_or_else(|e| panic!("{e}"));
        assert!(load_model(&m).is_err());
        assert!(load_model(&dir.path().join("missing")).is_err());
    }

    #[test]
    fn marker_lives_as_long_as_the_run() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(leftover_marker(dir.path()), None);
        let info = RunInfo {
            started_ms: 5,
            training: true,
        };
        let marker = RunMarker::begin(dir.path(), &info).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(leftover_marker(dir.path()), Some(Some(info)));
        assert_eq!(mode(&dir.path().join(RUN_MARKER)), FILE_MODE);
        drop(marker);
        assert_eq!(leftover_marker(dir.path()), None);
        // a torn marker still counts
        std::fs::write(dir.path().join(RUN_MARKER), b"{").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(leftover_marker(dir.path()), Some(None));
        clear_marker(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(leftover_marker(dir.path()), None);
    }
}
