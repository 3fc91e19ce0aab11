//! Log queries: search (full text, attribute filters, severity, trace correlation, time range;
//! newest first) and count-over-time histograms ([`search`]), the Loki stream-label model
//! ([`labels`]), and a LogQL subset ([`logql`]).
//!
//! Everything storage can prune on (time range, full-text query, attribute matchers, exact
//! severity text, trace id) goes into the [`ScanRequest`]; what it cannot (minimum severity,
//! span id) is evaluated here on the Arrow batches the scan returns. Every result carries the
//! scan's [`ScanStats`] as `explain`, so tests can assert what was pruned.
//!
//! **Does not:** speak HTTP (the server's `http/logs.rs` and `http/loki.rs` own the wire shapes).

pub mod labels;
pub mod logql;
pub mod search;

pub use labels::{Labels, LineLabels, level_of, line_labels, sanitize_label_name};
pub use search::{
    Direction, Histogram, HistogramGroup, HistogramRequest, HistogramSeries, LogCursor, LogFilter,
    SearchRequest, SearchResult, histogram, search, search_after,
};

use sightline_storage::ScanStats;

/// Longest result any log query returns (lines), whatever `limit` asks for.
pub const MAX_LIMIT: usize = 5000;

/// Most buckets (or evaluation steps) one query may produce.
pub const MAX_BUCKETS: usize = 11_000;

/// Adds the counts of a second scan to `acc` (queries that scan more than once report the sum).
pub fn merge_stats(acc: &mut ScanStats, other: &ScanStats) {
    acc.add(other);
}
