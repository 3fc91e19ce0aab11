//! Write-ahead log: segmented append-only files with group commit.
//!
//! Records are framed by [`frame`]. The store assigns LSNs and calls [`Wal::append`] while holding
//! its state lock, so file order equals LSN order equals memtable order. Durability is awaited
//! outside that lock with [`Wal::wait_durable`]: the first waiter to find no sync in flight
//! issues one `fdatasync` that covers every record written so far, and all others whose records
//! it covers return with it (group commit).
//!
//! Files are named `<first-lsn, 20 digits>.wal`. A file is deleted once every record in it is at
//! or below the manifest's checkpoint, i.e. persisted in segments.
//!
//! Disk faults: every record is written at the offset the log tracks itself, never at the file
//! position, so a failed write leaves nothing behind once cut off again. A write that fails is
//! undone with a truncate back to where the record began; if the truncate fails too, or an fsync
//! fails, the log is poisoned and acknowledges nothing more. The file operations go through
//! [`io::WalIo`], which fault-injection tests replace.

pub mod entry;
#[cfg(test)]
mod fault_tests;
pub mod frame;
pub mod io;

use std::fs::{self, File, OpenOptions};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::{Condvar, Mutex};
use serde::{Deserialize, Serialize};

use crate::error::{IoContext, Result, StorageError};
use crate::fsutil;
use crate::types::Lsn;
use io::{OsWalIo, WalIo};

/// When acknowledged writes reach stable storage.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "mode")]
pub enum FsyncPolicy {
    /// Every acknowledged write is fsynced first (shared by concurrent writers). The default:
    /// an acknowledged write survives a crash or power loss.
    #[default]
    Always,
    /// Writes are acknowledged once in the page cache and fsynced every `interval_ms`: a power
    /// loss may lose up to that much acknowledged data; a process crash loses nothing.
    Interval {
        /// Milliseconds between background fsyncs.
        interval_ms: u64,
    },
    /// Never fsync the WAL (tests and throwaway data only).
    Never,
}

/// What replay found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct WalReplayReport {
    /// WAL files read.
    pub files: usize,
    /// Records above the checkpoint handed to the store.
    pub records_replayed: usize,
    /// Bytes cut off a torn or corrupt tail.
    pub truncated_bytes: u64,
    /// Descriptions of damage found (empty for a clean log).
    pub problems: Vec<String>,
    /// Files moved to quarantine because they followed a corrupt record.
    pub quarantined_files: Vec<PathBuf>,
}

struct Current {
    file: Arc<File>,
    path: PathBuf,
    bytes: u64,
    first_lsn: Lsn,
}

#[derive(Default)]
struct SyncState {
    written: Lsn,
    synced: Lsn,
    syncing: bool,
    poisoned: Option<String>,
}

/// Statistics exposed for monitoring.
#[derive(Clone, Debug, Default, Serialize)]
pub struct WalStats {
    /// fsync calls issued.
    pub fsyncs: u64,
    /// Total time spent in fsync, microseconds.
    pub fsync_micros_total: u64,
    /// Longest single fsync, microseconds.
    pub fsync_micros_max: u64,
    /// Bytes appended since open.
    pub bytes_written: u64,
}

/// Why a new WAL file could not be started.
struct CreateFailed {
    error: StorageError,
    /// Set when the half-made file could not be removed again. Appends continue in the previous
    /// file under LSNs the leftover's name claims, and replay would read the header-less leftover
    /// as damage and quarantine the files after it, so the log must stop.
    leftover: Option<String>,
}

/// Creates `<first>.wal` with its header, durable (file and directory entry). On failure the
/// half-made file is removed again, so that it cannot later sit between good files.
fn create_file(
    io: &dyn WalIo,
    dir: &Path,
    first: Lsn,
) -> std::result::Result<Current, CreateFailed> {
    let path = dir.join(file_name(first));
    let made = fsutil::create_private_file(&path).and_then(|file| {
        io.write_all_at(&file, frame::FILE_MAGIC, 0).at(&path)?;
        io.sync_data(&file).at(&path)?;
        fsutil::sync_dir(dir)?;
        Ok(file)
    });
    match made {
        Ok(file) => Ok(Current {
            file: Arc::new(file),
            path,
            bytes: frame::FILE_MAGIC.len() as u64,
            first_lsn: first,
        }),
        Err(error) => {
            let leftover = match fs::remove_file(&path) {
                Ok(()) => None,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => Some(format!(
                    "new WAL file {} failed ({error}) and could not be removed: {e}",
                    path.display()
                )),
            };
            Err(CreateFailed { error, leftover })
        }
    }
}

/// The write-ahead log of one data directory.
pub struct Wal {
    dir: PathBuf,
    quarantine_dir: PathBuf,
    max_file_bytes: u64,
    current: Mutex<Current>,
    sync: Mutex<SyncState>,
    synced_cv: Condvar,
    stats: Mutex<WalStats>,
    io: Arc<dyn WalIo>,
}

fn file_name(first: Lsn) -> String {
    format!("{:020}.wal", first.0)
}

fn list_files(dir: &Path) -> Result<Vec<(Lsn, PathBuf)>> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).at(dir)? {
        let entry = entry.at(dir)?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(stem) = name.strip_suffix(".wal") else {
            continue;
        };
        if let Ok(n) = stem.parse::<u64>() {
            files.push((Lsn(n), entry.path()));
        }
    }
    files.sort();
    Ok(files)
}

impl Wal {
    /// Opens the log in `dir`, replaying every record above `checkpoint` into `apply` in LSN
    /// order. A torn or corrupt tail is truncated at the last good record; files after a corrupt
    /// record are moved to `quarantine_dir`. Returns the log (positioned to append LSNs after the
    /// last good one) and what replay found.
    pub fn open(
        dir: &Path,
        quarantine_dir: &Path,
        checkpoint: Lsn,
        max_file_bytes: u64,
        apply: impl FnMut(Lsn, &[u8]) -> Result<()>,
    ) -> Result<(Self, WalReplayReport, Lsn)> {
        Self::open_with_io(
            dir,
            quarantine_dir,
            checkpoint,
            max_file_bytes,
            Arc::new(OsWalIo),
            apply,
        )
    }

    /// [`Wal::open`] with the file operations of appends, rotations and fsyncs going through
    /// `io` (fault-injection tests; production passes [`OsWalIo`]). Replay itself reads and
    /// truncates with the real calls.
    pub fn open_with_io(
        dir: &Path,
        quarantine_dir: &Path,
        checkpoint: Lsn,
        max_file_bytes: u64,
        io: Arc<dyn WalIo>,
        mut apply: impl FnMut(Lsn, &[u8]) -> Result<()>,
    ) -> Result<(Self, WalReplayReport, Lsn)> {
        fsutil::create_private_dir_all(dir)?;
        let mut report = WalReplayReport::default();
        let files = list_files(dir)?;
        let mut last = checkpoint;
        let mut damaged_at: Option<usize> = None;
        for (idx, (_, path)) in files.iter().enumerate() {
            report.files += 1;
            let mut buf = Vec::new();
            File::open(path)
                .and_then(|mut f| f.read_to_end(&mut buf))
                .at(path)?;
            if buf.len() < frame::FILE_MAGIC.len() || &buf[..8] != frame::FILE_MAGIC {
                // A file cut before its header was fully written holds no records; anything else
                // without our magic is not ours to interpret.
                report
                    .problems
                    .push(format!("{}: missing WAL header", path.display()));
                report.truncated_bytes += buf.len() as u64;
                fsutil::rewrite_file(path, frame::FILE_MAGIC)?;
                if idx + 1 < files.len() {
                    damaged_at = Some(idx + 1);
                    break;
                }
                continue;
            }
            // Records at or below the checkpoint are skipped, but their order is still checked.
            let decoded = frame::decode(&buf[8..], Lsn(0));
            for (lsn, payload) in &decoded.records {
                if *lsn <= last {
                    continue;
                }
                apply(*lsn, payload)?;
                report.records_replayed += 1;
                last = *lsn;
            }
            if let Some(stop) = decoded.stop {
                let cut = 8 + decoded.valid_len;
                report.truncated_bytes += (buf.len() - cut) as u64;
                report.problems.push(format!(
                    "{}: {:?} at byte {cut}, truncated {} bytes",
                    path.display(),
                    stop,
                    buf.len() - cut
                ));
                let f = OpenOptions::new().write(true).open(path).at(path)?;
                f.set_len(cut as u64).at(path)?;
                f.sync_all().at(path)?;
                if idx + 1 < files.len() {
                    damaged_at = Some(idx + 1);
                    break;
                }
            }
        }
        if let Some(from) = damaged_at {
            fsutil::create_private_dir_all(quarantine_dir)?;
            for (_, path) in &files[from..] {
                let name = path.file_name().map(|n| n.to_owned()).unwrap_or_default();
                let target = quarantine_dir.join(format!("wal-{}", name.to_string_lossy()));
                fs::rename(path, &target).at(path)?;
                report.quarantined_files.push(target);
            }
            fsutil::sync_dir(dir)?;
        }
        if !report.problems.is_empty() {
            tracing::warn!(?report, "WAL replay found damage");
        }
        let next = Lsn(last.0 + 1);
        let current = create_file(io.as_ref(), dir, next).map_err(|e| e.error)?;
        let wal = Self {
            dir: dir.to_owned(),
            quarantine_dir: quarantine_dir.to_owned(),
            max_file_bytes,
            current: Mutex::new(current),
            sync: Mutex::new(SyncState {
                written: last,
                synced: last,
                ..SyncState::default()
            }),
            synced_cv: Condvar::new(),
            stats: Mutex::new(WalStats::default()),
            io,
        };
        Ok((wal, report, last))
    }

    fn check_poisoned(&self) -> Result<()> {
        if let Some(p) = &self.sync.lock().poisoned {
            return Err(StorageError::Poisoned(p.clone()));
        }
        Ok(())
    }

    /// Writes one record. The caller serialises calls and passes strictly increasing LSNs.
    /// Returns once the bytes are in the OS; call [`Wal::wait_durable`] for durability.
    ///
    /// A failed write is cut off again before this returns its error, so the next append lands
    /// exactly where this one would have; if it cannot be cut off the log is poisoned.
    pub fn append(&self, lsn: Lsn, payload: &[u8]) -> Result<()> {
        self.check_poisoned()?;
        debug_assert!(
            lsn > self.sync.lock().written,
            "WAL LSNs increase strictly: {lsn:?} after {:?}",
            self.sync.lock().written
        );
        if payload.len() > frame::MAX_PAYLOAD_LEN {
            return Err(StorageError::InvalidInput(format!(
                "batch of {} bytes exceeds the WAL record limit of {} bytes",
                payload.len(),
                frame::MAX_PAYLOAD_LEN
            )));
        }
        let mut buf = Vec::with_capacity(frame::HEADER_LEN + payload.len());
        frame::encode(lsn, payload, &mut buf);
        let mut cur = self.current.lock();
        // Checked again under `current`: a poisoning that raced the check above must not let
        // this record through.
        self.check_poisoned()?;
        if cur.bytes > frame::FILE_MAGIC.len() as u64
            && cur.bytes + buf.len() as u64 > self.max_file_bytes
        {
            self.rotate_locked(&mut cur, lsn)?;
        }
        let before = cur.bytes;
        if let Err(e) = self.io.write_all_at(&cur.file, &buf, before) {
            // Cut off whatever part of the record reached the file so that later records are
            // not hidden behind a torn one; if even that fails, refuse further writes: replay
            // would stop at the torn record and lose everything acknowledged after it.
            if let Err(undo) = self.io.set_len(&cur.file, before) {
                self.poison(format!(
                    "WAL write to {} failed ({e}) and could not be cut back to byte {before}: {undo}",
                    cur.path.display()
                ));
            }
            return Err(StorageError::io(&cur.path, e));
        }
        cur.bytes += buf.len() as u64;
        drop(cur);
        self.stats.lock().bytes_written += buf.len() as u64;
        let mut s = self.sync.lock();
        if lsn > s.written {
            s.written = lsn;
        }
        Ok(())
    }

    fn poison(&self, why: String) {
        tracing::error!(%why, "WAL poisoned");
        let mut s = self.sync.lock();
        s.poisoned.get_or_insert(why);
        self.synced_cv.notify_all();
    }

    /// Blocks until the record with `lsn` (and everything before it) is on stable storage.
    pub fn wait_durable(&self, lsn: Lsn) -> Result<()> {
        let mut s = self.sync.lock();
        loop {
            if let Some(p) = &s.poisoned {
                return Err(StorageError::Poisoned(p.clone()));
            }
            if s.synced >= lsn {
                return Ok(());
            }
            if s.syncing {
                self.synced_cv.wait(&mut s);
                continue;
            }
            s.syncing = true;
            drop(s);
            let result = self.sync_current();
            s = self.sync.lock();
            s.syncing = false;
            match result {
                Ok(target) => {
                    if target > s.synced {
                        s.synced = target;
                    }
                }
                Err(e) => {
                    s.poisoned.get_or_insert(format!("WAL fsync failed: {e}"));
                }
            }
            self.synced_cv.notify_all();
        }
    }

    /// fsyncs the current file; returns the LSN up to which the log is now durable.
    fn sync_current(&self) -> Result<Lsn> {
        let (file, path, target) = {
            let cur = self.current.lock();
            // Read `written` while holding `current`: every LSN up to it is in this file or in an
            // older one, and older ones were synced when they were rotated out.
            let target = self.sync.lock().written;
            (cur.file.clone(), cur.path.clone(), target)
        };
        let t = Instant::now();
        self.io.sync_data(&file).at(&path)?;
        let micros = t.elapsed().as_micros() as u64;
        let mut st = self.stats.lock();
        st.fsyncs += 1;
        st.fsync_micros_total += micros;
        st.fsync_micros_max = st.fsync_micros_max.max(micros);
        Ok(target)
    }

    /// Makes everything written so far durable (used by the interval policy and on close).
    pub fn sync_now(&self) -> Result<()> {
        let target = self.sync.lock().written;
        self.wait_durable(target)
    }

    fn rotate_locked(&self, cur: &mut Current, next: Lsn) -> Result<()> {
        if let Err(e) = self.io.sync_data(&cur.file) {
            self.poison(format!("WAL fsync at rotation failed: {e}"));
            return Err(StorageError::io(&cur.path, e));
        }
        {
            // Everything written before `next` lives in the file just synced.
            let mut s = self.sync.lock();
            let done = Lsn(next.0.saturating_sub(1));
            if done > s.synced {
                s.synced = done;
            }
            self.synced_cv.notify_all();
        }
        match create_file(self.io.as_ref(), &self.dir, next) {
            Ok(new) => {
                *cur = new;
                Ok(())
            }
            Err(CreateFailed { error, leftover }) => {
                if let Some(why) = leftover {
                    self.poison(why);
                }
                Err(error)
            }
        }
    }

    /// Starts a new file whose first record will be `next`. Called when memtables are frozen for
    /// a flush, so that the frozen data's records end in older files that can be deleted whole.
    pub fn rotate(&self, next: Lsn) -> Result<()> {
        self.check_poisoned()?;
        let mut cur = self.current.lock();
        if cur.bytes == frame::FILE_MAGIC.len() as u64 {
            return Ok(());
        }
        self.rotate_locked(&mut cur, next)
    }

    /// Deletes files all of whose records are at or below `checkpoint`. Returns how many.
    pub fn remove_through(&self, checkpoint: Lsn) -> Result<usize> {
        let current_first = self.current.lock().first_lsn;
        let files = list_files(&self.dir)?;
        let mut removed = 0;
        for (i, (first, path)) in files.iter().enumerate() {
            if *first >= current_first {
                break;
            }
            // A file's records end just before the next file's first LSN.
            let next_first = files.get(i + 1).map(|f| f.0).unwrap_or(current_first);
            if next_first.0.saturating_sub(1) <= checkpoint.0 {
                fs::remove_file(path).at(path)?;
                removed += 1;
            }
        }
        if removed > 0 {
            fsutil::sync_dir(&self.dir)?;
        }
        Ok(removed)
    }

    /// Monitoring counters.
    pub fn stats(&self) -> WalStats {
        self.stats.lock().clone()
    }

    /// Where damaged WAL files are moved.
    pub fn quarantine_dir(&self) -> &Path {
        &self.quarantine_dir
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(dir: &Path, checkpoint: Lsn) -> (Wal, Vec<(Lsn, Vec<u8>)>, WalReplayReport) {
        let mut got = Vec::new();
        let (wal, report, _) = Wal::open(
            &dir.join("wal"),
            &dir.join("quarantine"),
            checkpoint,
            1 << 20,
            |lsn, p| {
                got.push((lsn, p.to_vec()));
                Ok(())
            },
        )
        .expect("open");
        (wal, got, report)
    }

    #[test]
    fn replays_after_checkpoint_and_truncates_torn_tail() {
        let dir = tempfile::tempdir().expect("tempdir");
        {
            let (wal, got, _) = open(dir.path(), Lsn(0));
            assert!(got.is_empty());
            for i in 1..=5u64 {
                wal.append(Lsn(i), format!("rec{i}").as_bytes())
                    .expect("append");
            }
            wal.wait_durable(Lsn(5)).expect("durable");
        }
        // Tear the last record.
        let files = list_files(&dir.path().join("wal")).expect("list");
        let (_, path) = &files[0];
        let len = fs::metadata(path).expect("meta").len();
        OpenOptions::new()
            .write(true)
            .open(path)
            .expect("open")
            .set_len(len - 2)
            .expect("truncate");
        let (wal, got, report) = open(dir.path(), Lsn(2));
        assert_eq!(got.iter().map(|(l, _)| l.0).collect::<Vec<_>>(), vec![3, 4]);
        assert_eq!(got[0].1, b"rec3");
        assert_eq!(report.problems.len(), 1);
        assert!(report.truncated_bytes > 0);
        // New appends continue after the last good record and replay cleanly.
        wal.append(Lsn(5), b"again").expect("append");
        wal.wait_durable(Lsn(5)).expect("durable");
        drop(wal);
        let (_, got, report) = open(dir.path(), Lsn(0));
        assert_eq!(got.len(), 5);
        assert_eq!(got[4].1, b"again");
        assert!(report.problems.is_empty());
    }

    #[test]
    fn rotation_and_checkpoint_removal() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (wal, _, _) = open(dir.path(), Lsn(0));
        wal.append(Lsn(1), b"a").expect("append");
        wal.rotate(Lsn(2)).expect("rotate");
        wal.append(Lsn(2), b"b").expect("append");
        wal.rotate(Lsn(3)).expect("rotate");
        wal.append(Lsn(3), b"c").expect("append");
        wal.wait_durable(Lsn(3)).expect("durable");
        assert_eq!(wal.remove_through(Lsn(1)).expect("remove"), 1);
        assert_eq!(wal.remove_through(Lsn(2)).expect("remove"), 1);
        drop(wal);
        let (_, got, _) = open(dir.path(), Lsn(2));
        assert_eq!(got, vec![(Lsn(3), b"c".to_vec())]);
    }

    #[test]
    fn concurrent_writers_share_fsyncs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (wal, _, _) = open(dir.path(), Lsn(0));
        let wal = Arc::new(wal);
        let next = Arc::new(Mutex::new(0u64));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let wal = wal.clone();
                let next = next.clone();
                std::thread::spawn(move || {
                    for _ in 0..50 {
                        let lsn = {
                            let mut n = next.lock();
                            *n += 1;
                            let lsn = Lsn(*n);
                            wal.append(lsn, &[7u8; 100]).expect("append");
                            lsn
                        };
                        wal.wait_durable(lsn).expect("durable");
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("join");
        }
        let stats = wal.stats();
        assert!(stats.fsyncs >= 1 && stats.fsyncs <= 400, "{stats:?}");
        drop(wal);
        let (_, got, _) = open(dir.path(), Lsn(0));
        assert_eq!(got.len(), 400);
    }
}
