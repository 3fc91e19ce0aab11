//! One rollup file of a segment (minute or hourly), read on first use and kept in the
//! process-wide rollup cache while it fits ([`crate::rollup::CACHE_BYTES`]).

use std::path::Path;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use crate::error::{IoContext, Result, StorageError};

/// A rollup file of one segment and its rows once read.
#[derive(Debug)]
pub(crate) struct RollupFile {
    name: &'static str,
    /// The fields the file must have to be read.
    schema: SchemaRef,
    /// Whether the segment has the file.
    present: bool,
    rows: OnceLock<RecordBatch>,
    /// Bytes `rows` holds against the process-wide rollup cache budget.
    cached: AtomicUsize,
}

impl RollupFile {
    pub(crate) fn new(name: &'static str, schema: SchemaRef, present: bool) -> Self {
        Self {
            name,
            schema,
            present,
            rows: OnceLock::new(),
            cached: AtomicUsize::new(0),
        }
    }

    /// The file's rows; `None` when the segment has no such file or one of another schema.
    pub(crate) fn rows(&self, dir: &Path) -> Result<Option<RecordBatch>> {
        if !self.present {
            return Ok(None);
        }
        if let Some(r) = self.rows.get() {
            return Ok(Some(r.clone()));
        }
        let path = dir.join(self.name);
        let corrupt = |e: String| StorageError::corruption(&path, e);
        let file = std::fs::File::open(&path).at(&path)?;
        let builder =
            ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| corrupt(e.to_string()))?;
        // The file's own schema: its metadata names the keys the rollup leaves out.
        let schema = builder.schema().clone();
        if schema.fields() != self.schema.fields() {
            // Rollups are derived data: one written by another build is ignored (the rows
            // answer instead), not treated as damage.
            tracing::warn!(
                path = %path.display(),
                "rollup written with another schema; reading rows instead"
            );
            return Ok(None);
        }
        let batches = builder
            .build()
            .map_err(|e| corrupt(e.to_string()))?
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| corrupt(e.to_string()))?;
        let all = arrow_select::concat::concat_batches(&schema, &batches)
            .map_err(|e| corrupt(e.to_string()))?;
        let bytes = all.get_array_memory_size();
        if crate::rollup::reserve_cache(bytes) {
            if self.rows.set(all.clone()).is_ok() {
                self.cached.store(bytes, Ordering::Release);
            } else {
                // Another reader cached it first.
                crate::rollup::release_cache(bytes);
            }
        }
        Ok(Some(all))
    }

    /// Whether the rows are in the cache.
    #[cfg(test)]
    pub(crate) fn is_cached(&self) -> bool {
        self.rows.get().is_some()
    }
}

impl Drop for RollupFile {
    fn drop(&mut self) {
        crate::rollup::release_cache(*self.cached.get_mut());
    }
}
