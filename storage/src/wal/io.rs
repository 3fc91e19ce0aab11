//! The WAL's file operations behind one small seam, so that tests can inject the failures a
//! real disk produces (short writes, `ENOSPC`, `EIO` on write, on truncate and on fsync).
//!
//! The log only ever writes at explicit offsets ([`WalIo::write_all_at`]), so the file
//! position cannot drift away from the log's own idea of where the next record goes: a write
//! that failed half-way and was cut off again with [`WalIo::set_len`] leaves no hole in front of
//! the records that follow it.
//!
//! Production uses [`OsWalIo`], a direct call into `std`. Tests pass their own implementation in
//! [`crate::StoreConfig::wal_io`] (or to [`crate::wal::Wal::open_with_io`]).

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// The file operations the WAL performs on its open files.
///
/// Implementations other than [`OsWalIo`] exist to inject faults; each call must either do
/// what the real call does or fail the way the real call can (for instance write a prefix of
/// `buf` and then return an error).
pub trait WalIo: Send + Sync + std::fmt::Debug {
    /// Writes all of `buf` at byte `offset` of `file` (`pwrite(2)` until done).
    fn write_all_at(&self, file: &File, buf: &[u8], offset: u64) -> io::Result<()>;
    /// Truncates or extends `file` to `len` bytes (`ftruncate(2)`).
    fn set_len(&self, file: &File, len: u64) -> io::Result<()>;
    /// Flushes `file`'s data (and the metadata needed to read it back) to stable storage
    /// (`fdatasync(2)`).
    fn sync_data(&self, file: &File) -> io::Result<()>;
}

/// The real file operations.
#[derive(Clone, Copy, Debug, Default)]
pub struct OsWalIo;

impl WalIo for OsWalIo {
    fn write_all_at(&self, file: &File, buf: &[u8], offset: u64) -> io::Result<()> {
        file.write_all_at(buf, offset)
    }

    fn set_len(&self, file: &File, len: u64) -> io::Result<()> {
        file.set_len(len)
    }

    fn sync_data(&self, file: &File) -> io::Result<()> {
        file.sync_data()
    }
}
