//! Bytes on disk of a data directory's files, for the benchmarks' size figures.

use std::path::Path;

/// Calls `f` with the path and length of every file under `dir`, recursively.
pub fn walk_files(dir: &Path, f: &mut dyn FnMut(&Path, u64)) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            walk_files(&p, f);
        } else if let Ok(m) = e.metadata() {
            f(&p, m.len());
        }
    }
}

/// Bytes of the files named `name` under `dir`, recursively.
pub fn bytes_named(dir: &Path, name: &str) -> u64 {
    let mut n = 0;
    walk_files(dir, &mut |p, len| {
        if p.file_name().is_some_and(|f| f == name) {
            n += len;
        }
    });
    n
}

/// One signal's segment bytes by role.
#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct SignalBytes {
    /// The rows (`data.parquet`, `meta.json`, `series.parquet`).
    pub data: u64,
    /// Postings, attribute blooms and the text index.
    pub index: u64,
    /// Span rollups and their durations.
    pub rollups: u64,
}

impl SignalBytes {
    /// Everything.
    pub fn total(&self) -> u64 {
        self.data + self.index + self.rollups
    }

    /// The segments of one signal under `dir` (a store's `data/<tenant>/<signal>`).
    pub fn of(dir: &Path) -> Self {
        let mut out = SignalBytes::default();
        walk_files(dir, &mut |p, len| {
            let name = p.file_name().and_then(|f| f.to_str()).unwrap_or("");
            if name == sightline_storage::text_index::TEXT_INDEX_FILE
                || name == "postings.bin"
                || name == "attr_blooms.bin"
            {
                out.index += len;
            } else if name.starts_with("rollup") {
                out.rollups += len;
            } else {
                out.data += len;
            }
        });
        out
    }
}
