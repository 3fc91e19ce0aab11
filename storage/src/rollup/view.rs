//! Reading the rollup rows a scan returned ([`crate::ScanResult::rollups`]): every consumer
//! that folds them (aggregation plans, RED) reads the weights, the status and the durations
//! through [`RollupView`], so the layout of a scanned rollup batch is known here only.

use arrow_array::{Array, Int64Array, ListArray, RecordBatch, UInt8Array, UInt64Array};

use super::{DURATIONS, ROWS};
use crate::columnar::decode_column as column;
use crate::error::{Result, StorageError};
use crate::model::StatusCode;
use crate::schema::col;

/// One scanned rollup batch, read (see the module docs).
#[derive(Clone, Copy, Debug)]
pub struct RollupView<'a> {
    rows: &'a UInt64Array,
    status: Option<&'a UInt8Array>,
    durations: Option<(&'a [i32], &'a [i64])>,
}

impl<'a> RollupView<'a> {
    /// Reads `batch`: its [`ROWS`], the status code when the scan projected it, and the
    /// duration lists ([`DURATIONS`]) when the scan asked for them
    /// ([`crate::ScanRequest::rollup_durations`]).
    pub fn new(batch: &'a RecordBatch) -> Result<Self> {
        let durations = match batch.column_by_name(DURATIONS) {
            None => None,
            Some(c) => {
                let lists = c.as_any().downcast_ref::<ListArray>().ok_or_else(|| {
                    StorageError::corruption(
                        "<rollup batch>",
                        format!("column {DURATIONS} is not a list"),
                    )
                })?;
                let values = lists
                    .values()
                    .as_any()
                    .downcast_ref::<Int64Array>()
                    .ok_or_else(|| {
                        StorageError::corruption(
                            "<rollup batch>",
                            "rollup durations are not 64-bit integers",
                        )
                    })?;
                Some((lists.value_offsets(), values.values().as_ref()))
            }
        };
        Ok(Self {
            rows: column(batch, ROWS)?,
            status: batch
                .column_by_name(col::STATUS_CODE)
                .and_then(|a| a.as_any().downcast_ref()),
            durations,
        })
    }

    /// Rollup rows in the batch.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether the batch has no rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Spans each row stands for.
    pub fn weights(&self) -> &'a [u64] {
        self.rows.values()
    }

    /// Whether row `i`'s spans have status `ERROR` (false when the status was not projected).
    pub fn is_error(&self, i: usize) -> bool {
        self.status
            .is_some_and(|s| s.value(i) == StatusCode::Error as u8)
    }

    /// Whether the scan returned the duration lists.
    pub fn has_durations(&self) -> bool {
        self.durations.is_some()
    }

    /// The durations (ns, ascending) of row `i`'s spans; empty when the scan did not ask for
    /// them.
    pub fn durations(&self, i: usize) -> &'a [i64] {
        let Some((offsets, values)) = self.durations else {
            return &[];
        };
        match (offsets.get(i), offsets.get(i + 1)) {
            (Some(&lo), Some(&hi)) => values.get(lo as usize..hi as usize).unwrap_or_default(),
            _ => &[],
        }
    }
}
