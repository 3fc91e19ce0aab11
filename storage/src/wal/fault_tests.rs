//! The WAL under injected disk faults: short writes, `ENOSPC` and `EIO` on write, on the
//! truncate that undoes a failed write, and on fsync; with and without a crash that drops
//! everything not yet fsynced.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Arc;

use parking_lot::Mutex;
use proptest::prelude::*;

use super::io::{OsWalIo, WalIo};
use super::{Wal, frame, list_files};
use crate::error::StorageError;
use crate::types::Lsn;

const ENOSPC: i32 = 28;
const EIO: i32 = 5;

/// How the next write fails: `keep_permille` of the buffer reaches the file (always less than
/// all of it), then the call returns the OS error `errno`.
#[derive(Clone, Copy, Debug)]
pub(super) struct WriteFault {
    pub keep_permille: u16,
    pub errno: i32,
}

#[derive(Debug, Default)]
struct Armed {
    write: Option<WriteFault>,
    set_len_fails: bool,
    sync_fails: bool,
    /// Bytes of each file (by device and inode) known to be on stable storage.
    synced: HashMap<(u64, u64), u64>,
}

/// Real file operations that fail once on cue, and remember what was fsynced so that a crash
/// (losing every unsynced byte) can be simulated.
#[derive(Debug, Default)]
pub(super) struct FaultyIo {
    armed: Mutex<Armed>,
}

fn file_key(file: &File) -> io::Result<((u64, u64), u64)> {
    let m = file.metadata()?;
    Ok(((m.dev(), m.ino()), m.len()))
}

impl FaultyIo {
    /// The next write fails as described.
    pub fn fail_next_write(&self, fault: WriteFault) {
        self.armed.lock().write = Some(fault);
    }

    /// The next truncate fails with `EIO` and changes nothing.
    pub fn fail_next_set_len(&self) {
        self.armed.lock().set_len_fails = true;
    }

    /// The next fsync fails with `EIO` (the data stays in the file, as dirty pages would).
    pub fn fail_next_sync(&self) {
        self.armed.lock().sync_fails = true;
    }

    /// Disarms every pending fault.
    pub fn disarm(&self) {
        let mut a = self.armed.lock();
        a.write = None;
        a.set_len_fails = false;
        a.sync_fails = false;
    }

    /// Cuts every WAL file in `dir` back to what was last fsynced: the power went out.
    pub fn crash(&self, dir: &Path) {
        let synced = self.armed.lock().synced.clone();
        for (_, path) in list_files(dir).expect("list") {
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(&path)
                .expect("open");
            let (key, len) = file_key(&f).expect("metadata");
            let keep = synced.get(&key).copied().unwrap_or(0).min(len);
            f.set_len(keep).expect("cut");
        }
    }
}

impl WalIo for FaultyIo {
    fn write_all_at(&self, file: &File, buf: &[u8], offset: u64) -> io::Result<()> {
        let fault = self.armed.lock().write.take();
        match fault {
            None => OsWalIo.write_all_at(file, buf, offset),
            Some(f) => {
                let keep = (buf.len() * usize::from(f.keep_permille) / 1000)
                    .min(buf.len().saturating_sub(1));
                OsWalIo.write_all_at(file, &buf[..keep], offset)?;
                Err(io::Error::from_raw_os_error(f.errno))
            }
        }
    }

    fn set_len(&self, file: &File, len: u64) -> io::Result<()> {
        if std::mem::take(&mut self.armed.lock().set_len_fails) {
            return Err(io::Error::from_raw_os_error(EIO));
        }
        OsWalIo.set_len(file, len)
    }

    fn sync_data(&self, file: &File) -> io::Result<()> {
        if std::mem::take(&mut self.armed.lock().sync_fails) {
            return Err(io::Error::from_raw_os_error(EIO));
        }
        OsWalIo.sync_data(file)?;
        let (key, len) = file_key(file)?;
        self.armed.lock().synced.insert(key, len);
        Ok(())
    }
}

fn open_with(dir: &Path, io: Arc<dyn WalIo>, max_file_bytes: u64) -> (Wal, Vec<(Lsn, Vec<u8>)>) {
    let mut got = Vec::new();
    let (wal, _, _) = Wal::open_with_io(
        &dir.join("wal"),
        &dir.join("quarantine"),
        Lsn(0),
        max_file_bytes,
        io,
        |lsn, p| {
            got.push((lsn, p.to_vec()));
            Ok(())
        },
    )
    .expect("open");
    (wal, got)
}

fn payload(attempt: usize, len: usize) -> Vec<u8> {
    let mut p = format!("attempt-{attempt}:").into_bytes();
    p.extend((0..len).map(|i| (i * 31 + attempt) as u8));
    p
}

#[test]
fn short_write_on_a_full_disk_leaves_no_hole_before_later_records() {
    let dir = tempfile::tempdir().expect("tempdir");
    let io = Arc::new(FaultyIo::default());
    let (wal, _) = open_with(dir.path(), io.clone(), 1 << 20);
    wal.append(Lsn(1), b"before the disk filled")
        .expect("append");
    wal.wait_durable(Lsn(1)).expect("durable");
    // The disk fills half-way through the next record.
    io.fail_next_write(WriteFault {
        keep_permille: 500,
        errno: ENOSPC,
    });
    let err = wal.append(Lsn(2), &[0xAB; 4000]).expect_err("disk full");
    assert!(
        matches!(&err, StorageError::Io { source, .. } if source.raw_os_error() == Some(ENOSPC)),
        "{err:?}"
    );
    // Space is freed; the store retries under the same LSN and goes on.
    let mut expected = vec![(Lsn(1), b"before the disk filled".to_vec())];
    for i in 0..100u64 {
        let lsn = Lsn(2 + i);
        let p = payload(i as usize, 50);
        wal.append(lsn, &p).expect("append");
        wal.wait_durable(lsn).expect("durable");
        expected.push((lsn, p));
    }
    drop(wal);
    // The file holds exactly the acknowledged records, back to back.
    let files = list_files(&dir.path().join("wal")).expect("list");
    assert_eq!(files.len(), 1);
    let len = std::fs::metadata(&files[0].1).expect("meta").len() as usize;
    let want: usize = frame::FILE_MAGIC.len()
        + expected
            .iter()
            .map(|(_, p)| frame::HEADER_LEN + p.len())
            .sum::<usize>();
    assert_eq!(len, want);
    io.crash(&dir.path().join("wal"));
    let (_, got) = open_with(dir.path(), Arc::new(OsWalIo), 1 << 20);
    assert_eq!(got.len(), 101);
    assert_eq!(got, expected);
}

#[test]
fn a_failed_undo_poisons_and_replay_drops_the_torn_record() {
    let dir = tempfile::tempdir().expect("tempdir");
    let io = Arc::new(FaultyIo::default());
    let (wal, _) = open_with(dir.path(), io.clone(), 1 << 20);
    wal.append(Lsn(1), b"one").expect("append");
    wal.wait_durable(Lsn(1)).expect("durable");
    io.fail_next_write(WriteFault {
        keep_permille: 900,
        errno: EIO,
    });
    io.fail_next_set_len();
    assert!(matches!(
        wal.append(Lsn(2), b"torn record"),
        Err(StorageError::Io { .. })
    ));
    assert!(matches!(
        wal.append(Lsn(2), b"two"),
        Err(StorageError::Poisoned(_))
    ));
    assert!(matches!(
        wal.wait_durable(Lsn(1)),
        Err(StorageError::Poisoned(_))
    ));
    drop(wal);
    let (_, got) = open_with(dir.path(), Arc::new(OsWalIo), 1 << 20);
    assert_eq!(got, vec![(Lsn(1), b"one".to_vec())]);
}

#[test]
fn a_failed_fsync_poisons() {
    let dir = tempfile::tempdir().expect("tempdir");
    let io = Arc::new(FaultyIo::default());
    let (wal, _) = open_with(dir.path(), io.clone(), 1 << 20);
    wal.append(Lsn(1), b"one").expect("append");
    io.fail_next_sync();
    assert!(matches!(
        wal.wait_durable(Lsn(1)),
        Err(StorageError::Poisoned(_))
    ));
    assert!(matches!(
        wal.append(Lsn(2), b"two"),
        Err(StorageError::Poisoned(_))
    ));
    assert!(matches!(wal.rotate(Lsn(2)), Err(StorageError::Poisoned(_))));
}

#[test]
fn a_new_file_that_failed_is_removed_and_appends_go_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let io = Arc::new(FaultyIo::default());
    // Small files: the third record needs a new one.
    let (wal, _) = open_with(dir.path(), io.clone(), 120);
    wal.append(Lsn(1), &[1; 30]).expect("append");
    wal.append(Lsn(2), &[2; 30]).expect("append");
    // The header of the new file does not fit on the disk.
    io.fail_next_write(WriteFault {
        keep_permille: 400,
        errno: ENOSPC,
    });
    assert!(wal.append(Lsn(3), &[3; 30]).is_err());
    let names = |d: &Path| -> Vec<Lsn> {
        list_files(&d.join("wal"))
            .expect("list")
            .into_iter()
            .map(|(l, _)| l)
            .collect()
    };
    assert_eq!(names(dir.path()), vec![Lsn(1)]);
    // A smaller record still fits in the old file; later ones start a new file.
    wal.append(Lsn(3), &[3; 4]).expect("append");
    wal.append(Lsn(4), &[4; 30]).expect("append");
    wal.wait_durable(Lsn(4)).expect("durable");
    assert_eq!(names(dir.path()), vec![Lsn(1), Lsn(4)]);
    drop(wal);
    let (_, got) = open_with(dir.path(), Arc::new(OsWalIo), 120);
    let lsns: Vec<u64> = got.iter().map(|(l, _)| l.0).collect();
    assert_eq!(lsns, vec![1, 2, 3, 4]);
    assert_eq!(got[2].1, vec![3; 4]);
}

/// One step of the randomized run: append a record of `len` bytes with an optional fault armed.
#[derive(Clone, Debug)]
enum Fault {
    None,
    Write(WriteFault),
    WriteAndUndo(WriteFault),
    Sync,
}

fn fault() -> impl Strategy<Value = Fault> {
    let write =
        (0u16..1000, prop_oneof![Just(ENOSPC), Just(EIO)]).prop_map(|(keep_permille, errno)| {
            WriteFault {
                keep_permille,
                errno,
            }
        });
    prop_oneof![
        12 => Just(Fault::None),
        4 => write.clone().prop_map(Fault::Write),
        1 => write.prop_map(Fault::WriteAndUndo),
        1 => Just(Fault::Sync),
    ]
}

#[derive(Debug, PartialEq)]
enum Outcome {
    AppendFailed,
    NotDurable,
    Acknowledged,
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Whatever the faults: every acknowledged record replays, in order, byte for byte; no
    /// record whose append failed does; after a poisoning nothing more is acknowledged. Without
    /// a poisoning, every appended record survives a restart.
    #[test]
    fn acknowledged_records_survive_faults_and_crashes(
        steps in prop::collection::vec((1usize..200, fault()), 1..40),
        max_file_bytes in prop_oneof![Just(300u64), Just(1u64 << 20)],
        crash in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().expect("tempdir");
        let io = Arc::new(FaultyIo::default());
        let (wal, _) = open_with(dir.path(), io.clone(), max_file_bytes);
        let mut next = Lsn(1);
        let mut attempts: Vec<(Lsn, Vec<u8>, Outcome)> = Vec::new();
        let mut poisoned = false;
        for (i, (len, f)) in steps.iter().enumerate() {
            match f {
                Fault::None => {}
                Fault::Write(w) => io.fail_next_write(*w),
                Fault::WriteAndUndo(w) => {
                    io.fail_next_write(*w);
                    io.fail_next_set_len();
                }
                Fault::Sync => io.fail_next_sync(),
            }
            let p = payload(i, *len);
            let used = next;
            let outcome = match wal.append(used, &p) {
                Err(e) => {
                    if poisoned {
                        prop_assert!(matches!(e, StorageError::Poisoned(_)), "{e:?}");
                    }
                    Outcome::AppendFailed
                }
                Ok(()) => {
                    prop_assert!(!poisoned, "append accepted after poisoning");
                    next = Lsn(used.0 + 1);
                    match wal.wait_durable(used) {
                        Ok(()) => Outcome::Acknowledged,
                        Err(_) => Outcome::NotDurable,
                    }
                }
            };
            io.disarm();
            if wal.check_poisoned().is_err() {
                poisoned = true;
            }
            attempts.push((used, p, outcome));
        }
        drop(wal);
        if crash {
            io.crash(&dir.path().join("wal"));
        }
        let (wal, got) = open_with(dir.path(), Arc::new(OsWalIo), max_file_bytes);
        let mut appended = Vec::new();
        let mut acked = Vec::new();
        for (lsn, p, outcome) in &attempts {
            match outcome {
                Outcome::AppendFailed => {
                    prop_assert!(!got.iter().any(|(_, g)| g == p), "failed append replayed");
                }
                Outcome::NotDurable | Outcome::Acknowledged => {
                    appended.push((*lsn, p.clone()));
                    if *outcome == Outcome::Acknowledged {
                        acked.push((*lsn, p.clone()));
                    }
                }
            }
        }
        // Replayed: a subsequence of the appended records (in order, exact bytes) that holds
        // every acknowledged one.
        let mut it = appended.iter();
        for g in &got {
            prop_assert!(it.any(|a| a == g), "replayed {:?} was never appended", g.0);
        }
        for a in &acked {
            prop_assert!(got.contains(a), "acknowledged record {:?} lost", a.0);
        }
        if !poisoned && !crash {
            prop_assert_eq!(&got, &appended);
        }
        // The log goes on after replay.
        let last = got.last().map_or(Lsn(0), |(l, _)| *l);
        wal.append(Lsn(last.0 + 1), b"after restart").expect("append");
        wal.wait_durable(Lsn(last.0 + 1)).expect("durable");
        drop(wal);
        let (_, again) = open_with(dir.path(), Arc::new(OsWalIo), max_file_bytes);
        prop_assert_eq!(again.len(), got.len() + 1);
        prop_assert_eq!(&again[..got.len()], &got[..]);
    }
}
