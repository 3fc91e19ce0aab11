//! Writing a segment: sort, encode Parquet, build postings and the text index, checksum, fsync.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fs;
use std::path::Path;
use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, MapArray, RecordBatch, StringArray, TimestampMillisecondArray, UInt32Array,
    UInt64Array,
};
use arrow_ord::sort::{LexicographicalComparator, SortColumn, lexsort_to_indices};
use parquet::arrow::{ArrowSchemaConverter, ArrowWriter};
use parquet::basic::{Compression, Encoding, Type as PhysicalType, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;

use super::{DATA_FILE, META_FILE, POSTINGS_FILE};
use crate::attr_bloom::ATTR_BLOOMS_FILE;
use crate::columnar::{self, AttrReader};
use crate::error::{IoContext, Result, StorageError};
use crate::fsutil;
use crate::manifest::{FileChecksum, SegmentMeta};
use crate::model::{AttrKind, SeriesDef};
use crate::postings::PostingsBuilder;
use crate::predicate::CellRenderer;
use crate::schema::{self, col};
use crate::text_index;
use crate::types::{SeriesId, Signal};

mod samples;

pub(crate) use samples::SampleSegmentWriter;

/// Layout knobs of written segments.
#[derive(Clone, Debug)]
pub struct SegmentWriteOptions {
    /// Rows per row group for spans and logs.
    pub row_group_rows: usize,
    /// Rows per row group for metric samples.
    pub sample_row_group_rows: usize,
    /// Rows per data page of spans and logs (small pages: a trace lookup decodes one page
    /// per column).
    pub page_rows: usize,
    /// Most rows per data page of metric samples. A page holds one series' samples only (a
    /// series' run is cut into pages of at most this many rows, of about equal length), so a
    /// query decodes the pages of the series it selects and, through the page index of the
    /// time column, only those of its time range.
    pub sample_page_rows: usize,
    /// zstd level.
    pub zstd_level: i32,
}

impl Default for SegmentWriteOptions {
    fn default() -> Self {
        Self {
            row_group_rows: 16 * 1024,
            sample_row_group_rows: 1024 * 1024,
            page_rows: 1024,
            sample_page_rows: 2048,
            zstd_level: 3,
        }
    }
}

/// The columns that order a segment's rows, most significant first.
pub(crate) fn sort_key_columns(signal: Signal) -> &'static [&'static str] {
    match signal {
        // By trace: a trace's spans are contiguous, so a lookup by id touches one row group and
        // one page per column (row-group min/max statistics on trace_id find it).
        Signal::Spans => &[col::TRACE_ID, col::START_TIME],
        Signal::Logs => &[col::TIME],
        Signal::Samples => &[col::SERIES_ID, col::TIMESTAMP],
    }
}

fn sort_columns(signal: Signal, batch: &RecordBatch) -> Result<Vec<SortColumn>> {
    let mut cols: Vec<SortColumn> = sort_key_columns(signal)
        .iter()
        .map(|n| {
            batch
                .column_by_name(n)
                .cloned()
                .map(|values| SortColumn {
                    values,
                    options: None,
                })
                .ok_or_else(|| StorageError::InvalidInput(format!("batch lacks column {n}")))
        })
        .collect::<Result<_>>()?;
    // Insertion order breaks ties, which makes the sort stable and lets sample deduplication
    // keep the value written last.
    let order: ArrayRef = Arc::new(UInt32Array::from_iter_values(0..batch.num_rows() as u32));
    cols.push(SortColumn {
        values: order,
        options: None,
    });
    Ok(cols)
}

/// Sorts samples by series and time, keeping the last of rows sharing (series, timestamp).
/// Works on any batch holding the `series_id`, `timestamp` and `value` columns.
#[cfg(test)]
pub(crate) fn sort_samples(batch: &RecordBatch) -> Result<RecordBatch> {
    sort_for_segment(Signal::Samples, batch)
}

/// Sorts rows into segment order; for samples, drops all but the last of rows sharing
/// (series, timestamp).
pub(crate) fn sort_for_segment(signal: Signal, batch: &RecordBatch) -> Result<RecordBatch> {
    columnar::take_batch(batch, &segment_order(signal, batch)?)
}

/// The rows of `keys` in segment order, as indices; for samples, only the last of rows
/// sharing (series, timestamp). `keys` needs only the [`sort_key_columns`].
pub(crate) fn segment_order(signal: Signal, keys: &RecordBatch) -> Result<UInt32Array> {
    if signal != Signal::Samples {
        return Ok(lexsort_to_indices(&sort_columns(signal, keys)?, None)?);
    }
    let series: &UInt64Array = columnar::decode_column(keys, col::SERIES_ID)?;
    let ts: &TimestampMillisecondArray = columnar::decode_column(keys, col::TIMESTAMP)?;
    let (series, ts) = (series.values(), ts.values());
    let rows = u32::try_from(keys.num_rows())
        .map_err(|_| StorageError::InvalidInput("more than 2^32 rows in one sort".into()))?;
    // On the two primitive keys directly, not through arrow's dynamic row comparator. The sort
    // is stable (rows with equal keys keep their read order, so the last one is the value
    // written last) and merges already-sorted runs, the shape of concatenated segments.
    let mut idx: Vec<u32> = (0..rows).collect();
    idx.sort_by_key(|&i| (series[i as usize], ts[i as usize]));
    let key = |i: u32| (series[i as usize], ts[i as usize]);
    let keep: Vec<u32> = (0..idx.len())
        .filter(|&i| idx.get(i + 1).is_none_or(|&next| key(next) != key(idx[i])))
        .map(|i| idx[i])
        .collect();
    Ok(UInt32Array::from(keep))
}

/// Whether `batch` is in segment order: no row sorts before the row above it (samples: and
/// no (series, timestamp) twice). For debug assertions.
fn is_sorted_for_segment(signal: Signal, batch: &RecordBatch) -> Result<bool> {
    let mut cols = sort_columns(signal, batch)?;
    // The last sort column is the insertion order `sort_columns` adds as a tie-breaker.
    cols.pop();
    let cmp = LexicographicalComparator::try_new(&cols)?;
    Ok((1..batch.num_rows()).all(|i| match cmp.compare(i - 1, i) {
        std::cmp::Ordering::Less => true,
        std::cmp::Ordering::Equal => signal != Signal::Samples,
        std::cmp::Ordering::Greater => false,
    }))
}

fn writer_properties(
    signal: Signal,
    rows: usize,
    opts: &SegmentWriteOptions,
) -> Result<WriterProperties> {
    let level = ZstdLevel::try_new(opts.zstd_level)?;
    let mut b = WriterProperties::builder()
        .set_compression(Compression::ZSTD(level))
        .set_statistics_enabled(EnabledStatistics::Page)
        .set_data_page_row_count_limit(opts.page_rows)
        .set_write_batch_size(opts.page_rows.min(8192))
        .set_created_by(format!("sightline {}", env!("CARGO_PKG_VERSION")));
    let path = |c: &str| ColumnPath::from(c);
    match signal {
        Signal::Spans | Signal::Logs => {
            let time = if signal == Signal::Spans {
                col::START_TIME
            } else {
                col::TIME
            };
            b = b
                .set_max_row_group_row_count(Some(opts.row_group_rows))
                .set_column_dictionary_enabled(path(col::TRACE_ID), false)
                .set_column_dictionary_enabled(path(col::SPAN_ID), false)
                .set_column_bloom_filter_enabled(path(col::TRACE_ID), true)
                .set_column_bloom_filter_fpp(path(col::TRACE_ID), 0.01)
                .set_column_bloom_filter_max_ndv(
                    path(col::TRACE_ID),
                    rows.min(opts.row_group_rows).max(1) as u64,
                )
                .set_column_dictionary_enabled(path(time), false)
                .set_column_encoding(path(time), Encoding::DELTA_BINARY_PACKED);
            if signal == Signal::Spans {
                b = b
                    .set_column_dictionary_enabled(path(col::PARENT_SPAN_ID), false)
                    .set_column_dictionary_enabled(path(col::DURATION), false)
                    .set_column_encoding(path(col::DURATION), Encoding::DELTA_BINARY_PACKED);
            } else {
                b = b
                    .set_column_dictionary_enabled(path(col::OBSERVED_TIME), false)
                    .set_column_encoding(path(col::OBSERVED_TIME), Encoding::DELTA_BINARY_PACKED);
            }
        }
        Signal::Samples => {
            // A page is cut after every write (see `SampleSegmentWriter::write`): each write is one
            // mini-batch of at most `sample_page_rows` rows, and any buffered row reaches the
            // row-count limit of one.
            b = b
                .set_data_page_row_count_limit(1)
                .set_write_batch_size(opts.sample_page_rows.max(1))
                .set_column_statistics_enabled(path(col::VALUE), EnabledStatistics::Chunk)
                .set_max_row_group_row_count(Some(opts.sample_row_group_rows))
                .set_column_dictionary_enabled(path(col::TIMESTAMP), false)
                .set_column_encoding(path(col::TIMESTAMP), Encoding::DELTA_BINARY_PACKED)
                .set_column_dictionary_enabled(path(col::VALUE), false)
                .set_column_encoding(path(col::VALUE), Encoding::BYTE_STREAM_SPLIT);
        }
    }
    // Min/max only where a reader can prune with it. Spans are sorted by trace and logs by
    // time, so a row group's range of any string column is (nearly) its whole domain, and the
    // min/max of nested leaves (attribute maps, events, links, list items) mixes every key's
    // values; attribute and text lookups go through postings and the text index instead.
    // String min/max was half of the Parquet encode (0.7 of 1.6 us per span).
    for leaf in unprunable_leaves(signal)? {
        b = b.set_column_statistics_enabled(leaf, EnabledStatistics::None);
    }
    Ok(b.build())
}

/// Leaf columns written without statistics: every nested leaf and every string column.
/// Time columns, ids (trace_id's statistics and page index find a trace) and numbers keep them.
fn unprunable_leaves(signal: Signal) -> Result<Vec<ColumnPath>> {
    let descr = ArrowSchemaConverter::new().convert(&schema::of(signal))?;
    Ok(descr
        .columns()
        .iter()
        .filter(|c| c.path().parts().len() > 1 || c.physical_type() == PhysicalType::BYTE_ARRAY)
        .map(|c| c.path().clone())
        .collect())
}

/// Writes the leaves of `batch` that hold nothing in this segment uncompressed: leaves of lists
/// and maps that no row has an entry in (events and links nobody sent) and top-level columns
/// that are null in every row (GenAI fields of a segment without model calls). Their pages
/// hold one run of levels, a few bytes that a zstd frame would make larger, and a reader creates
/// no zstd contexts for them: a trace lookup decodes one page of every leaf, and creating a
/// compressor and decompressor per leaf was a quarter of its time. (A null leaf inside map
/// entries that exist, such as the `double` of string attributes, keeps zstd: its repetition
/// levels vary per row and compress 4x.)
fn uncompress_valueless_leaves(
    props: WriterProperties,
    batch: &RecordBatch,
) -> Result<WriterProperties> {
    let descr = ArrowSchemaConverter::new().convert(&batch.schema())?;
    let mut empty = Vec::with_capacity(descr.num_columns());
    for c in batch.columns() {
        empty_leaves(c.as_ref(), false, &mut empty);
    }
    // Parquet's leaves are the Arrow schema's leaves, depth first, in field order.
    if empty.len() != descr.num_columns() {
        return Err(StorageError::InvalidInput(format!(
            "{} Arrow leaves against {} Parquet columns",
            empty.len(),
            descr.num_columns()
        )));
    }
    let mut b = props.into_builder();
    for (leaf, empty) in descr.columns().iter().zip(empty) {
        if empty {
            b = b.set_column_compression(leaf.path().clone(), Compression::UNCOMPRESSED);
        }
    }
    Ok(b.build())
}

/// Appends, for each leaf under `array` depth first, whether its levels are one run with no
/// value: no slot at all (a list or map without entries in any row), or, outside lists and
/// maps, null in every row.
fn empty_leaves(array: &dyn Array, repeated: bool, out: &mut Vec<bool>) {
    use arrow_array::cast::AsArray;
    use arrow_schema::DataType;
    match array.data_type() {
        DataType::Struct(_) => {
            // A struct with nulls of its own gives its leaves varying levels.
            let repeated = repeated || array.null_count() > 0;
            for c in array.as_struct().columns() {
                empty_leaves(c.as_ref(), repeated, out);
            }
        }
        DataType::List(_) => empty_leaves(array.as_list::<i32>().values().as_ref(), true, out),
        DataType::LargeList(_) => empty_leaves(array.as_list::<i64>().values().as_ref(), true, out),
        DataType::Map(_, _) => empty_leaves(array.as_map().entries(), true, out),
        _ => out.push(array.is_empty() || (!repeated && array.null_count() == array.len())),
    }
}

fn write_parquet(path: &Path, batch: &RecordBatch, props: WriterProperties) -> Result<()> {
    let file = fsutil::create_private_file(path)?;
    let mut w = ArrowWriter::try_new(file, batch.schema(), Some(props))?;
    w.write(batch)?;
    w.close()?;
    Ok(())
}

/// Adds an attribute map column's entries to the postings (scalar values only), grouped by
/// key and value so that each pair is looked up in the builder once per segment.
fn index_attrs(p: &mut PostingsBuilder, reader: &AttrReader<'_>, rows: usize) -> Result<()> {
    let mut groups: HashMap<(&str, Cow<'_, str>), Vec<u32>> = HashMap::new();
    let mut incomplete: Vec<&str> = Vec::new();
    for row in 0..rows {
        for e in reader.range(row)? {
            let key = reader.key(e);
            // Arrays, maps and bytes are not indexed; their keys become incomplete so lookups
            // fall back to scanning.
            match reader.value_kind(e) {
                Some(AttrKind::Str | AttrKind::Int | AttrKind::Bool | AttrKind::Double) => {
                    groups
                        .entry((key, reader.rendered(e)?))
                        .or_default()
                        .push(row as u32);
                }
                _ => incomplete.push(key),
            }
        }
    }
    for ((key, value), rows) in &groups {
        p.add_rows(key, value, rows);
    }
    for key in incomplete {
        p.mark_incomplete(key);
    }
    Ok(())
}

/// Adds a promoted column's values to the postings, grouped by value. Absent optional values
/// render as "" and are left out, like a missing attribute. An integer column (token counts)
/// gets no postings: its key is marked incomplete when any row has a value, so lookups scan
/// (its Parquet statistics stay).
fn index_column(p: &mut PostingsBuilder, key: &str, r: &CellRenderer<'_>, rows: usize) {
    if let CellRenderer::Int64(a) = r {
        if a.null_count() < rows {
            p.mark_incomplete(key);
        }
        return;
    }
    let mut groups: HashMap<Cow<'_, str>, Vec<u32>> = HashMap::new();
    for row in 0..rows {
        let v = r.render(row);
        if !v.is_empty() {
            groups.entry(v).or_default().push(row as u32);
        }
    }
    for (value, rows) in &groups {
        p.add_rows(key, value, rows);
    }
}

fn span_log_postings(signal: Signal, batch: &RecordBatch) -> Result<PostingsBuilder> {
    let mut p = PostingsBuilder::new();
    let promoted = match signal {
        Signal::Spans => schema::SPAN_PROMOTED_KEYS,
        _ => schema::LOG_PROMOTED_KEYS,
    };
    let rows = batch.num_rows();
    for (key, column) in promoted {
        if let Some(r) = batch
            .column_by_name(column)
            .and_then(|a| CellRenderer::new(column, a))
        {
            index_column(&mut p, key, &r, rows);
        }
    }
    index_attrs(
        &mut p,
        &AttrReader::new(map_col(batch, col::ATTRIBUTES)?)?,
        rows,
    )?;
    index_attrs(
        &mut p,
        &AttrReader::new(map_col(batch, col::RESOURCE_ATTRIBUTES)?)?,
        rows,
    )?;
    Ok(p)
}

fn map_col<'a>(batch: &'a RecordBatch, name: &str) -> Result<&'a MapArray> {
    batch
        .column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<MapArray>())
        .ok_or_else(|| StorageError::InvalidInput(format!("batch lacks column {name}")))
}

fn checksum_tree(base: &Path, dir: &Path, out: &mut Vec<FileChecksum>) -> Result<()> {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .at(dir)?
        .collect::<std::io::Result<Vec<_>>>()
        .at(dir)?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let path = e.path();
        let name = e.file_name();
        let name = name.to_string_lossy();
        // Lock files are runtime artefacts, not data.
        if name.starts_with('.') || name == META_FILE {
            continue;
        }
        if e.file_type().at(&path)?.is_dir() {
            checksum_tree(base, &path, out)?;
        } else {
            let (crc32c, len) = fsutil::file_crc(&path)?;
            let rel = path
                .strip_prefix(base)
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_else(|_| name.into_owned());
            out.push(FileChecksum {
                name: rel,
                len,
                crc32c,
            });
        }
    }
    Ok(())
}

/// Writes a span or log segment's rows (Parquet), postings and blooms, and for spans its
/// rollups, into `dir`; everything but the text index and the meta.
fn write_data_and_indexes(
    dir: &Path,
    signal: Signal,
    sorted: &RecordBatch,
    opts: &SegmentWriteOptions,
) -> Result<()> {
    let props =
        uncompress_valueless_leaves(writer_properties(signal, sorted.num_rows(), opts)?, sorted)?;
    write_parquet(&dir.join(DATA_FILE), sorted, props)?;
    // Blooms per block of one data page's rows: a lookup then decodes the pages that may hold
    // the value, as with postings, not whole row groups.
    let block_rows = u32::try_from(opts.page_rows).unwrap_or(u32::MAX);
    let (postings, blooms, _) = span_log_postings(signal, sorted)?.finish_indexed(block_rows);
    if let Some(b) = blooms {
        fsutil::write_private_file(&dir.join(ATTR_BLOOMS_FILE), &b.encode()?)?;
    }
    fsutil::write_private_file(&dir.join(POSTINGS_FILE), &postings.encode())?;

    if signal == Signal::Spans
        && let Some(rollup) = crate::rollup::build(sorted)?
    {
        let zstd = Compression::ZSTD(ZstdLevel::try_new(opts.zstd_level)?);
        let props = || WriterProperties::builder().set_compression(zstd).build();
        if let Some(minute) = &rollup.minute {
            write_parquet(&dir.join(crate::rollup::ROLLUP_FILE), &minute.rows, props())?;
            // Ascending runs: deltas are small; pages of 8192 values let a scan skip to the
            // rows it needs.
            let props = WriterProperties::builder()
                .set_compression(zstd)
                .set_dictionary_enabled(false)
                .set_encoding(Encoding::DELTA_BINARY_PACKED)
                .set_data_page_row_count_limit(8192)
                .set_write_batch_size(8192)
                .set_max_row_group_row_count(Some(usize::MAX))
                .build();
            write_parquet(
                &dir.join(crate::rollup::DURATIONS_FILE),
                &minute.durations,
                props,
            )?;
        }
        if let Some(hourly) = &rollup.hourly {
            write_parquet(&dir.join(crate::rollup::HOURLY_FILE), hourly, props())?;
        }
    }
    Ok(())
}

/// Writes `batch` (any order) as segment `meta.id` under `root`, returning its completed meta.
/// Nothing is visible until the caller commits the meta to the manifest.
pub(crate) fn write_segment(
    root: &Path,
    mut meta: SegmentMeta,
    batch: RecordBatch,
    catalog: &HashMap<SeriesId, Arc<SeriesDef>>,
    opts: &SegmentWriteOptions,
) -> Result<SegmentMeta> {
    let signal = meta.signal;
    // A flush hands its rows over already sorted (one copy of the memtable's rows); anything
    // else is sorted here, and the unsorted copy goes before the files are encoded, so a
    // flush or merge holds one copy.
    let sorted = if is_sorted_for_segment(signal, &batch)? {
        batch
    } else {
        let sorted = sort_for_segment(signal, &batch)?;
        drop(batch);
        sorted
    };
    debug_assert!(
        is_sorted_for_segment(signal, &sorted)?,
        "rows entering a {signal:?} segment are in segment order"
    );
    if signal == Signal::Samples {
        let mut w = SampleSegmentWriter::create(root, meta, opts)?;
        w.write(&sorted)?;
        drop(sorted);
        return w.finish(catalog);
    }
    let dir = root.join(meta.relative_dir());
    if dir.exists() {
        // Left over from a crash before the manifest named it.
        fs::remove_dir_all(&dir).at(&dir)?;
    }
    fsutil::create_private_dir_all(&dir)?;

    // A log segment's token index is built on a thread of its own while the rows, postings and
    // blooms are written, so a flush of logs keeps both cores busy.
    std::thread::scope(|scope| -> Result<()> {
        let text = (signal == Signal::Logs).then(|| {
            let (sorted, text_path) = (&sorted, dir.join(text_index::TEXT_INDEX_FILE));
            scope.spawn(move || -> Result<()> {
                let bodies = columnar::decode_column::<StringArray>(sorted, col::BODY)?;
                text_index::build(&text_path, (0..bodies.len()).map(|i| bodies.value(i)))
            })
        });
        let written = write_data_and_indexes(&dir, signal, &sorted, opts);
        let indexed = match text {
            Some(h) => h.join().unwrap_or_else(|_| {
                Err(StorageError::Io {
                    path: dir.join(text_index::TEXT_INDEX_FILE),
                    source: std::io::Error::other("the text index build panicked"),
                })
            }),
            None => Ok(()),
        };
        written.and(indexed)
    })?;

    let (lo, hi) = super::time_bounds(signal, &sorted)?;
    meta.min_time = lo;
    meta.max_time = hi;
    meta.rows = sorted.num_rows() as u64;
    meta.decoded_bytes = columnar::batch_bytes(&sorted) as u64;
    seal(&dir, meta)
}

/// Completes a segment whose files are written in `dir`: records their checksums in `meta`,
/// writes the meta and makes the directory durable. Returns the completed meta.
fn seal(dir: &Path, mut meta: SegmentMeta) -> Result<SegmentMeta> {
    let mut files = Vec::new();
    checksum_tree(dir, dir, &mut files)?;
    meta.files = files;
    let meta_json = serde_json::to_vec_pretty(&meta)
        .map_err(|e| StorageError::InvalidInput(format!("segment meta: {e}")))?;
    fsutil::write_private_file(&dir.join(META_FILE), &meta_json)?;
    fsutil::sync_tree(dir)?;
    if let Some(parent) = dir.parent() {
        fsutil::sync_dir(parent)?;
        if let Some(gp) = parent.parent() {
            fsutil::sync_dir(gp)?;
        }
    }
    Ok(meta)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod load_shaped;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::model::Sample;

    /// Samples at `(series, timestamp ms)`, each valued at its time.
    pub(super) fn samples(rows: &[(u64, i64)]) -> RecordBatch {
        let s: Vec<Sample> = rows
            .iter()
            .map(|&(series, timestamp_ms)| Sample {
                series: SeriesId(series),
                timestamp_ms,
                value: timestamp_ms as f64,
            })
            .collect();
        columnar::samples_to_batch(&s).unwrap()
    }

    #[test]
    fn segment_order_is_what_the_sort_gives() {
        let unsorted = samples(&[(2, 5), (1, 9), (1, 3), (1, 3)]);
        assert!(!is_sorted_for_segment(Signal::Samples, &unsorted).unwrap());
        let sorted = sort_for_segment(Signal::Samples, &unsorted).unwrap();
        assert_eq!(sorted.num_rows(), 3, "(1, 3) twice is kept once");
        assert!(is_sorted_for_segment(Signal::Samples, &sorted).unwrap());
        // A duplicate (series, timestamp) is out of order for samples.
        assert!(!is_sorted_for_segment(Signal::Samples, &samples(&[(1, 3), (1, 3)])).unwrap());
    }
}
