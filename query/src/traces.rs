//! Trace queries: a trace by id with its critical path, span and trace search with filters on
//! promoted columns and attributes, RED aggregates, tag listings, and the TraceQL subset the
//! Tempo API accepts.
//!
//! Every search pushes what storage can prune into the [`sightline_storage::ScanRequest`] (time
//! range, string matchers on promoted columns and unscoped attributes, a projection of the
//! columns needed) and evaluates the remaining conditions (numeric comparisons, scoped
//! attributes) on the Arrow batches the scan returns. Results carry the scan's
//! [`sightline_storage::ScanStats`] so callers (and tests) can see what was pruned.

pub mod critical_path;
pub mod filter;
pub mod red;
pub mod search;
pub mod tags;
pub mod trace;
pub mod traceql;

pub use critical_path::{PathSegment, PathSpan, critical_path};
pub use filter::{CmpOp, Cond, Scope};
pub use red::{GroupBy, RedQuery, RedResult, red};
pub use search::{
    SortBy, SpanHit, SpanQuery, SpanSearchResult, TraceCursor, TraceHit, TraceSearchResult,
    search_spans, search_traces,
};
pub use tags::{TagNames, TypedValue, tag_names, tag_values};
pub use trace::{TraceView, trace_by_id};
