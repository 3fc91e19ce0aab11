//! Per-segment inverted index: attribute `key=value` -> roaring bitmap of row numbers.
//!
//! Built at flush from the sorted rows of a segment. Spans and logs index their promoted string
//! columns plus string, integer and boolean attributes (span and resource); metric samples index
//! every series label, including `__name__`, over the rows of the series (contiguous, so the
//! bitmaps are runs).
//!
//! A key whose values were not all indexed (value too long, too many distinct values) is marked
//! incomplete: lookups on it answer [`Lookup::Unknown`] and the reader falls back to scanning.
//! A key absent from a segment's postings is absent from all its rows.
//!
//! **Index policy, per key and segment, by measured cost** ([`PostingsBuilder::finish_indexed`]):
//! a key with at least [`MIN_VALUES_FOR_BLOOM`] distinct values whose postings would take at
//! least [`BLOOM_SAVING`] times the bytes of block blooms over the same pairs, and whose
//! values' rows each sit together in one or two blocks of the blooms (at most
//! [`BLOOM_MAX_GROUPS_PER_VALUE`] blocks per value on average: a bloom points to whole blocks, so
//! a lookup decodes every row of each block it points to, attribute maps included, where
//! postings name the value's rows), is indexed by the per-block blooms of
//! [`crate::attr_bloom`] instead: its postings entry keeps no values and is marked
//! [`Postings::in_blooms`], lookups answer [`Lookup::Unknown`], and the reader skips the blocks
//! whose bloom lacks the pair. Integer promoted columns (token counts) get no postings
//! at all: equality on them is rare, and their Parquet statistics stay.
//!
//! On disk: `SLPOST02 | crc32c of the rest (u32 LE) | u32 body length | zstd(body)`, body =
//! `u32 key count`, then per key `u16 len | key | u8 state (0 incomplete, 1 complete, 2 in the
//! blooms) | u32 value count`, per value `u32 len | value | u32 len | roaring`. The body
//! compresses 3-4x (roaring headers, sorted values sharing prefixes) and is read once, when the
//! segment opens. Segments written with `SLPOST01 | crc32c of body | body` stay readable.

use std::collections::BTreeMap;
use std::path::Path;

use regex::Regex;
use roaring::RoaringBitmap;

use crate::attr_bloom::AttrBlooms;
use crate::error::{Result, StorageError};

const MAGIC: &[u8; 8] = b"SLPOST02";
/// The uncompressed format written before postings were compressed.
const MAGIC_V1: &[u8; 8] = b"SLPOST01";
/// zstd level of the body: postings are written once per segment and read once per open.
const ZSTD_LEVEL: i32 = 3;
/// Largest body a postings file may declare: far above any segment's (a segment's rows are
/// bounded), so a damaged length is refused before memory is reserved for it.
const MAX_BODY_BYTES: usize = 1 << 30;

/// Longest value indexed; longer values make their key incomplete.
pub const MAX_VALUE_LEN: usize = 256;
/// Longest key indexed; lookups on longer keys answer [`Lookup::Unknown`].
pub const MAX_KEY_LEN: usize = 1024;
/// Most distinct values indexed per key and segment; past it the key becomes incomplete.
pub const MAX_VALUES_PER_KEY: usize = 100_000;
/// Fewest distinct values of a key indexed by block blooms instead of postings.
pub const MIN_VALUES_FOR_BLOOM: usize = 1024;
/// Blooms replace postings only when the postings would be at least this many times larger.
pub const BLOOM_SAVING: usize = 4;
/// ... and a typical value's rows sit in at most this many blocks on average (values clustered
/// by the segment's order, such as the ids of a conversation or user of one or two traces in
/// trace order). A block is a data page's rows, so a lookup then decodes about the pages its
/// postings would have named.
pub const BLOOM_MAX_GROUPS_PER_VALUE: f64 = 2.0;
/// Bytes of bloom per distinct pair of a block (a split-block bloom at 0.1 % false positives
/// takes about 15 bits, rounded up to a power of two).
const BLOOM_BYTES_PER_PAIR: f64 = 2.4;

const STATE_INCOMPLETE: u8 = 0;
const STATE_COMPLETE: u8 = 1;
const STATE_IN_BLOOMS: u8 = 2;

#[derive(Debug, Default, Clone, PartialEq)]
struct KeyPostings {
    complete: bool,
    /// Not in the postings but in the segment's block blooms (never with `complete`).
    in_blooms: bool,
    values: BTreeMap<String, RoaringBitmap>,
}

/// What [`PostingsBuilder::finish_indexed`] decided, for the segment's statistics.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct IndexSplit {
    /// Keys moved to the block blooms.
    pub bloom_keys: Vec<String>,
    /// Postings bytes those keys would have taken.
    pub postings_bytes_saved: usize,
}

/// The answer of a postings lookup.
#[derive(Debug, Clone, PartialEq)]
pub enum Lookup {
    /// Exactly these rows match.
    Rows(RoaringBitmap),
    /// The postings cannot tell; every row is a candidate.
    Unknown,
}

/// Postings of one segment.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Postings {
    keys: BTreeMap<String, KeyPostings>,
}

/// Accumulates postings while rows are written.
#[derive(Debug, Default)]
pub struct PostingsBuilder {
    keys: BTreeMap<String, KeyPostings>,
}

impl PostingsBuilder {
    /// A new, empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records that `row` has `key=value`.
    pub fn add(&mut self, key: &str, value: &str, row: u32) {
        if key.len() > MAX_KEY_LEN {
            return;
        }
        let entry = match self.keys.get_mut(key) {
            Some(e) => e,
            None => self.keys.entry(key.to_owned()).or_insert(KeyPostings {
                complete: true,
                in_blooms: false,
                values: BTreeMap::new(),
            }),
        };
        if !entry.complete {
            return;
        }
        if value.len() > MAX_VALUE_LEN {
            entry.complete = false;
            entry.values.clear();
            return;
        }
        match entry.values.get_mut(value) {
            Some(b) => {
                b.insert(row);
            }
            None => {
                if entry.values.len() >= MAX_VALUES_PER_KEY {
                    entry.complete = false;
                    entry.values.clear();
                    return;
                }
                let mut b = RoaringBitmap::new();
                b.insert(row);
                entry.values.insert(value.to_owned(), b);
            }
        }
    }

    /// Marks `key` as not fully indexed (its values are not scalar or not indexable).
    pub fn mark_incomplete(&mut self, key: &str) {
        if key.len() > MAX_KEY_LEN {
            return;
        }
        let entry = self.keys.entry(key.to_owned()).or_default();
        entry.complete = false;
        entry.values.clear();
    }

    /// Records that rows `rows` all have `key=value` (used for contiguous metric series).
    pub fn add_range(&mut self, key: &str, value: &str, rows: std::ops::Range<u32>) {
        if rows.is_empty() {
            return;
        }
        self.add(key, value, rows.start);
        if let Some(b) = self
            .keys
            .get_mut(key)
            .filter(|e| e.complete)
            .and_then(|e| e.values.get_mut(value))
        {
            b.insert_range(rows);
        }
    }

    /// Records that every row of `rows` (ascending) has `key=value`: one key and value lookup
    /// for the whole group, which is how flushes add the rows of a column grouped by value.
    pub fn add_rows(&mut self, key: &str, value: &str, rows: &[u32]) {
        let Some(&first) = rows.first() else {
            return;
        };
        self.add(key, value, first);
        if let Some(b) = self
            .keys
            .get_mut(key)
            .filter(|e| e.complete)
            .and_then(|e| e.values.get_mut(value))
        {
            b.extend(rows[1..].iter().copied());
        }
    }

    /// Finishes the postings, run-compressing the bitmaps.
    pub fn finish(mut self) -> Postings {
        for k in self.keys.values_mut() {
            for b in k.values.values_mut() {
                b.optimize();
            }
        }
        Postings { keys: self.keys }
    }

    /// Finishes the postings of a segment whose row groups hold `group_rows` rows each,
    /// moving the keys the index policy (module docs) picks into block blooms; the blooms
    /// are `None` when no key was moved.
    pub fn finish_indexed(self, group_rows: u32) -> (Postings, Option<AttrBlooms>, IndexSplit) {
        let mut postings = self.finish();
        let group_rows = group_rows.max(1);
        let mut split = IndexSplit::default();
        let n_groups = postings
            .keys
            .values()
            .flat_map(|k| k.values.values())
            .filter_map(RoaringBitmap::max)
            .max()
            .map_or(0, |m| (m / group_rows) as usize + 1);
        // Per group, the pairs of the moved keys.
        let mut pairs: Vec<Vec<(String, String)>> = vec![Vec::new(); n_groups];
        for (key, kp) in postings.keys.iter_mut() {
            if !kp.complete || kp.values.len() < MIN_VALUES_FOR_BLOOM || n_groups == 0 {
                continue;
            }
            let mut postings_bytes = 0usize;
            let mut touched = 0usize;
            let mut groups_of: Vec<Vec<usize>> = Vec::with_capacity(kp.values.len());
            for (v, b) in &kp.values {
                postings_bytes += 8 + v.len() + b.serialized_size();
                let mut gs: Vec<usize> = Vec::new();
                for row in b {
                    let g = (row / group_rows) as usize;
                    if gs.last() != Some(&g) {
                        gs.push(g);
                    }
                }
                touched += gs.len();
                groups_of.push(gs);
            }
            let bloom_bytes = (touched as f64 * BLOOM_BYTES_PER_PAIR) as usize;
            let clustered = touched as f64 <= kp.values.len() as f64 * BLOOM_MAX_GROUPS_PER_VALUE;
            if bloom_bytes.saturating_mul(BLOOM_SAVING) > postings_bytes || !clustered {
                continue;
            }
            for ((v, _), gs) in kp.values.iter().zip(&groups_of) {
                for &g in gs {
                    if let Some(p) = pairs.get_mut(g) {
                        p.push((key.clone(), v.clone()));
                    }
                }
            }
            split.bloom_keys.push(key.clone());
            split.postings_bytes_saved += postings_bytes;
            kp.complete = false;
            kp.in_blooms = true;
            kp.values.clear();
        }
        if split.bloom_keys.is_empty() {
            return (postings, None, split);
        }
        let refs: Vec<Vec<(&str, &str)>> = pairs
            .iter()
            .map(|g| g.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect())
            .collect();
        let blooms = AttrBlooms::build(group_rows, &refs);
        (postings, Some(blooms), split)
    }
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let s = self.buf.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
    fn u16(&mut self) -> Option<u16> {
        self.take(2).map(|b| u16::from_le_bytes([b[0], b[1]]))
    }
    fn u32(&mut self) -> Option<u32> {
        self.take(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn str(&mut self, n: usize) -> Option<&'a str> {
        std::str::from_utf8(self.take(n)?).ok()
    }
}

impl Postings {
    /// The uncompressed body (see the module doc).
    fn body(&self) -> Vec<u8> {
        let mut body = Vec::new();
        body.extend_from_slice(&(self.keys.len() as u32).to_le_bytes());
        for (key, kp) in &self.keys {
            let key = key.as_bytes();
            body.extend_from_slice(&(key.len() as u16).to_le_bytes());
            body.extend_from_slice(key);
            body.push(if kp.in_blooms {
                STATE_IN_BLOOMS
            } else if kp.complete {
                STATE_COMPLETE
            } else {
                STATE_INCOMPLETE
            });
            body.extend_from_slice(&(kp.values.len() as u32).to_le_bytes());
            for (v, bitmap) in &kp.values {
                body.extend_from_slice(&(v.len() as u32).to_le_bytes());
                body.extend_from_slice(v.as_bytes());
                body.extend_from_slice(&(bitmap.serialized_size() as u32).to_le_bytes());
                // Writing into a Vec cannot fail.
                let _ = bitmap.serialize_into(&mut body);
            }
        }
        body
    }

    /// Encodes for disk.
    pub fn encode(&self) -> Vec<u8> {
        let body = self.body();
        let mut rest = Vec::with_capacity(body.len() / 3 + 16);
        rest.extend_from_slice(&(body.len() as u32).to_le_bytes());
        // Compressing into a Vec fails only on allocation failure, which aborts anyway; the
        // uncompressed body is the fallback so that encoding stays infallible.
        match zstd::bulk::compress(&body, ZSTD_LEVEL) {
            Ok(z) => rest.extend_from_slice(&z),
            Err(_) => return Self::encode_v1(body),
        }
        let mut out = Vec::with_capacity(rest.len() + 12);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&crc32c::crc32c(&rest).to_le_bytes());
        out.extend_from_slice(&rest);
        out
    }

    fn encode_v1(body: Vec<u8>) -> Vec<u8> {
        let mut out = Vec::with_capacity(body.len() + 12);
        out.extend_from_slice(MAGIC_V1);
        out.extend_from_slice(&crc32c::crc32c(&body).to_le_bytes());
        out.extend_from_slice(&body);
        out
    }

    /// Decodes and verifies; `path` is used in error messages.
    pub fn decode(bytes: &[u8], path: &Path) -> Result<Self> {
        let bad = |d: &str| StorageError::corruption(path, format!("postings: {d}"));
        if bytes.len() < 12 {
            return Err(bad("bad magic"));
        }
        let crc = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
        let rest = &bytes[12..];
        if &bytes[..8] != MAGIC && &bytes[..8] != MAGIC_V1 {
            return Err(bad("bad magic"));
        }
        if crc32c::crc32c(rest) != crc {
            return Err(bad("checksum mismatch"));
        }
        let inflated;
        let body = if &bytes[..8] == MAGIC_V1 {
            rest
        } else {
            let (len, z) = rest.split_at_checked(4).ok_or_else(|| bad("truncated"))?;
            let len = u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize;
            if len > MAX_BODY_BYTES {
                return Err(bad(&format!("declared body of {len} bytes")));
            }
            inflated = zstd::bulk::decompress(z, len).map_err(|e| bad(&format!("zstd: {e}")))?;
            if inflated.len() != len {
                return Err(bad("body shorter than declared"));
            }
            &inflated[..]
        };
        let mut r = Reader { buf: body, pos: 0 };
        let n_keys = r.u32().ok_or_else(|| bad("truncated"))?;
        let mut keys = BTreeMap::new();
        for _ in 0..n_keys {
            let klen = r.u16().ok_or_else(|| bad("truncated key"))? as usize;
            let key = r.str(klen).ok_or_else(|| bad("bad key"))?.to_owned();
            let state = r.u8().ok_or_else(|| bad("truncated"))?;
            if state > STATE_IN_BLOOMS {
                return Err(bad("unknown key state"));
            }
            let (complete, in_blooms) = (state == STATE_COMPLETE, state == STATE_IN_BLOOMS);
            let n_values = r.u32().ok_or_else(|| bad("truncated"))?;
            let mut values = BTreeMap::new();
            for _ in 0..n_values {
                let vlen = r.u32().ok_or_else(|| bad("truncated value"))? as usize;
                let value = r.str(vlen).ok_or_else(|| bad("bad value"))?.to_owned();
                let blen = r.u32().ok_or_else(|| bad("truncated bitmap"))? as usize;
                let raw = r.take(blen).ok_or_else(|| bad("truncated bitmap"))?;
                let bitmap = RoaringBitmap::deserialize_from(raw)
                    .map_err(|e| bad(&format!("bitmap: {e}")))?;
                values.insert(value, bitmap);
            }
            if in_blooms && !values.is_empty() {
                return Err(bad("a key in the blooms lists values"));
            }
            keys.insert(
                key,
                KeyPostings {
                    complete,
                    in_blooms,
                    values,
                },
            );
        }
        if r.pos != body.len() {
            return Err(bad("trailing bytes"));
        }
        Ok(Self { keys })
    }

    /// Rows where `key` equals `value` exactly.
    pub fn equals(&self, key: &str, value: &str) -> Lookup {
        if key.len() > MAX_KEY_LEN {
            return Lookup::Unknown;
        }
        match self.keys.get(key) {
            None => Lookup::Rows(RoaringBitmap::new()),
            Some(kp) if !kp.complete => Lookup::Unknown,
            Some(kp) => Lookup::Rows(kp.values.get(value).cloned().unwrap_or_default()),
        }
    }

    /// Rows where `key` has a value accepted by `accept` (any matcher that rejects the missing
    /// value: `!= ""`, `!~ "..."` that rejects "", regexes).
    pub fn accepted(&self, key: &str, accept: impl Fn(&str) -> bool) -> Lookup {
        if key.len() > MAX_KEY_LEN {
            return Lookup::Unknown;
        }
        match self.keys.get(key) {
            None => Lookup::Rows(RoaringBitmap::new()),
            Some(kp) if !kp.complete => Lookup::Unknown,
            Some(kp) => {
                let mut out = RoaringBitmap::new();
                for (v, b) in &kp.values {
                    if accept(v) {
                        out |= b;
                    }
                }
                Lookup::Rows(out)
            }
        }
    }

    /// Rows where `key` has a value fully matching `re` (the caller anchors it).
    pub fn matching(&self, key: &str, re: &Regex) -> Lookup {
        self.accepted(key, |v| re.is_match(v))
    }

    /// Distinct indexed values of `key` (empty when unknown or incomplete).
    pub fn values(&self, key: &str) -> impl Iterator<Item = &str> {
        self.keys
            .get(key)
            .into_iter()
            .flat_map(|kp| kp.values.keys().map(String::as_str))
    }

    /// Whether `key` is indexed by the segment's block blooms instead of postings.
    pub fn in_blooms(&self, key: &str) -> bool {
        self.keys.get(key).is_some_and(|k| k.in_blooms)
    }

    /// Indexed keys.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.keys.keys().map(String::as_str)
    }

    /// Approximate heap bytes.
    pub fn heap_size(&self) -> usize {
        self.keys
            .iter()
            .map(|(k, kp)| {
                k.len()
                    + kp.values
                        .iter()
                        .map(|(v, b)| v.len() + b.serialized_size() + 32)
                        .sum::<usize>()
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn round_trip_and_lookup(entries in prop::collection::vec(("[a-c]{1,2}", "[x-z]{0,3}", 0u32..500), 0..200)) {
            let mut b = PostingsBuilder::new();
            for (k, v, r) in &entries {
                b.add(k, v, *r);
            }
            let p = b.finish();
            let back = Postings::decode(&p.encode(), Path::new("p")).expect("decode");
            prop_assert_eq!(&back, &p);
            for (k, v, _) in &entries {
                let expect: RoaringBitmap = entries.iter().filter(|(k2, v2, _)| k2 == k && v2 == v).map(|e| e.2).collect();
                prop_assert_eq!(back.equals(k, v), Lookup::Rows(expect));
            }
        }

        #[test]
        fn decode_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
            let _ = Postings::decode(&bytes, Path::new("p"));
        }
    }

    #[test]
    fn incomplete_keys_answer_unknown() {
        let mut b = PostingsBuilder::new();
        b.add("k", "short", 1);
        b.add("k", &"x".repeat(MAX_VALUE_LEN + 1), 2);
        b.add_range("svc", "a", 10..20);
        let p = b.finish();
        assert_eq!(p.equals("k", "short"), Lookup::Unknown);
        assert_eq!(p.equals("absent", "v"), Lookup::Rows(RoaringBitmap::new()));
        let re = Regex::new("^(?:a|b)$").expect("regex");
        match p.matching("svc", &re) {
            Lookup::Rows(r) => assert_eq!(r.len(), 10),
            Lookup::Unknown => panic!("svc is complete"),
        }
    }

    #[test]
    fn the_policy_moves_only_keys_whose_blooms_pay() {
        let mut b = PostingsBuilder::new();
        let (rows, group) = (64_000u32, 1_000u32);
        for row in 0..rows {
            // 8,000 users, 8 consecutive rows each: one or two groups per user.
            b.add("user", &format!("u{}", row / 8), row);
            // 2,000 values spread over every group: blooms would not prune.
            b.add("spread", &format!("s{}", row % 2_000), row);
            // Few values: postings stay.
            b.add("tier", ["free", "pro"][(row % 2) as usize], row);
            // 4,000 values in runs of 4 rows, each value in 4 groups: blooms would be far
            // smaller, but a lookup would decode 4 whole groups for 16 rows.
            b.add("session", &format!("x{}", (row / 4) % 4_000), row);
        }
        let (p, blooms, split) = b.finish_indexed(group);
        assert_eq!(split.bloom_keys, vec!["user".to_owned()]);
        assert!(split.postings_bytes_saved > 0);
        let blooms = blooms.expect("blooms for user");
        assert_eq!((blooms.len(), blooms.group_rows()), (64, group));
        assert!(blooms.may_contain(0, "user", "u3"));
        assert!(blooms.may_contain(63, "user", "u7999"));
        assert!(p.in_blooms("user") && !p.in_blooms("spread") && !p.in_blooms("session"));
        assert_eq!(p.equals("user", "u3"), Lookup::Unknown);
        assert!(matches!(p.equals("spread", "s1"), Lookup::Rows(r) if r.len() == 32));
        // The state survives encoding; an unknown state is corruption.
        let back = Postings::decode(&p.encode(), Path::new("p")).expect("decode");
        assert_eq!(back, p);
        let mut bad = PostingsBuilder::new();
        bad.add("k", "v", 0);
        let mut bytes = Postings::encode_v1(bad.finish().body());
        // body: u32 keys | u16 len | "k" | state
        let state_at = 12 + 4 + 2 + 1;
        bytes[state_at] = 3;
        let body_crc = crc32c::crc32c(&bytes[12..]);
        bytes[8..12].copy_from_slice(&body_crc.to_le_bytes());
        assert!(Postings::decode(&bytes, Path::new("p")).is_err());
    }

    #[test]
    fn compressed_files_are_smaller_and_uncompressed_ones_stay_readable() {
        let mut b = PostingsBuilder::new();
        for row in 0..50_000u32 {
            b.add("user.id", &format!("user-{:05}", (row * 7919) % 9_973), row);
            b.add(
                "service.name",
                ["gateway", "retriever", "llm"][(row % 3) as usize],
                row,
            );
        }
        let p = b.finish();
        let (v2, v1) = (p.encode(), Postings::encode_v1(p.body()));
        assert_eq!(&v2[..8], MAGIC);
        assert!(
            v2.len() * 2 < v1.len(),
            "{} B compressed, {} B not",
            v2.len(),
            v1.len()
        );
        for bytes in [&v2, &v1] {
            assert_eq!(Postings::decode(bytes, Path::new("p")).expect("decode"), p);
        }
        // A declared body length past the limit is refused before anything is inflated; one
        // that disagrees with the compressed body is corruption.
        for len in [u32::MAX, (v1.len() as u32) * 4] {
            let mut bytes = v2.clone();
            bytes[12..16].copy_from_slice(&len.to_le_bytes());
            let crc = crc32c::crc32c(&bytes[12..]);
            bytes[8..12].copy_from_slice(&crc.to_le_bytes());
            assert!(
                Postings::decode(&bytes, Path::new("p")).is_err(),
                "length {len}"
            );
        }
    }
}
