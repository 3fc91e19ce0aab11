//! Small filesystem helpers with the durability steps spelled out, and the one place that
//! decides who may read what the store writes: every file it creates is [`FILE_MODE`] (owner
//! only) and every directory [`DIR_MODE`], whatever the process umask allows.

use std::fs::{self, DirBuilder, File, OpenOptions, Permissions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use crate::error::{IoContext, Result};

/// Permission bits of every file the store creates: readable and writable by its owner only.
pub const FILE_MODE: u32 = 0o600;

/// Permission bits of every directory the store creates: usable by its owner only.
pub const DIR_MODE: u32 = 0o700;

/// Opens `path` for writing with `options` (creating it [`FILE_MODE`]); a file that already
/// existed is brought down to [`FILE_MODE`] too.
fn open_private(path: &Path, options: &mut OpenOptions) -> Result<File> {
    let file = options.write(true).mode(FILE_MODE).open(path).at(path)?;
    file.set_permissions(Permissions::from_mode(FILE_MODE))
        .at(path)?;
    Ok(file)
}

/// Creates (or truncates) `path` for writing, owner-only ([`FILE_MODE`]).
pub fn create_private_file(path: &Path) -> Result<File> {
    open_private(path, OpenOptions::new().create(true).truncate(true))
}

/// Opens `path` for writing without truncating it, creating it owner-only if missing (the
/// directory lock).
pub fn open_private_file(path: &Path) -> Result<File> {
    open_private(path, OpenOptions::new().create(true).truncate(false))
}

/// Writes `bytes` to a new (or truncated) owner-only file; not synced.
pub fn write_private_file(path: &Path, bytes: &[u8]) -> Result<()> {
    create_private_file(path)?.write_all(bytes).at(path)
}

/// Creates `dir` and any missing parents, each one [`DIR_MODE`]; existing ones are left as
/// they are.
pub fn create_private_dir_all(dir: &Path) -> Result<()> {
    DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(dir)
        .at(dir)
}

/// Brings every file below `dir` down to [`FILE_MODE`] and every directory, `dir` included, to
/// [`DIR_MODE`]: for trees that a library wrote with modes of its own choosing (tantivy).
pub fn restrict_tree(dir: &Path) -> Result<()> {
    for entry in fs::read_dir(dir).at(dir)? {
        let entry = entry.at(dir)?;
        let path = entry.path();
        if entry.file_type().at(&path)?.is_dir() {
            restrict_tree(&path)?;
        } else {
            fs::set_permissions(&path, Permissions::from_mode(FILE_MODE)).at(&path)?;
        }
    }
    fs::set_permissions(dir, Permissions::from_mode(DIR_MODE)).at(dir)
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
        let mut f = create_private_file(&tmp)?;
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
