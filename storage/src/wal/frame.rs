//! WAL record framing: `len: u32 LE | crc32c: u32 LE | lsn: u64 LE | payload[len]`.
//!
//! The checksum covers the LSN and the payload, so a record whose length field survived but
//! whose bytes did not is caught, and so is a record replayed at the wrong position. A file
//! starts with an 8-byte magic that names the format version.

use crate::types::Lsn;

/// Magic + format version at the start of every WAL file.
pub const FILE_MAGIC: &[u8; 8] = b"SLWAL\0\0\x01";
/// Bytes of framing before each payload.
pub const HEADER_LEN: usize = 16;
/// Largest payload accepted; anything larger in a length field is treated as corruption.
pub const MAX_PAYLOAD_LEN: usize = 256 << 20;

/// Appends one framed record to `out`.
pub fn encode(lsn: Lsn, payload: &[u8], out: &mut Vec<u8>) {
    out.reserve(HEADER_LEN + payload.len());
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&checksum(lsn, payload).to_le_bytes());
    out.extend_from_slice(&lsn.0.to_le_bytes());
    out.extend_from_slice(payload);
}

fn checksum(lsn: Lsn, payload: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(&lsn.0.to_le_bytes()), payload)
}

/// Why decoding stopped before the end of the buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stop {
    /// The buffer ended inside a record: a torn write.
    Torn,
    /// A record's checksum, length or LSN order is wrong.
    Corrupt(String),
}

/// The outcome of decoding a buffer of framed records.
#[derive(Debug)]
pub struct Decoded<'a> {
    /// Records in order, each with its LSN and payload.
    pub records: Vec<(Lsn, &'a [u8])>,
    /// Bytes of `buf` covered by good records; everything past it is to be truncated.
    pub valid_len: usize,
    /// Why decoding stopped early, if it did.
    pub stop: Option<Stop>,
}

/// Decodes records from `buf` (the bytes after the file magic) until the end or the first bad
/// record. LSNs must increase strictly, starting above `after`.
pub fn decode(buf: &[u8], after: Lsn) -> Decoded<'_> {
    let mut records = Vec::new();
    let mut pos = 0usize;
    let mut last = after;
    let stop = loop {
        let rest = &buf[pos..];
        if rest.is_empty() {
            break None;
        }
        if rest.len() < HEADER_LEN {
            break Some(Stop::Torn);
        }
        let len = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        let crc = u32::from_le_bytes([rest[4], rest[5], rest[6], rest[7]]);
        let mut lsn_bytes = [0u8; 8];
        lsn_bytes.copy_from_slice(&rest[8..16]);
        let lsn = Lsn(u64::from_le_bytes(lsn_bytes));
        if len > MAX_PAYLOAD_LEN {
            break Some(Stop::Corrupt(format!(
                "record length {len} exceeds the maximum"
            )));
        }
        if rest.len() < HEADER_LEN + len {
            break Some(Stop::Torn);
        }
        let payload = &rest[HEADER_LEN..HEADER_LEN + len];
        if checksum(lsn, payload) != crc {
            break Some(Stop::Corrupt(format!(
                "checksum mismatch at offset {pos} (lsn {})",
                lsn.0
            )));
        }
        if lsn <= last {
            break Some(Stop::Corrupt(format!(
                "lsn {} at offset {pos} does not follow {}",
                lsn.0, last.0
            )));
        }
        last = lsn;
        records.push((lsn, payload));
        pos += HEADER_LEN + len;
    };
    Decoded {
        records,
        valid_len: pos,
        stop,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn encode_all(recs: &[Vec<u8>]) -> Vec<u8> {
        let mut buf = Vec::new();
        for (i, r) in recs.iter().enumerate() {
            encode(Lsn(i as u64 + 1), r, &mut buf);
        }
        buf
    }

    proptest! {
        #[test]
        fn round_trip(recs in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..300), 0..20)) {
            let buf = encode_all(&recs);
            let d = decode(&buf, Lsn(0));
            prop_assert_eq!(d.stop, None);
            prop_assert_eq!(d.valid_len, buf.len());
            prop_assert_eq!(d.records.len(), recs.len());
            for (i, (lsn, p)) in d.records.iter().enumerate() {
                prop_assert_eq!(lsn.0, i as u64 + 1);
                prop_assert_eq!(*p, recs[i].as_slice());
            }
        }

        /// Cutting the log at any byte replays exactly the records that were complete.
        #[test]
        fn every_cut_replays_a_prefix(recs in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..64), 1..8)) {
            let buf = encode_all(&recs);
            let mut ends = Vec::new();
            let mut acc = 0;
            for r in &recs {
                acc += HEADER_LEN + r.len();
                ends.push(acc);
            }
            for cut in 0..=buf.len() {
                let d = decode(&buf[..cut], Lsn(0));
                let complete = ends.iter().filter(|&&e| e <= cut).count();
                prop_assert_eq!(d.records.len(), complete);
                prop_assert_eq!(d.valid_len, if complete == 0 { 0 } else { ends[complete - 1] });
                prop_assert_eq!(d.stop.is_some(), cut != d.valid_len);
                for (i, (_, p)) in d.records.iter().enumerate() {
                    prop_assert_eq!(*p, recs[i].as_slice());
                }
            }
        }

        /// A flipped byte anywhere is detected: decoding never returns a record that differs
        /// from what was written.
        #[test]
        fn flipped_byte_never_yields_wrong_data(
            recs in prop::collection::vec(prop::collection::vec(any::<u8>(), 1..64), 1..6),
            at in any::<prop::sample::Index>(),
            mask in 1u8..=255,
        ) {
            let mut buf = encode_all(&recs);
            let i = at.index(buf.len());
            buf[i] ^= mask;
            let d = decode(&buf, Lsn(0));
            for (j, (_, p)) in d.records.iter().enumerate() {
                prop_assert_eq!(*p, recs[j].as_slice());
            }
            prop_assert!(d.records.len() < recs.len() || d.stop.is_none());
            prop_assert!(d.stop.is_some());
        }
    }

    #[test]
    fn rejects_non_increasing_lsn() {
        let mut buf = Vec::new();
        encode(Lsn(5), b"a", &mut buf);
        encode(Lsn(5), b"b", &mut buf);
        let d = decode(&buf, Lsn(0));
        assert_eq!(d.records.len(), 1);
        assert!(matches!(d.stop, Some(Stop::Corrupt(_))));
        let d = decode(&buf, Lsn(7));
        assert!(d.records.is_empty());
    }
}
