//! Opening a data directory: lock, manifest, segment verification and quarantine, removal of
//! leftovers, WAL replay.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;
use serde::Serialize;

use super::{Counters, Inner, State};
use crate::config::StoreConfig;
use crate::error::{IoContext, Result, StorageError};
use crate::fsutil;
use crate::manifest::{Manifest, SegmentMeta};
use crate::memtable::{MemoryBudget, Memtable};
use crate::segment::Segment;
use crate::series::SeriesCatalog;
use crate::types::{Lsn, Signal};
use crate::wal::{self, Wal, WalReplayReport};

/// Name of the lock file that keeps a second process out.
pub const LOCK_FILE: &str = "LOCK";
/// Directory where damaged segments and WAL files are moved.
pub const QUARANTINE_DIR: &str = "quarantine";

/// A segment moved aside at open.
#[derive(Clone, Debug, Serialize)]
pub struct QuarantinedSegment {
    /// Its metadata.
    pub meta: SegmentMeta,
    /// Where it was moved.
    pub moved_to: Option<PathBuf>,
    /// What was wrong.
    pub reason: String,
}

/// What [`super::Store::open`] found.
#[derive(Clone, Debug, Default, Serialize)]
pub struct OpenReport {
    /// Segments opened.
    pub segments_opened: usize,
    /// Segments quarantined.
    pub quarantined: Vec<QuarantinedSegment>,
    /// Directories of interrupted flushes/compactions removed.
    pub removed_leftovers: Vec<PathBuf>,
    /// WAL replay.
    pub wal: WalReplayReport,
}

impl OpenReport {
    /// Whether anything was damaged.
    pub fn found_damage(&self) -> bool {
        !self.quarantined.is_empty() || !self.wal.problems.is_empty()
    }
}

/// Moves a segment directory into quarantine; returns the new location.
pub(crate) fn quarantine_segment(root: &Path, meta: &SegmentMeta) -> Result<Option<PathBuf>> {
    let src = root.join(meta.relative_dir());
    if !src.exists() {
        return Ok(None);
    }
    let qdir = root.join(QUARANTINE_DIR);
    fsutil::create_private_dir_all(&qdir)?;
    let dst = qdir.join(format!(
        "{}-{}-{}-{}",
        meta.tenant,
        meta.signal,
        crate::manifest::partition_dir_name(meta.partition_start),
        meta.id
    ));
    if dst.exists() {
        fs::remove_dir_all(&dst).at(&dst)?;
    }
    fs::rename(&src, &dst).at(&src)?;
    fsutil::sync_dir(&qdir)?;
    if let Some(p) = src.parent() {
        fsutil::sync_dir(p)?;
    }
    Ok(Some(dst))
}

/// Deletes segment directories the manifest does not name (interrupted flush or compaction,
/// or merged segments whose deletion a crash prevented).
fn remove_leftovers(root: &Path, live: &HashSet<PathBuf>) -> Result<Vec<PathBuf>> {
    let mut removed = Vec::new();
    let data = root.join("data");
    if !data.exists() {
        return Ok(removed);
    }
    // data/<tenant>/<signal>/<partition>/<segment>
    let subdirs = |p: &Path| -> Result<Vec<PathBuf>> {
        let mut v = Vec::new();
        for e in fs::read_dir(p).at(p)? {
            let e = e.at(p)?;
            if e.file_type().at(e.path())?.is_dir() {
                v.push(e.path());
            }
        }
        Ok(v)
    };
    for tenant in subdirs(&data)? {
        for signal in subdirs(&tenant)? {
            for partition in subdirs(&signal)? {
                for seg in subdirs(&partition)? {
                    let rel = seg
                        .strip_prefix(root)
                        .map(Path::to_path_buf)
                        .unwrap_or_default();
                    if !live.contains(&rel) {
                        fs::remove_dir_all(&seg).at(&seg)?;
                        removed.push(rel);
                    }
                }
                if fs::read_dir(&partition).at(&partition)?.next().is_none() {
                    let _ = fs::remove_dir(&partition);
                }
            }
        }
    }
    Ok(removed)
}

/// How long opening waits for a busy directory lock before answering `Locked`.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_millis(1000);

pub(super) fn open(root: &Path, config: StoreConfig) -> Result<(Inner, OpenReport)> {
    fsutil::create_private_dir_all(root)?;
    let lock_path = root.join(LOCK_FILE);
    let lock_file = fsutil::open_private_file(&lock_path)?;
    // A lock that is busy for a moment is waited out: `flock` locks belong to the open file,
    // so a child process forked by another thread of this process (before its exec closes the
    // inherited descriptor) can hold a just-released lock for a few milliseconds. A store that
    // is really open elsewhere still answers `Locked`, after LOCK_WAIT.
    let deadline = std::time::Instant::now() + LOCK_WAIT;
    let mut attempt = lock_file.try_lock();
    while matches!(attempt, Err(fs::TryLockError::WouldBlock))
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(std::time::Duration::from_millis(10));
        attempt = lock_file.try_lock();
    }
    match attempt {
        Ok(()) => {}
        Err(fs::TryLockError::WouldBlock) => return Err(StorageError::Locked(root.to_owned())),
        Err(fs::TryLockError::Error(e)) => return Err(StorageError::io(&lock_path, e)),
    }
    let mut report = OpenReport::default();
    let mut manifest = Manifest::load(root)?.unwrap_or_default();

    // Segments: verify each; quarantine the damaged ones.
    let mut segments: HashMap<(crate::TenantId, Signal), Vec<Arc<Segment>>> = HashMap::new();
    let mut catalogs: HashMap<crate::TenantId, SeriesCatalog> = HashMap::new();
    let mut keep = Vec::with_capacity(manifest.segments.len());
    for meta in std::mem::take(&mut manifest.segments) {
        match Segment::open(root, meta.clone()) {
            Ok(seg) => {
                if meta.signal == Signal::Samples {
                    let cat = catalogs.entry(meta.tenant.clone()).or_default();
                    for d in seg.series() {
                        cat.insert(d.clone());
                    }
                }
                segments
                    .entry((meta.tenant.clone(), meta.signal))
                    .or_default()
                    .push(Arc::new(seg));
                keep.push(meta);
            }
            Err(StorageError::Corruption { path, detail }) => {
                let reason = format!("{}: {detail}", path.display());
                tracing::error!(segment = %meta.id, %reason, "quarantining damaged segment");
                let moved_to = quarantine_segment(root, &meta)?;
                report.quarantined.push(QuarantinedSegment {
                    meta,
                    moved_to,
                    reason,
                });
            }
            Err(e) => return Err(e),
        }
    }
    manifest.segments = keep;
    report.segments_opened = manifest.segments.len();
    if !report.quarantined.is_empty() {
        manifest.generation += 1;
        manifest.store(root)?;
    }
    let live: HashSet<PathBuf> = manifest.segments.iter().map(|m| m.relative_dir()).collect();
    report.removed_leftovers = remove_leftovers(root, &live)?;

    // WAL replay into memtables.
    let scan_memory = crate::scan_memory::ScanMemoryPool::new(config.scan_memory_bytes);
    let budget = MemoryBudget::new(config.memory_budget_bytes);
    let mut active: HashMap<(crate::TenantId, Signal), Memtable> = HashMap::new();
    let (wal, wal_report, last) = Wal::open_with_io(
        &root.join("wal"),
        &root.join(QUARANTINE_DIR),
        manifest.wal_checkpoint,
        config.wal_file_bytes,
        config.wal_io.clone(),
        |lsn, payload| {
            let entry = wal::entry::decode(payload)?;
            if let Some(series) = &entry.series {
                let cat = catalogs.entry(entry.tenant.clone()).or_default();
                for d in crate::columnar::series_from_batch(series)? {
                    cat.insert(Arc::new(d));
                }
            }
            let (lo, hi) = crate::segment::time_bounds(entry.signal, &entry.batch)?;
            let bytes = crate::columnar::batch_bytes(&entry.batch);
            budget.force(bytes);
            active
                .entry((entry.tenant, entry.signal))
                .or_insert_with(|| Memtable::new(entry.signal))
                .insert(entry.batch, lo, hi, bytes, lsn)
        },
    )?;
    report.wal = wal_report;
    let counters = Counters::default();
    counters
        .quarantined_segments
        .store(report.quarantined.len() as u64, Ordering::Relaxed);
    let state = State {
        next_lsn: Lsn(last.0.max(manifest.wal_checkpoint.0) + 1),
        active,
        frozen: Vec::new(),
        segments,
        manifest,
        catalogs,
        closed: false,
    };
    let inner = Inner {
        root: root.to_owned(),
        config,
        wal,
        state: Mutex::new(state),
        commit: Mutex::new(()),
        flushing: Mutex::new(()),
        compacting: Mutex::new(()),
        budget,
        scan_memory,
        counters,
        wake: super::background::Wakeup::default(),
        compact_wake: super::background::Wakeup::default(),
        observers: Default::default(),
        shutdown: AtomicBool::new(false),
        _lock_file: lock_file,
    };
    Ok((inner, report))
}
