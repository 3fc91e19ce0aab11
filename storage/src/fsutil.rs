//! Small filesystem helpers with the durability steps spelled out.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::error::{IoContext, Result};

/// Permission bits of every file the store creates: readable and writable by its owner only.
pub const FILE_MODE: u32 = 0o600;

/// Creates (or truncates) `path` for writing, owner-only ([`FILE_MODE`]).
pub fn create_private_file(path: &Path) -> Result<File> {
    OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .mode(FILE_MODE)
        .open(path)
        .at(path)
}

/// fsyncs a directory so that entries created, renamed or removed in it are durable.
pub fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir).and_then(|d| d.sync_all()).at(dir)
}

/// Replaces `path` atomically with `bytes`: write a temporary file, fsync it, rename it over the
/// target, fsync the directory. A crash leaves either the old or the new content.
pub fn rewrite_file(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension("tmp");
    {
        let mut f = OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .open(&tmp)
            .at(&tmp)?;
        f.write_all(bytes).at(&tmp)?;
        f.sync_all().at(&tmp)?;
    }
    fs::rename(&tmp, path).at(path)?;
    if let Some(parent) = path.parent() {
        sync_dir(parent)?;
    }
    Ok(())
}

/// CRC32C of a whole file.
pub fn file_crc(path: &Path) -> Result<(u32, u64)> {
    let mut f = File::open(path).at(path)?;
    let mut buf = vec![0u8; 1 << 20];
    let mut crc = 0u32;
    let mut len = 0u64;
    loop {
        let n = f.read(&mut buf).at(path)?;
        if n == 0 {
            break;
        }
        crc = crc32c::crc32c_append(crc, &buf[..n]);
        len += n as u64;
    }
    Ok((crc, len))
}

/// fsyncs a file by path.
pub fn sync_file(path: &Path) -> Result<()> {
    File::open(path).and_then(|f| f.sync_all()).at(path)
}

/// fsyncs every file below `dir` and the directories themselves.
pub fn sync_tree(dir: &Path) -> Result<()> {
    for entry in fs::read_dir(dir).at(dir)? {
        let entry = entry.at(dir)?;
        let path = entry.path();
        if entry.file_type().at(&path)?.is_dir() {
            sync_tree(&path)?;
        } else {
            sync_file(&path)?;
        }
    }
    sync_dir(dir)
}
