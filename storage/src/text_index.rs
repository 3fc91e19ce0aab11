//! Full-text index over log bodies, one tantivy index per log segment (and an in-memory one,
//! built incrementally on first use, for unflushed log rows).
//!
//! Documents carry the body (tokenized, not stored) and the row number as a fast field, so a
//! query answers a roaring bitmap of rows that the segment reader turns into a row selection.
//! Queries use tantivy's query syntax (`timeout AND "tool call"`, `-debug`, `retr*`); terms are
//! combined with AND by default, as users of log search expect. A query is refused before
//! tantivy parses it if it is longer than [`MAX_QUERY_BYTES`], nests parentheses deeper than
//! [`MAX_QUERY_DEPTH`] or has more than [`MAX_QUERY_CLAUSES`] terms (see [`bounds`]).

pub mod bounds;

use std::path::Path;

use roaring::RoaringBitmap;
use tantivy::collector::DocSetCollector;
use tantivy::query::QueryParser;
use tantivy::schema::{FAST, Field, STRING, Schema, TEXT, TextOptions};
use tantivy::store::{Compressor, ZstdCompressor};
use tantivy::{Index, IndexReader, IndexSettings, IndexWriter, ReloadPolicy, TantivyDocument};

use crate::error::{Result, StorageError};
pub use bounds::{MAX_QUERY_BYTES, MAX_QUERY_CLAUSES, MAX_QUERY_DEPTH, MAX_QUERY_RAW_DEPTH};

/// Memory arena for the single indexing thread (tantivy's minimum is 15 MB).
const WRITER_ARENA_BYTES: usize = 32 << 20;

/// Bytes per block of tantivy's document store.
const DOCSTORE_BLOCK_BYTES: usize = 256 << 10;
/// zstd level of tantivy's document store (see [`settings`]).
const DOCSTORE_ZSTD_LEVEL: i32 = 3;

/// Index settings. Documents store no field, yet tantivy's document store keeps a `u32` offset
/// and an empty record per document: 4 bytes per log line with lz4 in 16 KiB blocks, 2.4 with
/// zstd at level 3 in 256 KiB blocks. Level 15 would take it to 1.0 byte, but cost 1.6 us of
/// server CPU per line under sustained log ingest (8.9 against 7.3 us at 300,000 lines/s
/// offered), so the store stays at level 3. It is never read (matches are rows).
fn settings() -> IndexSettings {
    IndexSettings {
        docstore_compression: Compressor::Zstd(ZstdCompressor {
            compression_level: Some(DOCSTORE_ZSTD_LEVEL),
        }),
        docstore_blocksize: DOCSTORE_BLOCK_BYTES,
        ..IndexSettings::default()
    }
}

struct Fields {
    body: Field,
    row: Field,
}

fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    // Matches are collected as a set (no scoring), so no field keeps norms.
    let no_norms = |o: TextOptions| {
        let indexing = o
            .get_indexing_options()
            .cloned()
            .map(|i| i.set_fieldnorms(false));
        match indexing {
            Some(i) => o.set_indexing_options(i),
            None => o,
        }
    };
    let body = b.add_text_field("body", no_norms(TEXT));
    let row = b.add_u64_field("row", FAST);
    // Reserved for indexing string attributes later without a format change.
    let _attrs = b.add_text_field("attrs", no_norms(STRING));
    (b.build(), Fields { body, row })
}

/// Parses `query` for `index` (AND by default) once it is within the [`bounds`].
fn parse(index: &Index, body: Field, query: &str) -> Result<Box<dyn tantivy::query::Query>> {
    bounds::check(query)?;
    let mut parser = QueryParser::for_index(index, vec![body]);
    parser.set_conjunction_by_default();
    parser
        .parse_query(query)
        .map_err(|e| StorageError::InvalidQuery(format!("full-text query {query:?}: {e}")))
}

/// A searchable text index.
pub struct TextIndex {
    index: Index,
    reader: IndexReader,
    fields: Fields,
}

impl std::fmt::Debug for TextIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextIndex").finish_non_exhaustive()
    }
}

fn add_docs<'a>(
    writer: &mut IndexWriter<TantivyDocument>,
    fields: &Fields,
    first_row: u32,
    bodies: impl Iterator<Item = &'a str>,
) -> Result<()> {
    for (i, body) in bodies.enumerate() {
        let mut doc = TantivyDocument::default();
        doc.add_text(fields.body, body);
        doc.add_u64(fields.row, u64::from(first_row) + i as u64);
        writer.add_document(doc)?;
    }
    Ok(())
}

impl TextIndex {
    /// Builds an index of `bodies` (row `i` is the `i`-th body) in directory `dir`.
    pub fn build<'a>(dir: &Path, bodies: impl Iterator<Item = &'a str>) -> Result<()> {
        // Tantivy picks its files' modes itself: they are written inside an owner-only
        // directory, then brought down to owner-only once the index is complete.
        crate::fsutil::create_private_dir_all(dir)?;
        let (schema, fields) = schema();
        let index = Index::builder()
            .schema(schema)
            .settings(settings())
            .create_in_dir(dir)?;
        let mut writer: IndexWriter<TantivyDocument> =
            index.writer_with_num_threads(1, WRITER_ARENA_BYTES)?;
        add_docs(&mut writer, &fields, 0, bodies)?;
        writer.commit()?;
        writer.wait_merging_threads()?;
        crate::fsutil::restrict_tree(dir)
    }

    /// Opens an index built by [`TextIndex::build`], verifying tantivy's own file checksums.
    pub fn open(dir: &Path) -> Result<Self> {
        let index = Index::open_in_dir(dir)?;
        let damaged = index.validate_checksum()?;
        if !damaged.is_empty() {
            return Err(StorageError::corruption(
                dir,
                format!("text index files fail their checksums: {damaged:?}"),
            ));
        }
        Self::from_index(index)
    }

    fn from_index(index: Index) -> Result<Self> {
        let (_, fields) = schema();
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()?;
        Ok(Self {
            index,
            reader,
            fields,
        })
    }

    /// Rows whose body matches `query` (tantivy syntax, AND by default).
    pub fn search(&self, query: &str) -> Result<RoaringBitmap> {
        let q = parse(&self.index, self.fields.body, query)?;
        let searcher = self.reader.searcher();
        let docs = searcher.search(&*q, &DocSetCollector)?;
        let mut rows = RoaringBitmap::new();
        let mut columns = Vec::with_capacity(searcher.segment_readers().len());
        for seg in searcher.segment_readers() {
            columns.push(seg.fast_fields().u64("row")?);
        }
        for addr in docs {
            let row = columns
                .get(addr.segment_ord as usize)
                .and_then(|c| c.first(addr.doc_id))
                .ok_or_else(|| StorageError::corruption("<text index>", "document without row"))?;
            rows.insert(u32::try_from(row).map_err(|_| {
                StorageError::corruption("<text index>", "row number out of range")
            })?);
        }
        Ok(rows)
    }

    /// Checks that `query` is within the [`bounds`] and parses, without running it.
    pub fn validate_query(query: &str) -> Result<()> {
        bounds::check(query)?;
        let (schema, fields) = schema();
        let index = Index::create_in_ram(schema);
        parse(&index, fields.body, query).map(|_| ())
    }
}

/// An in-memory index that grows as unflushed log rows are searched.
pub struct RamTextIndex {
    writer: IndexWriter<TantivyDocument>,
    inner: TextIndex,
    indexed_rows: u32,
}

impl std::fmt::Debug for RamTextIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RamTextIndex")
            .field("indexed_rows", &self.indexed_rows)
            .finish_non_exhaustive()
    }
}

impl RamTextIndex {
    /// A new, empty index.
    pub fn new() -> Result<Self> {
        let (schema, _) = schema();
        let index = Index::builder()
            .schema(schema)
            .settings(settings())
            .create_in_ram()?;
        let writer = index.writer_with_num_threads(1, WRITER_ARENA_BYTES)?;
        Ok(Self {
            writer,
            inner: TextIndex::from_index(index)?,
            indexed_rows: 0,
        })
    }

    /// Rows indexed so far.
    pub fn indexed_rows(&self) -> u32 {
        self.indexed_rows
    }

    /// Indexes further rows (numbered from [`RamTextIndex::indexed_rows`]) and makes them
    /// searchable.
    pub fn extend<'a>(&mut self, bodies: impl Iterator<Item = &'a str>) -> Result<()> {
        let before = self.indexed_rows;
        let mut n = 0u32;
        let fields = &self.inner.fields;
        add_docs(&mut self.writer, fields, before, bodies.inspect(|_| n += 1))?;
        if n > 0 {
            self.writer.commit()?;
            self.inner.reader.reload()?;
            self.indexed_rows += n;
        }
        Ok(())
    }

    /// Searches the indexed rows.
    pub fn search(&self, query: &str) -> Result<RoaringBitmap> {
        self.inner.search(query)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_field_keeps_norms() {
        // Matches are sets, never scored: norms would cost a byte per line and field.
        let (schema, _) = schema();
        for (_, entry) in schema.fields() {
            assert!(!entry.has_fieldnorms(), "{}", entry.name());
        }
    }

    #[test]
    fn the_document_store_stays_small() {
        // Nothing is stored, yet tantivy keeps a record per document: it must not cost bytes
        // per log line.
        let dir = tempfile::tempdir().expect("tempdir");
        let bodies: Vec<String> = (0..50_000)
            .map(|i| format!("request {i} served by worker {}", i % 7))
            .collect();
        TextIndex::build(dir.path(), bodies.iter().map(String::as_str)).expect("build");
        let store: u64 = std::fs::read_dir(dir.path())
            .expect("list")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == "store"))
            .map(|p| std::fs::metadata(p).expect("stat").len())
            .sum();
        // 2.4 B per document measured; lz4 took 4.
        assert!(
            store * 10 < bodies.len() as u64 * 28,
            "{store} B of document store"
        );
        let idx = TextIndex::open(dir.path()).expect("open");
        assert_eq!(idx.search("worker 3").expect("search").len(), 7_143);
    }

    #[test]
    fn build_open_search() {
        let dir = tempfile::tempdir().expect("tempdir");
        let bodies = [
            "retriever timeout after 30s",
            "tool call succeeded",
            "Tool call failed: timeout",
        ];
        TextIndex::build(dir.path(), bodies.iter().copied()).expect("build");
        let idx = TextIndex::open(dir.path()).expect("open");
        let rows: Vec<u32> = idx.search("timeout").expect("search").iter().collect();
        assert_eq!(rows, vec![0, 2]);
        let rows: Vec<u32> = idx.search("tool call").expect("search").iter().collect();
        assert_eq!(rows, vec![1, 2]);
        let rows: Vec<u32> = idx
            .search("\"call failed\"")
            .expect("search")
            .iter()
            .collect();
        assert_eq!(rows, vec![2]);
        assert!(idx.search("body:(").is_err());
    }

    #[test]
    fn ram_index_grows() {
        let mut idx = RamTextIndex::new().expect("new");
        idx.extend(["alpha beta", "gamma"].into_iter())
            .expect("extend");
        idx.extend(["beta delta"].into_iter()).expect("extend");
        assert_eq!(idx.indexed_rows(), 3);
        let rows: Vec<u32> = idx.search("beta").expect("search").iter().collect();
        assert_eq!(rows, vec![0, 2]);
    }

    #[test]
    fn over_limit_queries_are_refused_before_tantivy() {
        let mut idx = RamTextIndex::new().expect("new");
        idx.extend(["a b", "c"].into_iter()).expect("extend");
        let deep = format!("{}a{}", "(".repeat(10_000), ")".repeat(10_000));
        let long = "a ".repeat(MAX_QUERY_BYTES);
        let wide = (0..=MAX_QUERY_CLAUSES)
            .map(|i| format!("t{i}"))
            .collect::<Vec<_>>()
            .join(" OR ");
        for q in [deep.as_str(), long.as_str(), wide.as_str()] {
            for r in [
                idx.search(q),
                TextIndex::validate_query(q).map(|_| RoaringBitmap::new()),
            ] {
                match r {
                    Err(StorageError::InvalidQuery(m)) => {
                        assert!(m.contains("the limit is"), "{m}")
                    }
                    other => panic!("{} bytes not refused: {other:?}", q.len()),
                }
            }
        }
    }

    /// The largest accepted queries parse and run on a thread with a small stack.
    #[test]
    fn at_limit_queries_run_on_a_small_stack() {
        let handle = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(|| -> Result<Vec<Vec<u32>>> {
                let mut idx = RamTextIndex::new()?;
                idx.extend(["t0 t7 x", "t1 x", "y"].into_iter())?;
                // 32 levels deep around 256 clauses: t0 AND (t1 OR t2 ... ).
                let terms: Vec<String> = (1..MAX_QUERY_CLAUSES / 2)
                    .map(|i| format!("t{i}"))
                    .collect();
                let inner = terms.join(" OR ");
                let deep = format!(
                    "t0 AND {}{inner}{}",
                    "(".repeat(MAX_QUERY_DEPTH),
                    ")".repeat(MAX_QUERY_DEPTH)
                );
                bounds::check(&deep)?;
                // Raw nesting at its limit, half of it inside a phrase.
                let raw = format!(
                    "\"{}\" OR {}x{}",
                    "(".repeat(MAX_QUERY_RAW_DEPTH - MAX_QUERY_DEPTH),
                    "(".repeat(MAX_QUERY_DEPTH),
                    ")".repeat(MAX_QUERY_DEPTH)
                );
                let nots = format!("x {}", "NOT y ".repeat(MAX_QUERY_CLAUSES / 2 - 1));
                // Exactly MAX_QUERY_BYTES: a term and a phrase of 2,046 words no row holds.
                let long = format!("x \"{}\"", "y ".repeat((MAX_QUERY_BYTES - 4) / 2));
                assert_eq!(long.len(), MAX_QUERY_BYTES);
                let mut out = Vec::new();
                for q in [&deep, &raw, &nots, &long] {
                    assert!(q.len() <= MAX_QUERY_BYTES);
                    out.push(idx.search(q)?.iter().collect());
                }
                Ok(out)
            })
            .expect("spawn");
        let got = handle
            .join()
            .expect("no stack overflow")
            .expect("queries run");
        assert_eq!(got, vec![vec![0], vec![0, 1], vec![0, 1], vec![]]);
    }
}
