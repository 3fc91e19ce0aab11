//! Full-text search over log bodies: a token index per log segment (`text.idx`), an in-memory
//! one for unflushed log rows (grown on first use), and the queries both answer.
//!
//! Bodies are cut into lower-cased alphanumeric tokens ([`tokens`]); the index maps every token
//! to the rows holding it ([`terms`] while collecting, [`file`] on disk), with neither
//! positions nor counts, so indexing a line costs a hash lookup and a byte or two per token.
//! Queries ([`query`]) use tantivy's query syntax (`timeout AND "tool call"`, `-debug`,
//! `retr*`), terms ANDed by default as users of log search expect. Tokens, prefixes and their
//! boolean combinations are answered from the index alone; a phrase is answered by the rows
//! holding all its tokens, which the scan then checks against their bodies. A query is refused
//! before it is parsed if it is longer than [`MAX_QUERY_BYTES`], nests parentheses deeper than
//! [`MAX_QUERY_DEPTH`] or has more than [`MAX_QUERY_CLAUSES`] terms (see [`bounds`]).

pub mod bounds;
pub mod dict_cache;
pub mod file;
pub mod query;
mod terms;
pub mod tokens;

use roaring::RoaringBitmap;

use crate::error::Result;
pub use bounds::{MAX_QUERY_BYTES, MAX_QUERY_CLAUSES, MAX_QUERY_DEPTH, MAX_QUERY_RAW_DEPTH};
pub use file::{TEXT_INDEX_FILE, TokenIndexFile, TokenLookup, build};
pub use query::{Candidates, TermLookup, TextQuery};
use terms::TermRows;

/// Checks that `query` is within the [`bounds`] and parses, without running it.
pub fn validate_query(query: &str) -> Result<()> {
    TextQuery::parse(query).map(|_| ())
}

/// The token index of unflushed log rows, grown as they are searched.
#[derive(Debug, Default)]
pub struct RamTextIndex {
    terms: TermRows,
    indexed_rows: u32,
}

impl RamTextIndex {
    /// A new, empty index.
    pub fn new() -> Self {
        Self::default()
    }

    /// Rows indexed so far.
    pub fn indexed_rows(&self) -> u32 {
        self.indexed_rows
    }

    /// Indexes further rows, numbered from [`RamTextIndex::indexed_rows`].
    pub fn extend<'a>(&mut self, bodies: impl Iterator<Item = &'a str>) {
        for body in bodies {
            self.terms.add(self.indexed_rows, body);
            self.indexed_rows += 1;
        }
    }

    /// The indexed rows that may match `query`.
    pub fn candidates(&self, query: &TextQuery) -> Result<Candidates> {
        query.candidates(&self.terms, self.indexed_rows)
    }

    /// Approximate heap bytes the index holds.
    pub fn heap_bytes(&self) -> usize {
        self.terms.heap_bytes()
    }
}

/// Rows of `bodies` that match `query`, by evaluating it on each body (for segments without a
/// token index, and for tests).
pub fn matching_rows<'a>(
    query: &TextQuery,
    bodies: impl Iterator<Item = Option<&'a str>>,
) -> RoaringBitmap {
    bodies
        .enumerate()
        .filter(|(_, b)| b.is_some_and(|b| query.matches(b)))
        .map(|(i, _)| i as u32)
        .collect()
}

#[cfg(test)]
mod tests;
