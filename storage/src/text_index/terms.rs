//! The rows of each token while bodies are indexed: one compact list per distinct token, held
//! as delta-encoded varints, so that collecting costs a hash lookup and a byte or two per token
//! occurrence. Shared by the in-memory index of unflushed rows and by the segment file writer.

use roaring::RoaringBitmap;
use rustc_hash::FxHashMap;

use super::tokens::for_each_token_and_overlong;

/// The key under which the rows holding a token too long to index are listed (no token is
/// empty): a literal that may sit inside such a token can only be looked for in those rows.
pub(crate) const OVERLONG_KEY: &str = "";

/// Appends `v` to `out` as a LEB128 varint.
pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads a LEB128 varint of at most 32 bits at `*at`, advancing it; `None` when the bytes end
/// early or the value overflows.
pub(crate) fn get_varint(bytes: &[u8], at: &mut usize) -> Option<u32> {
    let mut v: u32 = 0;
    for shift in (0..35).step_by(7) {
        let b = *bytes.get(*at)?;
        *at += 1;
        let part = u32::from(b & 0x7f);
        if shift == 28 && part > 0x0f {
            return None;
        }
        v |= part << shift;
        if b < 0x80 {
            return Some(v);
        }
    }
    None
}

/// The rows of one token, ascending and distinct: the first kept inline (most tokens of a
/// log segment occur in one row), the rest as varint gaps.
#[derive(Clone, Debug)]
pub(crate) struct RowList {
    first: u32,
    last: u32,
    count: u32,
    gaps: Vec<u8>,
}

impl RowList {
    fn new(row: u32) -> Self {
        Self {
            first: row,
            last: row,
            count: 1,
            gaps: Vec::new(),
        }
    }

    /// Adds `row`, which is at least the last one added (a repeat is ignored).
    fn push(&mut self, row: u32) {
        debug_assert!(row >= self.last, "rows are indexed in ascending order");
        if row > self.last {
            put_varint(&mut self.gaps, row - self.last);
            self.last = row;
            self.count += 1;
        }
    }

    /// Number of rows.
    pub(crate) fn len(&self) -> u32 {
        self.count
    }

    /// The first row.
    pub(crate) fn first(&self) -> u32 {
        self.first
    }

    /// The rows after the first, as varint gaps.
    pub(crate) fn gaps(&self) -> &[u8] {
        &self.gaps
    }

    /// The rows, ascending.
    pub(crate) fn rows(&self) -> impl Iterator<Item = u32> + '_ {
        let mut at = 0;
        let mut row = self.first;
        std::iter::once(self.first).chain(std::iter::from_fn(move || {
            let gap = get_varint(&self.gaps, &mut at)?;
            row += gap;
            Some(row)
        }))
    }

    /// The rows as a bitmap.
    pub(crate) fn bitmap(&self) -> RoaringBitmap {
        RoaringBitmap::from_sorted_iter(self.rows()).unwrap_or_default()
    }

    fn heap_bytes(&self) -> usize {
        self.gaps.capacity()
    }
}

/// Token -> rows, filled body by body in row order.
#[derive(Debug, Default)]
pub(crate) struct TermRows {
    terms: FxHashMap<Box<str>, RowList>,
    scratch: String,
    /// Bytes of token text held as keys.
    key_bytes: usize,
    /// Bytes the row lists' gap buffers hold (their capacities).
    list_bytes: usize,
}

impl TermRows {
    /// Indexes `body` as row `row` (rows must be added in ascending order).
    pub(crate) fn add(&mut self, row: u32, body: &str) {
        let mut overlong = false;
        let mut scratch = std::mem::take(&mut self.scratch);
        for_each_token_and_overlong(
            body,
            &mut scratch,
            |_, token| self.push(token, row),
            || overlong = true,
        );
        self.scratch = scratch;
        if overlong {
            self.push(OVERLONG_KEY, row);
        }
    }

    fn push(&mut self, token: &str, row: u32) {
        match self.terms.get_mut(token) {
            Some(list) => {
                let before = list.heap_bytes();
                list.push(row);
                self.list_bytes += list.heap_bytes() - before;
            }
            None => {
                self.key_bytes += token.len();
                self.terms.insert(token.into(), RowList::new(row));
            }
        }
    }

    /// The rows of `term`.
    pub(crate) fn get(&self, term: &str) -> Option<&RowList> {
        self.terms.get(term)
    }

    /// Every token with its rows, in no order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, &RowList)> {
        self.terms.iter().map(|(k, v)| (&**k, v))
    }

    /// Distinct tokens.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.terms.len()
    }

    /// Every token with its rows, sorted by token bytes (the order of the term dictionary).
    pub(crate) fn into_sorted(self) -> Vec<(Box<str>, RowList)> {
        let mut v: Vec<_> = self.terms.into_iter().collect();
        v.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        v
    }

    /// Approximate heap bytes held (keys, lists and the table itself), kept as rows are added.
    pub(crate) fn heap_bytes(&self) -> usize {
        let per_entry = std::mem::size_of::<(Box<str>, RowList)>() + 1;
        debug_assert_eq!(
            self.list_bytes,
            self.terms.values().map(RowList::heap_bytes).sum::<usize>(),
            "list bytes are kept as lists grow"
        );
        self.key_bytes + self.terms.capacity() * per_entry + self.list_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn varints_round_trip(vals in proptest::collection::vec(any::<u32>(), 0..64)) {
            let mut buf = Vec::new();
            for &v in &vals {
                put_varint(&mut buf, v);
            }
            let mut at = 0;
            let back: Vec<u32> = std::iter::from_fn(|| get_varint(&buf, &mut at)).collect();
            prop_assert_eq!(back, vals);
            prop_assert_eq!(at, buf.len());
        }

        #[test]
        fn row_lists_keep_ascending_distinct_rows(mut rows in proptest::collection::vec(any::<u32>(), 1..200)) {
            rows.sort_unstable();
            let mut list = RowList::new(rows[0]);
            for &r in &rows[1..] {
                list.push(r);
            }
            rows.dedup();
            prop_assert_eq!(list.rows().collect::<Vec<_>>(), rows.clone());
            prop_assert_eq!(list.len() as usize, rows.len());
            prop_assert_eq!(list.bitmap().iter().collect::<Vec<_>>(), rows);
        }
    }

    #[test]
    fn truncated_or_overflowing_varints_are_refused() {
        assert_eq!(get_varint(&[0x80], &mut 0), None);
        assert_eq!(get_varint(&[0xff, 0xff, 0xff, 0xff, 0x1f], &mut 0), None);
        assert_eq!(
            get_varint(&[0xff, 0xff, 0xff, 0xff, 0x0f], &mut 0),
            Some(u32::MAX)
        );
    }

    #[test]
    fn bodies_are_indexed_per_token() {
        let mut t = TermRows::default();
        t.add(0, "Retry after timeout");
        t.add(1, "timeout timeout");
        t.add(5, "ok");
        assert_eq!(t.len(), 4);
        let rows: Vec<u32> = t.get("timeout").expect("indexed").rows().collect();
        assert_eq!(rows, vec![0, 1]);
        assert!(t.get("Retry").is_none());
        let sorted: Vec<String> = t.into_sorted().into_iter().map(|(k, _)| k.into()).collect();
        assert_eq!(sorted, vec!["after", "ok", "retry", "timeout"]);
    }
}
