//! The pages of a segment's column chunks for a scan, read with positional reads and inflated
//! by one zstd decompressor per thread.
//!
//! Parquet's own reader creates a zstd compressor and a decompressor (together some hundred
//! kilobytes to allocate and clear) for every column chunk it opens, and clones and seeks the
//! file handle for every page. A scan that reads one page of each of seventy columns (a trace
//! lookup) spent more time on that than on decoding. Here each column chunk is opened as if it
//! were uncompressed, so Parquet hands over the pages as stored, and this module inflates them
//! with the calling thread's decompressor before Parquet decodes them.
//!
//! Used by the scan path only; compaction and exports read whole segments, where the
//! per-chunk cost does not show.

use std::cell::RefCell;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use bytes::Bytes;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ParquetRecordBatchReader, RowGroups, RowSelection,
};
use parquet::arrow::parquet_to_arrow_field_levels;
use parquet::basic::Compression;
use parquet::column::page::{Page, PageIterator, PageMetadata, PageReader};
use parquet::errors::{ParquetError, Result as ParquetResult};
use parquet::file::metadata::{ParquetMetaData, RowGroupMetaData};
use parquet::file::reader::{ChunkReader, Length};
use parquet::file::serialized_reader::SerializedPageReader;

/// Largest inflated page accepted: the most a Parquet page header can declare (its sizes are
/// `i32`). A frame declaring more is taken for corruption before any memory is reserved for it.
pub(crate) const MAX_PAGE_BYTES: usize = i32::MAX as usize;

thread_local! {
    static DECOMPRESSOR: RefCell<Option<zstd::bulk::Decompressor<'static>>> =
        const { RefCell::new(None) };
}

/// A segment's data file, read with `pread` (no handle cloning, no seeking).
pub(crate) struct SegmentFile {
    file: File,
    len: u64,
}

impl SegmentFile {
    pub(crate) fn new(file: File) -> std::io::Result<Self> {
        let len = file.metadata()?.len();
        Ok(Self { file, len })
    }
}

impl Length for SegmentFile {
    fn len(&self) -> u64 {
        self.len
    }
}

/// A sequential reader over a [`SegmentFile`] from some offset on.
pub(crate) struct SegmentFileRead {
    file: File,
    pos: u64,
}

impl Read for SegmentFileRead {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.file.read_at(buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl ChunkReader for SegmentFile {
    type T = SegmentFileRead;

    fn get_read(&self, start: u64) -> ParquetResult<Self::T> {
        Ok(SegmentFileRead {
            file: self.file.try_clone()?,
            pos: start,
        })
    }

    fn get_bytes(&self, start: u64, length: usize) -> ParquetResult<Bytes> {
        let end = start.checked_add(length as u64);
        if end.is_none_or(|end| end > self.len) {
            return Err(ParquetError::EOF(format!(
                "{length} bytes at {start} lie past the end of a {}-byte file",
                self.len
            )));
        }
        let mut buf = vec![0u8; length];
        self.file.read_exact_at(&mut buf, start)?;
        Ok(buf.into())
    }
}

/// A reader of `row_groups` of `file` (in that order), decoding the leaves of `mask` into the
/// Arrow types of `metadata`'s schema, over the rows of `selection` (relative to the first of
/// the row groups; every row when `None`).
pub(crate) fn read_row_groups(
    file: &Arc<SegmentFile>,
    metadata: &ArrowReaderMetadata,
    row_groups: Vec<usize>,
    mask: ProjectionMask,
    selection: Option<RowSelection>,
    batch_size: usize,
) -> ParquetResult<ParquetRecordBatchReader> {
    let levels = parquet_to_arrow_field_levels(
        metadata.parquet_schema(),
        mask,
        Some(metadata.schema().fields()),
    )?;
    let groups = SegmentRowGroups {
        file: Arc::clone(file),
        metadata: Arc::clone(metadata.metadata()),
        row_groups,
    };
    ParquetRecordBatchReader::try_new_with_row_groups(&levels, &groups, batch_size, selection)
}

struct SegmentRowGroups {
    file: Arc<SegmentFile>,
    metadata: Arc<ParquetMetaData>,
    row_groups: Vec<usize>,
}

impl RowGroups for SegmentRowGroups {
    fn num_rows(&self) -> usize {
        self.row_groups
            .iter()
            .map(|&i| self.metadata.row_group(i).num_rows().max(0) as usize)
            .sum()
    }

    fn column_chunks(&self, i: usize) -> ParquetResult<Box<dyn PageIterator>> {
        Ok(Box::new(ChunkPages {
            file: Arc::clone(&self.file),
            metadata: Arc::clone(&self.metadata),
            column: i,
            row_groups: self.row_groups.clone().into_iter(),
        }))
    }

    fn row_groups(&self) -> Box<dyn Iterator<Item = &RowGroupMetaData> + '_> {
        Box::new(self.row_groups.iter().map(|&i| self.metadata.row_group(i)))
    }

    fn metadata(&self) -> &ParquetMetaData {
        &self.metadata
    }
}

/// The page readers of one column across the row groups read.
struct ChunkPages {
    file: Arc<SegmentFile>,
    metadata: Arc<ParquetMetaData>,
    column: usize,
    row_groups: std::vec::IntoIter<usize>,
}

impl ChunkPages {
    fn open(&self, rg: usize) -> ParquetResult<Box<dyn PageReader>> {
        let chunk = self.metadata.row_group(rg).column(self.column);
        let locations = self
            .metadata
            .page_index()
            .and_then(|pi| pi.page_locations(rg, self.column).cloned());
        let rows = self.metadata.row_group(rg).num_rows().max(0) as usize;
        let compression = chunk.compression();
        let zstd = match compression {
            Compression::UNCOMPRESSED => false,
            Compression::ZSTD(_) => true,
            // Not written by this store; Parquet's own codec handles it.
            _ => {
                return Ok(Box::new(SerializedPageReader::new(
                    Arc::clone(&self.file),
                    chunk,
                    rows,
                    locations,
                )?));
            }
        };
        // Opened as uncompressed, Parquet returns the pages as stored.
        let stored = chunk
            .clone()
            .into_builder()
            .set_compression(Compression::UNCOMPRESSED)
            .build()?;
        let inner = SerializedPageReader::new(Arc::clone(&self.file), &stored, rows, locations)?;
        Ok(Box::new(InflatingPages { inner, zstd }))
    }
}

impl Iterator for ChunkPages {
    type Item = ParquetResult<Box<dyn PageReader>>;

    fn next(&mut self) -> Option<Self::Item> {
        let rg = self.row_groups.next()?;
        Some(self.open(rg))
    }
}

impl PageIterator for ChunkPages {}

/// A column chunk's pages, inflated when the chunk is zstd-compressed.
struct InflatingPages {
    inner: SerializedPageReader<SegmentFile>,
    zstd: bool,
}

impl InflatingPages {
    fn inflate(&self, page: Option<Page>) -> ParquetResult<Option<Page>> {
        match page {
            Some(p) if self.zstd => inflate(p).map(Some),
            other => Ok(other),
        }
    }
}

impl Iterator for InflatingPages {
    type Item = ParquetResult<Page>;

    fn next(&mut self) -> Option<Self::Item> {
        self.get_next_page().transpose()
    }
}

impl PageReader for InflatingPages {
    fn get_next_page(&mut self) -> ParquetResult<Option<Page>> {
        let page = self.inner.get_next_page()?;
        self.inflate(page)
    }

    fn peek_next_page(&mut self) -> ParquetResult<Option<PageMetadata>> {
        self.inner.peek_next_page()
    }

    fn skip_next_page(&mut self) -> ParquetResult<()> {
        self.inner.skip_next_page()
    }

    fn supports_deferred_dictionary(&self) -> bool {
        self.inner.supports_deferred_dictionary()
    }

    fn take_deferred_dictionary(&mut self) -> ParquetResult<Option<Page>> {
        let page = self.inner.take_deferred_dictionary()?;
        self.inflate(page)
    }

    fn at_record_boundary(&mut self) -> ParquetResult<bool> {
        self.inner.at_record_boundary()
    }
}

/// `page` with its zstd-compressed part inflated.
fn inflate(mut page: Page) -> ParquetResult<Page> {
    match &mut page {
        Page::DataPage { buf, .. } | Page::DictionaryPage { buf, .. } => {
            *buf = inflate_bytes(buf, 0)?;
        }
        // Levels are stored uncompressed ahead of the values.
        Page::DataPageV2 {
            buf,
            def_levels_byte_len,
            rep_levels_byte_len,
            is_compressed,
            ..
        } => {
            if *is_compressed {
                let levels = *def_levels_byte_len as usize + *rep_levels_byte_len as usize;
                *buf = inflate_bytes(buf, levels)?;
                *is_compressed = false;
            }
        }
    }
    Ok(page)
}

/// `buf` with the zstd frame after its first `keep` bytes inflated (the first `keep` bytes
/// copied as they are).
fn inflate_bytes(buf: &Bytes, keep: usize) -> ParquetResult<Bytes> {
    let (head, frame) = buf
        .split_at_checked(keep)
        .ok_or_else(|| ParquetError::General("page levels longer than the page".into()))?;
    // A page whose values are all null has an empty body.
    if frame.is_empty() {
        return Ok(buf.clone());
    }
    let size = match zstd::zstd_safe::get_frame_content_size(frame) {
        Ok(Some(size)) => size,
        Ok(None) => return inflate_unsized(head, frame),
        Err(_) => return Err(ParquetError::General("page is not a zstd frame".into())),
    };
    let size = usize::try_from(size)
        .ok()
        .filter(|&s| s <= MAX_PAGE_BYTES)
        .ok_or_else(|| {
            ParquetError::General(format!(
                "page declares {size} bytes inflated, over the {MAX_PAGE_BYTES} accepted"
            ))
        })?;
    let mut body = Vec::with_capacity(size);
    DECOMPRESSOR.with(|d| -> ParquetResult<()> {
        let mut d = d.borrow_mut();
        let d = match d.as_mut() {
            Some(d) => d,
            None => d.insert(zstd::bulk::Decompressor::new()?),
        };
        let n = d.decompress_to_buffer(frame, &mut body)?;
        if n != size {
            return Err(ParquetError::General(format!(
                "page inflated to {n} bytes, not the {size} its frame declares"
            )));
        }
        Ok(())
    })?;
    if head.is_empty() {
        return Ok(body.into());
    }
    let mut out = Vec::with_capacity(head.len() + body.len());
    out.extend_from_slice(head);
    out.extend_from_slice(&body);
    Ok(out.into())
}

/// A frame that does not declare its inflated size, inflated up to [`MAX_PAGE_BYTES`].
fn inflate_unsized(head: &[u8], frame: &[u8]) -> ParquetResult<Bytes> {
    let mut out = head.to_vec();
    let decoder = zstd::stream::read::Decoder::new(frame)?;
    let limit = MAX_PAGE_BYTES as u64 + 1;
    decoder.take(limit).read_to_end(&mut out)?;
    if out.len() - head.len() > MAX_PAGE_BYTES {
        return Err(ParquetError::General(format!(
            "page inflates to over {MAX_PAGE_BYTES} bytes"
        )));
    }
    Ok(out.into())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::builder::{MapBuilder, StringBuilder};
    use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
    use parquet::arrow::ArrowWriter;
    use parquet::arrow::arrow_reader::{
        ArrowReaderOptions, ParquetRecordBatchReaderBuilder, RowSelection,
    };
    use parquet::basic::{Compression, ZstdLevel};
    use parquet::file::metadata::PageIndexPolicy;
    use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterVersion};
    use proptest::prelude::*;

    use super::*;

    const ROWS: usize = 20_000;

    fn batch() -> RecordBatch {
        let ids = Int64Array::from_iter_values(0..ROWS as i64);
        let names = StringArray::from_iter((0..ROWS).map(|i| {
            // Low cardinality (dictionary-encoded) with nulls.
            (i % 7 != 0).then(|| format!("name-{}", i % 13))
        }));
        let bodies =
            StringArray::from_iter_values((0..ROWS).map(|i| format!("body {i} {}", i * 31)));
        let mut attrs = MapBuilder::new(None, StringBuilder::new(), StringBuilder::new());
        for i in 0..ROWS {
            for k in 0..(i % 3) {
                attrs.keys().append_value(format!("k{k}"));
                attrs.values().append_value(format!("v{}", i % 100));
            }
            attrs.append(true).unwrap_or_else(|e| panic!("{e}"));
        }
        let cols: Vec<(&str, ArrayRef)> = vec![
            ("id", Arc::new(ids)),
            ("name", Arc::new(names)),
            ("body", Arc::new(bodies)),
            ("attrs", Arc::new(attrs.finish())),
        ];
        RecordBatch::try_from_iter(cols).unwrap_or_else(|e| panic!("{e}"))
    }

    /// A file of `batch()` in row groups of 8,000 rows and pages of 1,000, with `compression`.
    fn write(compression: Compression, version: WriterVersion) -> tempfile::NamedTempFile {
        let props = WriterProperties::builder()
            .set_compression(compression)
            .set_writer_version(version)
            .set_max_row_group_row_count(Some(8_000))
            .set_data_page_row_count_limit(1_000)
            .set_write_batch_size(1_000)
            .set_statistics_enabled(EnabledStatistics::Page)
            .build();
        let f = tempfile::NamedTempFile::new().unwrap_or_else(|e| panic!("{e}"));
        let b = batch();
        let file = f.reopen().unwrap_or_else(|e| panic!("{e}"));
        let mut w =
            ArrowWriter::try_new(file, b.schema(), Some(props)).unwrap_or_else(|e| panic!("{e}"));
        w.write(&b).unwrap_or_else(|e| panic!("{e}"));
        w.close().unwrap_or_else(|e| panic!("{e}"));
        f
    }

    fn metadata(f: &tempfile::NamedTempFile) -> ArrowReaderMetadata {
        let file = f.reopen().unwrap_or_else(|e| panic!("{e}"));
        ArrowReaderMetadata::load(
            &file,
            ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Required),
        )
        .unwrap_or_else(|e| panic!("{e}"))
    }

    fn concat(batches: Vec<RecordBatch>) -> RecordBatch {
        let schema = batches[0].schema();
        arrow_select::concat::concat_batches(&schema, &batches).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The same rows as Parquet's own reader, for every codec and page version, with and
    /// without a selection that skips whole pages and cuts others.
    #[test]
    fn reads_what_parquet_reads() {
        let selections = [
            None,
            Some(RowSelection::from_consecutive_ranges(
                [3..5, 999..1_003, 7_990..8_010, 15_500..15_501].into_iter(),
                16_000,
            )),
        ];
        for compression in [
            Compression::ZSTD(ZstdLevel::try_new(3).unwrap_or_else(|e| panic!("{e}"))),
            Compression::UNCOMPRESSED,
        ] {
            for version in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0] {
                let f = write(compression, version);
                let md = metadata(&f);
                let file = Arc::new(
                    SegmentFile::new(f.reopen().unwrap_or_else(|e| panic!("{e}")))
                        .unwrap_or_else(|e| panic!("{e}")),
                );
                for selection in &selections {
                    let mask = ProjectionMask::roots(md.parquet_schema(), [0, 1, 3]);
                    let ours: Vec<RecordBatch> = read_row_groups(
                        &file,
                        &md,
                        vec![0, 1],
                        mask.clone(),
                        selection.clone(),
                        512,
                    )
                    .unwrap_or_else(|e| panic!("{e}"))
                    .collect::<std::result::Result<_, _>>()
                    .unwrap_or_else(|e| panic!("{e}"));
                    let mut builder = ParquetRecordBatchReaderBuilder::new_with_metadata(
                        f.reopen().unwrap_or_else(|e| panic!("{e}")),
                        md.clone(),
                    )
                    .with_row_groups(vec![0, 1])
                    .with_projection(mask);
                    if let Some(s) = selection {
                        builder = builder.with_row_selection(s.clone());
                    }
                    let theirs: Vec<RecordBatch> = builder
                        .build()
                        .unwrap_or_else(|e| panic!("{e}"))
                        .collect::<std::result::Result<_, _>>()
                        .unwrap_or_else(|e| panic!("{e}"));
                    let (ours, theirs) = (concat(ours), concat(theirs));
                    let want = if selection.is_some() { 27 } else { 16_000 };
                    assert_eq!(ours.num_rows(), want, "{compression:?} {version:?}");
                    assert_eq!(ours, theirs, "{compression:?} {version:?} {selection:?}");
                }
            }
        }
    }

    /// A frame that declares more than [`MAX_PAGE_BYTES`] is refused before anything is
    /// reserved for it.
    #[test]
    fn refuses_pages_declaring_too_much() {
        // Magic, a single-segment header with an 8-byte content size, 1 TiB declared, then
        // one empty raw block that ends the frame.
        let mut frame = vec![0x28, 0xB5, 0x2F, 0xFD, 0xE0];
        frame.extend_from_slice(&(1u64 << 40).to_le_bytes());
        frame.extend_from_slice(&[0x01, 0x00, 0x00]);
        let err = inflate_bytes(&Bytes::from(frame), 0)
            .err()
            .unwrap_or_else(|| panic!("accepted"));
        assert!(err.to_string().contains("over the"), "{err}");
        // The levels of a v2 page cannot be longer than the page.
        assert!(inflate_bytes(&Bytes::from_static(b"abc"), 4).is_err());
        // A frame that inflates to other than it declares is refused too.
        let mut short = zstd::bulk::compress(&[7u8; 100], 3).unwrap_or_else(|e| panic!("{e}"));
        let n = short.len();
        short.truncate(n - 2);
        assert!(inflate_bytes(&Bytes::from(short), 0).is_err());
    }

    #[test]
    fn inflates_v2_pages_after_their_levels() {
        let body = b"the values of a page".repeat(10);
        let mut page = b"LEVELS".to_vec();
        page.extend(zstd::bulk::compress(&body, 3).unwrap_or_else(|e| panic!("{e}")));
        let out = inflate_bytes(&Bytes::from(page), 6).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(&out[..6], b"LEVELS");
        assert_eq!(&out[6..], &body[..]);
    }

    proptest! {
        /// Whatever the bytes, inflating answers (a page or an error) and never panics.
        #[test]
        fn inflating_any_bytes_answers(bytes in proptest::collection::vec(any::<u8>(), 0..512),
                                       keep in 0usize..16) {
            let _ = inflate_bytes(&Bytes::from(bytes), keep);
        }
    }

    #[test]
    fn the_file_refuses_reads_past_its_end() {
        let f = write(Compression::UNCOMPRESSED, WriterVersion::PARQUET_1_0);
        let file = SegmentFile::new(f.reopen().unwrap_or_else(|e| panic!("{e}")))
            .unwrap_or_else(|e| panic!("{e}"));
        let len = file.len();
        assert!(file.get_bytes(len - 4, 4).is_ok());
        assert!(file.get_bytes(len - 4, 5).is_err());
        assert!(file.get_bytes(u64::MAX, 1).is_err());
        let mut head = [0u8; 4];
        file.get_read(0)
            .unwrap_or_else(|e| panic!("{e}"))
            .read_exact(&mut head)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(&head, b"PAR1");
    }
}
