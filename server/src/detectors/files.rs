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

use std::fs::{DirBuilder, OpenOptions};
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sightline_storage::fsutil;

use super::DetectorError;

/// Permission bits of every detector file: the server's user only.
pub const FILE_MODE: u32 = 0o600;
/// Permission bits of the detector directories.
pub const DIR_MODE: u32 = 0o700;
/// The run-in-progress marker in a detector's directory.
pub const RUN_MARKER: &str = "run.inprogress";

pub(super) fn io(path: &Path) -> impl Fn(std::io::Error) -> DetectorError + '_ {
    move |e| DetectorError::Io(format!("{}: {e}", path.display()))
}

/// `dir` and its missing parents, owner-only.
pub fn create_dir(dir: &Path) -> Result<(), DetectorError> {
    DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(dir)
        .map_err(io(dir))
}

/// fsync `dir`, so that entries created, renamed or removed in it are durable.
fn sync_dir(dir: &Path) -> Result<(), DetectorError> {
    fsutil::sync_dir(dir).map_err(|e| DetectorError::Io(e.to_string()))
}

/// Replace `path` with `bytes` atomically and durably (temporary file, fsync, rename, fsync of
/// the directory), mode [`FILE_MODE`]: a crash leaves the old or the new content.
pub fn write_private(path: &Path, bytes: &[u8]) -> Result<(), DetectorError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    create_dir(dir)?;
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    let tmp = dir.join(name);
    {
        let mut f = OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .mode(FILE_MODE)
            .open(&tmp)
            .map_err(io(&tmp))?;
        // a temporary file left by an older version may have other bits
        f.set_permissions(std::fs::Permissions::from_mode(FILE_MODE))
            .map_err(io(&tmp))?;
        f.write_all(bytes).map_err(io(&tmp))?;
        f.sync_all().map_err(io(&tmp))?;
    }
    std::fs::rename(&tmp, path).map_err(io(path))?;
    sync_dir(dir)
}

/// Write `value` as pretty JSON to `path` with [`write_private`].
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), DetectorError> {
    let bytes = serde_json::to_vec_pretty(value).map_err(|e| DetectorError::Io(e.to_string()))?;
    write_private(path, &bytes)
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
        let tmp = dir.path().join("t/a/state.json.tmp");
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
        let missing: Option<serde_json::Value> =
            read_json(&dir.path().join("nope.json")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(missing, None);
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
