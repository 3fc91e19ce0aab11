//! Bloom filters per block of rows over the `key=value` pairs of the keys whose postings would
//! not pay for themselves in a segment (many distinct values, each in a few rows: a user id, a
//! conversation id). Postings give such a key's rows exactly but cost about one entry per row
//! plus every value; a bloom per block costs about 1.2 bytes per distinct pair in the block and
//! still skips every block that lacks the value ([`crate::postings`] chooses, per key and
//! segment, by comparing the two). A block is one data page's rows (1,024), so a lookup decodes
//! the pages that may hold the value, as it would with postings; older segments have one bloom
//! per row group.
//!
//! On disk (`attr_blooms.bin`): `magic (8) | crc32c of body (u32 LE) | body`, body =
//! `u32 rows per group | u32 group count`, then per group `u32 length | split-block bloom
//! bitset` (Parquet's `Sbbf`, false-positive rate [`BLOOM_FPP`]). Group `i` covers the segment's
//! rows `[i * rows per group, (i + 1) * rows per group)`.

use std::path::Path;

use parquet::bloom_filter::Sbbf;

use crate::error::{Result, StorageError};

/// File of a segment holding the blooms.
pub const ATTR_BLOOMS_FILE: &str = "attr_blooms.bin";
/// False-positive rate of each bloom: a segment has a bloom per 1,024 rows (about 1,000 of
/// them in 1 M rows), so a lookup would otherwise decode about ten blocks by mistake.
pub const BLOOM_FPP: f64 = 0.001;
const MAGIC: &[u8; 8] = b"SLABLM01";

/// The bytes a pair is hashed from: `u16 key length LE | key | value`.
fn pair(key: &str, value: &str) -> Vec<u8> {
    let k = key.as_bytes();
    let mut out = Vec::with_capacity(2 + k.len() + value.len());
    out.extend_from_slice(&(k.len().min(usize::from(u16::MAX)) as u16).to_le_bytes());
    out.extend_from_slice(k);
    out.extend_from_slice(value.as_bytes());
    out
}

fn read_u32(body: &[u8], pos: &mut usize) -> Option<u32> {
    let b = body.get(*pos..pos.checked_add(4)?)?;
    *pos += 4;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// The blooms of one segment.
pub struct AttrBlooms {
    group_rows: u32,
    groups: Vec<Sbbf>,
}

impl std::fmt::Debug for AttrBlooms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AttrBlooms")
            .field("group_rows", &self.group_rows)
            .field("groups", &self.groups.len())
            .finish()
    }
}

impl AttrBlooms {
    /// Blooms for row groups of `group_rows` rows; `groups[i]` lists the `(key, value)` pairs
    /// of group `i` (each once).
    pub fn build(group_rows: u32, groups: &[Vec<(&str, &str)>]) -> Self {
        let groups = groups
            .iter()
            .map(|pairs| {
                let ndv = pairs.len().max(1) as u64;
                // An fpp in (0, 1) never fails.
                let mut b = Sbbf::new_with_ndv_fpp(ndv, BLOOM_FPP)
                    .unwrap_or_else(|_| Sbbf::new_with_num_of_bytes(32));
                for (k, v) in pairs {
                    b.insert(&pair(k, v)[..]);
                }
                b
            })
            .collect();
        Self { group_rows, groups }
    }

    /// Rows per group.
    pub fn group_rows(&self) -> u32 {
        self.group_rows
    }

    /// Number of groups.
    pub fn len(&self) -> usize {
        self.groups.len()
    }

    /// Whether there are no groups.
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// Whether row group `group` may hold a row with `key=value` (false: certainly not; true
    /// for a group this file does not cover).
    pub fn may_contain(&self, group: usize, key: &str, value: &str) -> bool {
        self.groups
            .get(group)
            .is_none_or(|b| b.check(&pair(key, value)[..]))
    }

    /// Encodes for disk.
    pub fn encode(&self) -> Result<Vec<u8>> {
        let mut body = Vec::new();
        body.extend_from_slice(&self.group_rows.to_le_bytes());
        body.extend_from_slice(&(self.groups.len() as u32).to_le_bytes());
        for b in &self.groups {
            let mut bits = Vec::new();
            b.write_bitset(&mut bits)
                .map_err(|e| StorageError::InvalidInput(format!("bloom: {e}")))?;
            body.extend_from_slice(&(bits.len() as u32).to_le_bytes());
            body.extend_from_slice(&bits);
        }
        let mut out = Vec::with_capacity(body.len() + 12);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&crc32c::crc32c(&body).to_le_bytes());
        out.extend_from_slice(&body);
        Ok(out)
    }

    /// Decodes and verifies; `path` is used in error messages.
    pub fn decode(bytes: &[u8], path: &Path) -> Result<Self> {
        let bad = |d: &str| StorageError::corruption(path, format!("attribute blooms: {d}"));
        if bytes.len() < 12 || &bytes[..8] != MAGIC {
            return Err(bad("bad magic"));
        }
        let crc = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
        let body = &bytes[12..];
        if crc32c::crc32c(body) != crc {
            return Err(bad("checksum mismatch"));
        }
        let mut pos = 0usize;
        let group_rows = read_u32(body, &mut pos).ok_or_else(|| bad("truncated"))?;
        let n = read_u32(body, &mut pos).ok_or_else(|| bad("truncated"))? as usize;
        let mut groups = Vec::with_capacity(n.min(body.len() / 4));
        for _ in 0..n {
            let len = read_u32(body, &mut pos).ok_or_else(|| bad("truncated group"))? as usize;
            let bits = body
                .get(pos..pos.saturating_add(len))
                .ok_or_else(|| bad("truncated bitset"))?;
            if bits.is_empty() || bits.len() % 32 != 0 {
                return Err(bad("bitset is not whole blocks"));
            }
            pos += len;
            groups.push(Sbbf::new(bits));
        }
        if pos != body.len() {
            return Err(bad("trailing bytes"));
        }
        Ok(Self { group_rows, groups })
    }

    /// Bytes on disk, about.
    pub fn encoded_len(&self) -> usize {
        12 + 8
            + self
                .groups
                .iter()
                .map(|b| 4 + b.num_blocks() * 32)
                .sum::<usize>()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_membership() {
        let g0 = vec![("user.id", "u1"), ("user.id", "u2")];
        let g1 = vec![("user.id", "u3"), ("session", "s1")];
        let b = AttrBlooms::build(100, &[g0, g1]);
        let back = AttrBlooms::decode(&b.encode().unwrap(), Path::new("x")).unwrap();
        assert_eq!((back.group_rows(), back.len()), (100, 2));
        for blooms in [&b, &back] {
            assert!(blooms.may_contain(0, "user.id", "u1"));
            assert!(blooms.may_contain(1, "user.id", "u3"));
            assert!(blooms.may_contain(1, "session", "s1"));
            // Beyond the groups: no claim.
            assert!(blooms.may_contain(7, "user.id", "nope"));
        }
        // Absent pairs are (almost always) refused: at 0.1 % fpp, 1000 probes leave few.
        let false_hits = (0..1000)
            .filter(|i| back.may_contain(0, "user.id", &format!("absent-{i}")))
            .count();
        assert!(false_hits < 50, "{false_hits}");
        // The key is part of the pair.
        assert!(!back.may_contain(0, "session", "u1") || !back.may_contain(0, "x", "u1"));
        let mut bytes = b.encode().unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        assert!(AttrBlooms::decode(&bytes, Path::new("x")).is_err());
        assert!(AttrBlooms::decode(&bytes[..20], Path::new("x")).is_err());
    }
}
