//! A log segment's token index on disk, `text.idx`:
//!
//! ```text
//! magic "SLTXT001" | rows: u32 LE | dictionary length: u64 LE | dictionary | row lists
//! ```
//!
//! The dictionary is an FST map (the `fst` crate) from every token to a `u64`: a token found in
//! one row only has the row inline (`SINGLE | row`, no list); any other has the address of its
//! row list. Row lists are stored in blocks (`varint compressed length | varint length |
//! zstd`, about 64 KiB inflated, in dictionary order); an address is the block's offset from
//! the first byte after the dictionary, shifted left by 20 bits, plus the list's offset in the
//! inflated block. A row list is a varint byte length, a kind byte, then either the rows as
//! varints (`GAPS`: the first row, then the gap to each next one) or a serialized roaring bitmap
//! (`BITMAP`), whichever is smaller. Neither
//! positions nor counts are kept: phrases are verified on the bodies
//! ([`super::query::TextQuery::needs_bodies`]).
//!
//! The dictionary is read on the first search and kept in a process-wide cache of bounded size
//! ([`super::dict_cache`]); a lookup reads (with a positional read) and inflates the one block
//! holding its list, keeping the last block for the search's next lookup; an open segment costs
//! no memory for its text index until it is searched.

use std::cell::RefCell;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;

use fst::{IntoStreamer, Map, MapBuilder, Streamer};
use roaring::RoaringBitmap;

use super::dict_cache::{self, Dict};

use super::query::TermLookup;
use super::terms::{OVERLONG_KEY, RowList, TermRows, get_varint, put_varint};
use crate::error::{IoContext, Result, StorageError};

/// File name of the token index inside a log segment's directory.
pub const TEXT_INDEX_FILE: &str = "text.idx";

const MAGIC: &[u8; 8] = b"SLTXT002";
/// Token indexes written before the rows holding overlong tokens were listed (under
/// [`OVERLONG_KEY`]); read the same way, but [`TermLookup::overlong`] answers `None`.
const MAGIC_V1: &[u8; 8] = b"SLTXT001";
const HEADER_BYTES: u64 = 8 + 4 + 8;
/// Dictionary value flag: the low 32 bits are the token's only row.
const SINGLE: u64 = 1 << 63;
const GAPS: u8 = 0;
const BITMAP: u8 = 1;
/// Inflated bytes after which a block of row lists is closed.
const BLOCK_BYTES: usize = 64 << 10;
/// Bits of a list's offset inside its inflated block (a block closes below 64 KiB, so its last
/// list starts well inside this).
const WITHIN_BITS: u32 = 20;
/// zstd level of row list blocks.
const BLOCK_ZSTD_LEVEL: i32 = 3;
/// Lists with fewer rows stay varints without trying a bitmap (a bitmap's headers alone take
/// more than a few hundred varints).
const BITMAP_MIN_ROWS: u32 = 256;

/// Writes the token index of `bodies` (row `i` is the `i`-th body) to `path`.
pub fn build<'a>(path: &Path, bodies: impl Iterator<Item = &'a str>) -> Result<()> {
    let mut terms = TermRows::default();
    let mut rows = 0u32;
    for body in bodies {
        terms.add(rows, body);
        rows = rows
            .checked_add(1)
            .ok_or_else(|| StorageError::InvalidInput("more than 2^32 log lines".into()))?;
    }
    write(path, rows, terms)
}

fn write(path: &Path, rows: u32, terms: TermRows) -> Result<()> {
    let sorted = terms.into_sorted();
    let mut lists = Blocks::default();
    let mut dict = MapBuilder::memory();
    let mut entry = Vec::new();
    for (term, list) in &sorted {
        let value = if list.len() == 1 {
            SINGLE | u64::from(list.first())
        } else {
            encode_list(list, &mut entry)?;
            lists.push(&entry)?
        };
        dict.insert(term.as_bytes(), value)
            .map_err(|e| StorageError::InvalidInput(format!("token dictionary: {e}")))?;
    }
    drop(sorted);
    let lists = lists.finish()?;
    let dict = dict
        .into_inner()
        .map_err(|e| StorageError::InvalidInput(format!("token dictionary: {e}")))?;
    let file = crate::fsutil::create_private_file(path)?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    w.write_all(MAGIC).at(path)?;
    w.write_all(&rows.to_le_bytes()).at(path)?;
    w.write_all(&(dict.len() as u64).to_le_bytes()).at(path)?;
    w.write_all(&dict).at(path)?;
    w.write_all(&lists).at(path)?;
    w.flush().at(path)
}

/// Row lists grouped into zstd blocks of about [`BLOCK_BYTES`]: a list's address is its
/// block's offset shifted left by [`WITHIN_BITS`], plus its offset inside the inflated block.
#[derive(Default)]
struct Blocks {
    out: Vec<u8>,
    block: Vec<u8>,
}

impl Blocks {
    /// Adds one encoded list (kind byte and payload); returns its dictionary value.
    fn push(&mut self, entry: &[u8]) -> Result<u64> {
        if self.block.len() >= BLOCK_BYTES {
            self.close()?;
        }
        let start = self.out.len() as u64;
        if start >= SINGLE >> WITHIN_BITS {
            return Err(StorageError::InvalidInput("token index over 8 TiB".into()));
        }
        let within = self.block.len() as u64;
        debug_assert!(
            within < 1 << WITHIN_BITS,
            "a block closes before its offsets run out"
        );
        put_varint(
            &mut self.block,
            u32::try_from(entry.len())
                .map_err(|_| StorageError::InvalidInput("row list over 4 GiB".into()))?,
        );
        self.block.extend_from_slice(entry);
        Ok(start << WITHIN_BITS | within)
    }

    fn close(&mut self) -> Result<()> {
        if self.block.is_empty() {
            return Ok(());
        }
        let z = zstd::bulk::compress(&self.block, BLOCK_ZSTD_LEVEL)
            .map_err(|e| StorageError::InvalidInput(format!("row list block: {e}")))?;
        let len = |n: usize| {
            u32::try_from(n)
                .map_err(|_| StorageError::InvalidInput("row list block over 4 GiB".into()))
        };
        put_varint(&mut self.out, len(z.len())?);
        put_varint(&mut self.out, len(self.block.len())?);
        self.out.extend_from_slice(&z);
        self.block.clear();
        Ok(())
    }

    fn finish(mut self) -> Result<Vec<u8>> {
        self.close()?;
        Ok(self.out)
    }
}

/// Encodes one row list (kind byte and payload) into `out`.
fn encode_list(list: &RowList, out: &mut Vec<u8>) -> Result<()> {
    out.clear();
    out.push(GAPS);
    put_varint(out, list.first());
    out.extend_from_slice(list.gaps());
    if list.len() >= BITMAP_MIN_ROWS {
        let mut bitmap = list.bitmap();
        bitmap.optimize();
        if bitmap.serialized_size() + 1 < out.len() {
            out.clear();
            out.push(BITMAP);
            bitmap
                .serialize_into(&mut *out)
                .map_err(|e| StorageError::InvalidInput(format!("row bitmap: {e}")))?;
        }
    }
    Ok(())
}

/// An open `text.idx`.
#[derive(Debug)]
pub struct TokenIndexFile {
    path: PathBuf,
    file: File,
    rows: u32,
    len: u64,
    lists_at: u64,
    dict_len: u64,
    /// The rows holding overlong tokens are listed (`SLTXT002`).
    lists_overlong: bool,
    /// Key of its dictionary in the process-wide [`dict_cache`].
    cache_id: u64,
}

impl Drop for TokenIndexFile {
    fn drop(&mut self) {
        dict_cache::remove(self.cache_id);
    }
}

/// One search's view of a [`TokenIndexFile`]: its dictionary, and the block of row lists read
/// last (a prefix reads neighbouring lists), dropped with the search.
pub struct TokenLookup<'a> {
    file: &'a TokenIndexFile,
    dict: Dict,
    last_block: RefCell<Option<(u64, Rc<Vec<u8>>)>>,
}

impl TokenIndexFile {
    /// Opens `path`, checking its header (the bytes were checksummed with the segment).
    pub fn open(path: &Path) -> Result<Self> {
        let file = File::open(path).at(path)?;
        let len = file.metadata().at(path)?.len();
        let mut header = [0u8; HEADER_BYTES as usize];
        if len < HEADER_BYTES {
            return Err(StorageError::corruption(path, "shorter than its header"));
        }
        file.read_exact_at(&mut header, 0).at(path)?;
        let lists_overlong = match &header[..8] {
            m if m == MAGIC => true,
            m if m == MAGIC_V1 => false,
            _ => return Err(StorageError::corruption(path, "not a token index")),
        };
        let rows = u32::from_le_bytes([header[8], header[9], header[10], header[11]]);
        let mut dict_len = [0u8; 8];
        dict_len.copy_from_slice(&header[12..20]);
        let dict_len = u64::from_le_bytes(dict_len);
        let lists_at = HEADER_BYTES
            .checked_add(dict_len)
            .filter(|&end| end <= len)
            .ok_or_else(|| StorageError::corruption(path, "dictionary runs past the file"))?;
        Ok(Self {
            path: path.to_owned(),
            file,
            rows,
            len,
            lists_at,
            dict_len,
            lists_overlong,
            cache_id: dict_cache::new_id(),
        })
    }

    /// The index ready for one search: its dictionary from the cache, or read from the file
    /// (and kept in the cache when it fits).
    pub fn lookup(&self) -> Result<TokenLookup<'_>> {
        Ok(TokenLookup {
            file: self,
            dict: self.dict()?,
            last_block: RefCell::new(None),
        })
    }

    fn dict(&self) -> Result<Dict> {
        if let Some(d) = dict_cache::get(self.cache_id) {
            return Ok(d);
        }
        let len = usize::try_from(self.dict_len)
            .map_err(|_| StorageError::corruption(&self.path, "dictionary too large"))?;
        let mut bytes = vec![0u8; len];
        self.file
            .read_exact_at(&mut bytes, HEADER_BYTES)
            .at(&self.path)?;
        // The FST's own checksum: its reader trusts its bytes (the segment's checksum was
        // verified at open, this guards against the file changing since).
        let map = Map::new(bytes)
            .and_then(|m| m.as_fst().verify().map(|()| m))
            .map_err(|e| StorageError::corruption(&self.path, e.to_string()))?;
        let map = Arc::new(map);
        dict_cache::insert(self.cache_id, map.clone());
        Ok(map)
    }

    fn corrupt(&self, what: &str) -> StorageError {
        StorageError::corruption(&self.path, what)
    }
}

impl TokenLookup<'_> {
    fn corrupt(&self, what: &str) -> StorageError {
        self.file.corrupt(what)
    }

    /// The inflated block of row lists at `start` (after the dictionary), from the one-block
    /// cache when it was the last one read.
    fn block(&self, start: u64) -> Result<Rc<Vec<u8>>> {
        if let Some((at, b)) = self.last_block.borrow().as_ref()
            && *at == start
        {
            return Ok(b.clone());
        }
        let f = self.file;
        let at = f
            .lists_at
            .checked_add(start)
            .filter(|&at| at < f.len)
            .ok_or_else(|| self.corrupt("row list block offset past the file"))?;
        let mut head = [0u8; 10];
        let n = f.file.read_at(&mut head, at).at(&f.path)?;
        let mut used = 0;
        let (z_len, raw_len) = get_varint(&head[..n], &mut used)
            .zip(get_varint(&head[..n], &mut used))
            .ok_or_else(|| self.corrupt("row list block header"))?;
        let z_at = at + used as u64;
        // No list is longer than a varint per row and its header.
        let raw_max = BLOCK_BYTES as u64 + 6 * u64::from(f.rows) + 64;
        if z_at + u64::from(z_len) > f.len || u64::from(raw_len) > raw_max {
            return Err(self.corrupt("row list block runs past the file"));
        }
        let mut z = vec![0u8; z_len as usize];
        f.file.read_exact_at(&mut z, z_at).at(&f.path)?;
        let raw = zstd::bulk::decompress(&z, raw_len as usize)
            .map_err(|e| self.corrupt(&format!("row list block: {e}")))?;
        if raw.len() != raw_len as usize {
            return Err(self.corrupt("row list block length"));
        }
        let raw = Rc::new(raw);
        *self.last_block.borrow_mut() = Some((start, raw.clone()));
        Ok(raw)
    }

    /// Decodes the dictionary value of one token into `into` (ORed).
    fn read_value(&self, value: u64, into: &mut RoaringBitmap) -> Result<()> {
        if value & SINGLE != 0 {
            into.insert(value as u32);
            return Ok(());
        }
        let block = self.block(value >> WITHIN_BITS)?;
        let mut at = (value & ((1 << WITHIN_BITS) - 1)) as usize;
        let len = get_varint(&block, &mut at).ok_or_else(|| self.corrupt("row list length"))?;
        let entry = at
            .checked_add(len as usize)
            .and_then(|end| block.get(at..end))
            .ok_or_else(|| self.corrupt("row list runs past its block"))?;
        match entry.split_first() {
            Some((&GAPS, body)) => {
                let mut at = 0;
                let mut row = get_varint(body, &mut at).ok_or_else(|| self.corrupt("row list"))?;
                let mut rows = vec![row];
                while at < body.len() {
                    let gap = get_varint(body, &mut at).ok_or_else(|| self.corrupt("row list"))?;
                    row = row
                        .checked_add(gap)
                        .filter(|_| gap > 0)
                        .ok_or_else(|| self.corrupt("row list out of order"))?;
                    rows.push(row);
                }
                let list = RoaringBitmap::from_sorted_iter(rows)
                    .map_err(|_| self.corrupt("row list out of order"))?;
                *into |= list;
            }
            Some((&BITMAP, body)) => {
                *into |= RoaringBitmap::deserialize_from(body)
                    .map_err(|e| self.corrupt(&format!("row bitmap: {e}")))?;
            }
            _ => return Err(self.corrupt("row list of unknown kind")),
        }
        Ok(())
    }
}

impl TokenIndexFile {
    /// Rows indexed (the segment's rows).
    pub fn rows(&self) -> u32 {
        self.rows
    }
}

impl TermLookup for TokenLookup<'_> {
    fn term(&self, term: &str) -> Result<RoaringBitmap> {
        let mut out = RoaringBitmap::new();
        if let Some(v) = self.dict.get(term) {
            self.read_value(v, &mut out)?;
        }
        Ok(out)
    }

    fn tokens_where(
        &self,
        accept: &dyn Fn(&str) -> bool,
        limit: usize,
    ) -> Result<Option<RoaringBitmap>> {
        let mut out = RoaringBitmap::new();
        let mut found = 0;
        let mut stream = self.dict.stream();
        while let Some((key, value)) = stream.next() {
            let Ok(token) = std::str::from_utf8(key) else {
                return Err(self.corrupt("token is not UTF-8"));
            };
            if token == OVERLONG_KEY || !accept(token) {
                continue;
            }
            found += 1;
            if found > limit {
                return Ok(None);
            }
            self.read_value(value, &mut out)?;
        }
        Ok(Some(out))
    }

    fn overlong(&self) -> Result<Option<RoaringBitmap>> {
        if !self.file.lists_overlong {
            return Ok(None);
        }
        self.term(OVERLONG_KEY).map(Some)
    }

    fn prefix(&self, prefix: &str) -> Result<RoaringBitmap> {
        let mut out = RoaringBitmap::new();
        let mut stream = self.dict.range().ge(prefix.as_bytes()).into_stream();
        while let Some((key, value)) = stream.next() {
            if !key.starts_with(prefix.as_bytes()) {
                break;
            }
            self.read_value(value, &mut out)?;
        }
        Ok(out)
    }
}

impl TermLookup for TermRows {
    fn term(&self, term: &str) -> Result<RoaringBitmap> {
        Ok(self.get(term).map(RowList::bitmap).unwrap_or_default())
    }

    fn tokens_where(
        &self,
        accept: &dyn Fn(&str) -> bool,
        limit: usize,
    ) -> Result<Option<RoaringBitmap>> {
        let mut out = RoaringBitmap::new();
        let mut found = 0;
        for (_, list) in self.iter().filter(|(t, _)| *t != OVERLONG_KEY && accept(t)) {
            found += 1;
            if found > limit {
                return Ok(None);
            }
            out |= list.bitmap();
        }
        Ok(Some(out))
    }

    fn overlong(&self) -> Result<Option<RoaringBitmap>> {
        self.term(OVERLONG_KEY).map(Some)
    }

    fn prefix(&self, prefix: &str) -> Result<RoaringBitmap> {
        let mut out = RoaringBitmap::new();
        for (_, list) in self.iter().filter(|(t, _)| t.starts_with(prefix)) {
            out |= list.bitmap();
        }
        Ok(out)
    }
}
