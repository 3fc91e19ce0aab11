//! Row selection and reordering ("take") for batches with nested columns.
//!
//! Arrow's `take` copies a list or map whose child is not a fixed-width primitive one row at a
//! time through `MutableArrayData`, which for our attribute maps (a struct of six typed value
//! columns per entry) made sorting a span memtable before a flush cost about half the flush
//! (perf, 16-connection OTLP load). Here a list or map is taken by expanding the selected rows
//! into child indices and taking the child columns with Arrow's vectorized kernels, recursively,
//! so every leaf column is copied in one pass.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, ListArray, MapArray, RecordBatch, StructArray, UInt32Array};
use arrow_buffer::{BooleanBuffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::DataType;

use crate::error::{Result, StorageError};

/// `batch`'s rows at `indices` (in that order), every column taken.
pub fn take_batch(batch: &RecordBatch, indices: &UInt32Array) -> Result<RecordBatch> {
    if let Some(&max) = indices.values().iter().max()
        && max as usize >= batch.num_rows()
    {
        return Err(StorageError::InvalidInput(format!(
            "take index {max} out of bounds for {} rows",
            batch.num_rows()
        )));
    }
    let columns = batch
        .columns()
        .iter()
        .map(|c| take_array(c, indices))
        .collect::<Result<Vec<_>>>()?;
    Ok(RecordBatch::try_new(batch.schema(), columns)?)
}

/// One array's values at `indices` (all in bounds: checked by [`take_batch`], and child
/// indices come from the array's own offsets).
fn take_array(array: &ArrayRef, indices: &UInt32Array) -> Result<ArrayRef> {
    match array.data_type() {
        DataType::Map(field, ordered) => {
            let map = array.as_map();
            let (offsets, child) = child_indices(map.value_offsets(), map.nulls(), indices)?;
            let entries: ArrayRef = Arc::new(map.entries().clone());
            let entries = take_array(&entries, &child)?;
            Ok(Arc::new(MapArray::try_new(
                field.clone(),
                offsets,
                entries.as_struct().clone(),
                take_nulls(map.nulls(), indices),
                *ordered,
            )?))
        }
        DataType::List(field) => {
            let list = array.as_list::<i32>();
            let (offsets, child) = child_indices(list.value_offsets(), list.nulls(), indices)?;
            let values = take_array(list.values(), &child)?;
            Ok(Arc::new(ListArray::try_new(
                field.clone(),
                offsets,
                values,
                take_nulls(list.nulls(), indices),
            )?))
        }
        DataType::Struct(fields) => {
            let s = array.as_struct();
            let columns = s
                .columns()
                .iter()
                .map(|c| take_array(c, indices))
                .collect::<Result<Vec<_>>>()?;
            Ok(Arc::new(StructArray::try_new(
                fields.clone(),
                columns,
                take_nulls(s.nulls(), indices),
            )?))
        }
        _ => Ok(arrow_select::take::take(array, indices, None)?),
    }
}

/// The validity of the selected rows.
fn take_nulls(nulls: Option<&NullBuffer>, indices: &UInt32Array) -> Option<NullBuffer> {
    let nulls = nulls.filter(|n| n.null_count() > 0)?;
    let bits =
        BooleanBuffer::collect_bool(indices.len(), |i| nulls.is_valid(indices.value(i) as usize));
    Some(NullBuffer::new(bits))
}

/// For the selected rows of a list-like array: the new offsets and the child rows, in order.
/// Null rows select no child rows.
fn child_indices(
    offsets: &[i32],
    nulls: Option<&NullBuffer>,
    indices: &UInt32Array,
) -> Result<(OffsetBuffer<i32>, UInt32Array)> {
    let mut out_offsets = Vec::with_capacity(indices.len() + 1);
    out_offsets.push(0i32);
    let mut child: Vec<u32> = Vec::new();
    for &row in indices.values() {
        let row = row as usize;
        if row + 1 >= offsets.len() {
            return Err(StorageError::InvalidInput(format!(
                "take index {row} out of bounds for {} rows",
                offsets.len().saturating_sub(1)
            )));
        }
        if nulls.is_none_or(|n| n.is_valid(row)) {
            let (start, end) = (offsets[row], offsets[row + 1]);
            // Offsets of a valid array are non-negative and ascending.
            child.extend(start as u32..end as u32);
        }
        let len = i32::try_from(child.len()).map_err(|_| {
            StorageError::InvalidInput("list child longer than i32 offsets allow".into())
        })?;
        out_offsets.push(len);
    }
    Ok((
        OffsetBuffer::new(ScalarBuffer::from(out_offsets)),
        UInt32Array::from(child),
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::columnar::{spans_from_batch, spans_to_batch};
    use crate::model::{AttrValue, SpanEvent, SpanRecord};
    use crate::types::{SpanId, TraceId, UnixNanos};

    fn span(i: u8, attrs: usize) -> SpanRecord {
        let start = UnixNanos(1_700_000_000_000_000_000 + i64::from(i));
        let mut s = SpanRecord::new(
            TraceId([i.wrapping_add(1); 16]),
            SpanId([i.wrapping_add(1); 8]),
            "svc",
            format!("span {i}"),
            start,
            UnixNanos(start.0 + 100),
        );
        for a in 0..attrs {
            s.attributes.push((
                format!("k{a}"),
                match a % 3 {
                    0 => AttrValue::Str(format!("v{i}-{a}")),
                    1 => AttrValue::Int(i64::from(i) * 10 + a as i64),
                    _ => AttrValue::Array(vec![AttrValue::Bool(true), AttrValue::Double(0.5)]),
                },
            ));
        }
        if i.is_multiple_of(2) {
            s.events.push(SpanEvent {
                time: UnixNanos(start.0 + 5),
                name: "e".into(),
                attributes: vec![("x".into(), AttrValue::Str(format!("{i}")))],
            });
        }
        s
    }

    #[test]
    fn nested_take_equals_arrow_take_and_round_trips() {
        let spans: Vec<SpanRecord> = (0..40u8).map(|i| span(i, (i % 5) as usize)).collect();
        let batch = spans_to_batch(&spans).unwrap();
        // A permutation with repeats, and a slice of the batch (non-zero offsets).
        let idx = UInt32Array::from(vec![39u32, 0, 7, 7, 12, 3, 38, 1, 20, 20, 19]);
        let ours = take_batch(&batch, &idx).unwrap();
        let arrows = arrow_select::take::take_record_batch(&batch, &idx).unwrap();
        assert_eq!(ours, arrows);
        let got = spans_from_batch(&ours).unwrap();
        let want: Vec<SpanRecord> = idx
            .values()
            .iter()
            .map(|&i| spans[i as usize].clone())
            .collect();
        assert_eq!(got, want);
        let sliced = batch.slice(5, 20);
        let idx = UInt32Array::from(vec![19u32, 0, 4, 10]);
        assert_eq!(
            take_batch(&sliced, &idx).unwrap(),
            arrow_select::take::take_record_batch(&sliced, &idx).unwrap()
        );
        assert!(take_batch(&batch, &UInt32Array::from(vec![40u32])).is_err());
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod timing {
    use super::*;
    use crate::columnar::spans_to_batch;
    use crate::model::{AttrValue, SpanRecord};
    use crate::types::{SpanId, TraceId, UnixNanos};

    #[test]
    #[ignore = "timing, run by hand with --release"]
    fn take_timing() {
        let spans: Vec<SpanRecord> = (0..100_000u32)
            .map(|i| {
                let mut s = SpanRecord::new(
                    TraceId([(i % 251 + 1) as u8; 16]),
                    SpanId([1; 8]),
                    "svc",
                    "chat",
                    UnixNanos(1_700_000_000_000_000_000 + i64::from(i)),
                    UnixNanos(1_700_000_000_000_000_100 + i64::from(i)),
                );
                for a in 0..10 {
                    s.attributes.push((
                        format!("attr.key.{a}"),
                        AttrValue::Str(format!("value {i} {a}")),
                    ));
                }
                s
            })
            .collect();
        let batch = spans_to_batch(&spans).unwrap();
        let mut idx: Vec<u32> = (0..100_000).collect();
        idx.sort_by_key(|&i| (i * 7919) % 100_000);
        let idx = UInt32Array::from(idx);
        for _ in 0..3 {
            let t = std::time::Instant::now();
            let a = arrow_select::take::take_record_batch(&batch, &idx).unwrap();
            let ta = t.elapsed();
            let t = std::time::Instant::now();
            let b = take_batch(&batch, &idx).unwrap();
            let tb = t.elapsed();
            assert_eq!(a, b);
            eprintln!("arrow take {ta:?}, nested take {tb:?}");
            for (f, c) in batch.schema().fields().iter().zip(batch.columns()) {
                let t = std::time::Instant::now();
                take_array(c, &idx).unwrap();
                let e = t.elapsed();
                if e > std::time::Duration::from_millis(5) {
                    eprintln!("  {} {e:?}", f.name());
                }
            }
        }
    }
}
