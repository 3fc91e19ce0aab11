//! The manifest: the one file that says which segments are live and how far the WAL is
//! persisted in them.
//!
//! It is replaced atomically (temporary file, fsync, rename, fsync directory); the rename is the
//! commit point of flushes, compactions, retention and quarantine. A segment directory that the
//! manifest does not name is garbage from an interrupted operation and is deleted at open.
//!
//! On disk: `magic (8 bytes) | crc32c of the JSON (u32 LE) | JSON`.

use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{IoContext, Result, StorageError};
use crate::fsutil;
use crate::types::{Lsn, SegmentId, Signal, TenantId, UnixNanos, civil_from_days};

/// File name of the manifest inside the data directory.
pub const FILE_NAME: &str = "MANIFEST";
const MAGIC: &[u8; 8] = b"SLMANIF1";
/// Version of the manifest and segment layout described in docs/storage-format.md: 2 added
/// postings keys indexed by `attr_blooms.bin` and rollups that leave keys out, which a
/// version-1 reader would answer wrongly from, so it refuses the store instead; 3 compresses
/// `postings.bin` (`SLPOST02`) and the text index's document store with zstd, which a
/// version-2 reader would take for damage and quarantine; 4 replaces a log segment's tantivy
/// `text/` directory with a token index `text.idx`, without which a version-3 reader would
/// quarantine the segment; 5 writes token indexes as `SLTXT002` (with the rows holding tokens
/// too long to index), which a version-4 reader would take for damage. Stores of versions 1 to
/// 4 are read as they are (their segments keep their formats until compaction rewrites them;
/// log segments without a token index are searched by reading their bodies, and `SLTXT001`
/// token indexes cannot narrow a line filter's literal that may sit inside a longer token).
pub const FORMAT_VERSION: u32 = 5;

/// Length and checksum of one file of a segment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChecksum {
    /// Path relative to the segment directory.
    pub name: String,
    /// Length in bytes.
    pub len: u64,
    /// CRC32C of the whole file.
    pub crc32c: u32,
}

/// Everything the store knows about a segment without opening it. Also written as the
/// segment's own `meta.json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentMeta {
    /// Unique id.
    pub id: SegmentId,
    /// Owning tenant.
    pub tenant: TenantId,
    /// Signal stored.
    pub signal: Signal,
    /// Start of the time partition.
    pub partition_start: UnixNanos,
    /// Length of the time partition in nanoseconds.
    pub partition_nanos: i64,
    /// Smallest row timestamp (ns).
    pub min_time: UnixNanos,
    /// Largest row timestamp (ns).
    pub max_time: UnixNanos,
    /// Row count.
    pub rows: u64,
    /// How many merges produced this segment (0 for a flush).
    pub level: u32,
    /// Bytes its rows take decoded in memory (Arrow), what a merge that reads it holds; 0 for
    /// segments written before it was recorded.
    #[serde(default)]
    pub decoded_bytes: u64,
    /// Checksums of the segment's files (the text index counts as one entry per file).
    pub files: Vec<FileChecksum>,
}

impl SegmentMeta {
    /// The meta of a segment about to be written: what the writer fills in (time bounds, rows,
    /// decoded bytes, file checksums) left empty.
    pub fn to_write(
        id: SegmentId,
        tenant: TenantId,
        signal: Signal,
        partition: (UnixNanos, i64),
        level: u32,
    ) -> Self {
        Self {
            id,
            tenant,
            signal,
            partition_start: partition.0,
            partition_nanos: partition.1,
            min_time: UnixNanos(0),
            max_time: UnixNanos(0),
            rows: 0,
            level,
            decoded_bytes: 0,
            files: Vec::new(),
        }
    }

    /// The segment's directory relative to the data directory.
    pub fn relative_dir(&self) -> PathBuf {
        PathBuf::from("data")
            .join(self.tenant.as_str())
            .join(self.signal.as_str())
            .join(partition_dir_name(self.partition_start))
            .join(self.id.to_string())
    }

    /// Total bytes of the segment's files.
    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|f| f.len).sum()
    }

    /// End of the partition (exclusive).
    pub fn partition_end(&self) -> UnixNanos {
        self.partition_start.saturating_add(self.partition_nanos)
    }
}

/// Directory name of a partition: its UTC start, e.g. `20261129T1400Z`.
pub fn partition_dir_name(start: UnixNanos) -> String {
    let secs = start.0.div_euclid(UnixNanos::PER_SEC);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}{m:02}{d:02}T{:02}{:02}Z",
        rem / 3600,
        (rem % 3600) / 60
    )
}

/// The list of live segments and the WAL checkpoint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// Layout version; a newer one is refused.
    pub format_version: u32,
    /// Incremented by every commit.
    pub generation: u64,
    /// Every WAL record at or below this LSN is persisted in the listed segments.
    pub wal_checkpoint: Lsn,
    /// Next segment id to hand out.
    pub next_segment_id: u64,
    /// Live segments.
    pub segments: Vec<SegmentMeta>,
}

impl Default for Manifest {
    fn default() -> Self {
        Self {
            format_version: FORMAT_VERSION,
            generation: 0,
            wal_checkpoint: Lsn(0),
            next_segment_id: 1,
            segments: Vec::new(),
        }
    }
}

impl Manifest {
    /// Serialises with magic and checksum.
    pub fn encode(&self) -> Result<Vec<u8>> {
        let json = serde_json::to_vec(self)
            .map_err(|e| StorageError::InvalidInput(format!("manifest encode: {e}")))?;
        let mut out = Vec::with_capacity(json.len() + 12);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&crc32c::crc32c(&json).to_le_bytes());
        out.extend_from_slice(&json);
        Ok(out)
    }

    /// Parses and verifies an encoded manifest.
    pub fn decode(bytes: &[u8], path: &Path) -> Result<Self> {
        if bytes.len() < 12 || &bytes[..8] != MAGIC {
            return Err(StorageError::corruption(path, "not a Sightline manifest"));
        }
        let crc = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
        let json = &bytes[12..];
        if crc32c::crc32c(json) != crc {
            return Err(StorageError::corruption(path, "manifest checksum mismatch"));
        }
        let m: Manifest = serde_json::from_slice(json)
            .map_err(|e| StorageError::corruption(path, format!("manifest JSON: {e}")))?;
        if m.format_version > FORMAT_VERSION {
            return Err(StorageError::corruption(
                path,
                format!(
                    "manifest format {} is newer than this build understands ({FORMAT_VERSION})",
                    m.format_version
                ),
            ));
        }
        Ok(m)
    }

    /// Loads the manifest of `dir`, or `None` for a new data directory.
    pub fn load(dir: &Path) -> Result<Option<Self>> {
        let path = dir.join(FILE_NAME);
        match fs::read(&path) {
            Ok(bytes) => Self::decode(&bytes, &path).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(StorageError::io(path, e)),
        }
    }

    /// Writes the manifest atomically into `dir`.
    pub fn store(&self, dir: &Path) -> Result<()> {
        let bytes = self.encode()?;
        fsutil::rewrite_file(&dir.join(FILE_NAME), &bytes)
    }

    /// Allocates a new segment id.
    pub fn allocate_segment_id(&mut self) -> SegmentId {
        let id = SegmentId(self.next_segment_id);
        self.next_segment_id += 1;
        id
    }
}

/// Removes the partition directory tree of a segment if it became empty.
pub(crate) fn remove_segment_dir(root: &Path, meta: &SegmentMeta) -> Result<()> {
    let dir = root.join(meta.relative_dir());
    if dir.exists() {
        fs::remove_dir_all(&dir).at(&dir)?;
    }
    // Best effort: prune now-empty parents up to `data/`.
    let mut parent = dir.parent().map(Path::to_path_buf);
    for _ in 0..3 {
        match parent {
            Some(p) if fs::remove_dir(&p).is_ok() => parent = p.parent().map(Path::to_path_buf),
            _ => break,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn arb_meta() -> impl Strategy<Value = SegmentMeta> {
        (
            any::<u64>(),
            "[a-z0-9_-]{1,12}",
            0usize..3,
            any::<i64>(),
            any::<i64>(),
            any::<u64>(),
            prop::collection::vec(("[a-z./]{1,10}", any::<u64>(), any::<u32>()), 0..4),
        )
            .prop_map(|(id, tenant, sig, a, b, rows, files)| SegmentMeta {
                id: SegmentId(id),
                tenant: TenantId::new(tenant).expect("valid by construction"),
                signal: Signal::ALL[sig],
                partition_start: UnixNanos(a.min(b)),
                partition_nanos: 3_600_000_000_000,
                min_time: UnixNanos(a.min(b)),
                max_time: UnixNanos(a.max(b)),
                rows,
                level: (rows % 4) as u32,
                decoded_bytes: rows.wrapping_mul(100),
                files: files
                    .into_iter()
                    .map(|(name, len, crc32c)| FileChecksum { name, len, crc32c })
                    .collect(),
            })
    }

    proptest! {
        #[test]
        fn round_trip(
            generation in any::<u64>(),
            ckpt in any::<u64>(),
            next in any::<u64>(),
            segments in prop::collection::vec(arb_meta(), 0..6),
        ) {
            let m = Manifest { format_version: FORMAT_VERSION, generation, wal_checkpoint: Lsn(ckpt), next_segment_id: next, segments };
            let bytes = m.encode().expect("encode");
            let back = Manifest::decode(&bytes, Path::new("m")).expect("decode");
            prop_assert_eq!(back, m);
        }

        #[test]
        fn any_flipped_byte_is_detected(at in any::<prop::sample::Index>(), mask in 1u8..=255) {
            let m = Manifest::default();
            let mut bytes = m.encode().expect("encode");
            let i = at.index(bytes.len());
            bytes[i] ^= mask;
            prop_assert!(Manifest::decode(&bytes, Path::new("m")).is_err());
        }
    }

    #[test]
    fn store_and_load() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert_eq!(Manifest::load(dir.path()).expect("load"), None);
        let m = Manifest {
            generation: 3,
            ..Manifest::default()
        };
        m.store(dir.path()).expect("store");
        assert_eq!(Manifest::load(dir.path()).expect("load"), Some(m));
    }

    #[test]
    fn partition_names() {
        assert_eq!(partition_dir_name(UnixNanos(0)), "19700101T0000Z");
        // 2026-11-29T14:00:00Z
        assert_eq!(
            partition_dir_name(UnixNanos::from_secs(1_795_960_800)),
            "20261129T1400Z"
        );
        assert_eq!(
            partition_dir_name(UnixNanos::from_secs(-60)),
            "19691231T2359Z"
        );
    }
}
