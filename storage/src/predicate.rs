//! Scan requests and predicates, and their exact evaluation on Arrow batches.
//!
//! A predicate is first used to prune (postings, bloom filters, the text index, statistics) and
//! then evaluated exactly on the rows that survive, so pruning can only make a scan faster,
//! never change its answer.
//!
//! Attribute matchers follow Prometheus semantics: a missing attribute has the value `""`, so
//! `k != "v"` matches rows without `k`, and regexes are anchored at both ends.

use std::borrow::Cow;

use arrow_array::{
    Array, ArrayRef, BooleanArray, Int32Array, Int64Array, MapArray, RecordBatch, StringArray,
    UInt8Array,
};
use regex::Regex;

use crate::columnar::AttrReader;
use crate::deadline::Deadline;
use crate::error::{Result, StorageError};
use crate::model::{SpanKind, StatusCode};
use crate::schema::{self, col};
use crate::types::{Signal, TenantId, TimeRange, TraceId};

/// Comparison of an attribute matcher.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum MatchOp {
    /// `=`
    Eq,
    /// `!=`
    NotEq,
    /// `=~` (anchored)
    Regex,
    /// `!~` (anchored)
    NotRegex,
}

/// `key op value` on an attribute, promoted column or metric label.
#[derive(Clone, Debug)]
pub struct Matcher {
    /// Attribute key (OpenTelemetry naming) or label name.
    pub key: String,
    /// Comparison.
    pub op: MatchOp,
    /// Literal or regex source.
    pub value: String,
    re: Option<Regex>,
}

/// Longest regex source accepted.
pub const MAX_REGEX_LEN: usize = 4096;

impl Matcher {
    /// Builds a matcher, compiling regexes anchored as `^(?:value)$`.
    pub fn new(key: impl Into<String>, op: MatchOp, value: impl Into<String>) -> Result<Self> {
        let key = key.into();
        let value = value.into();
        let re = match op {
            MatchOp::Regex | MatchOp::NotRegex => {
                if value.len() > MAX_REGEX_LEN {
                    return Err(StorageError::InvalidQuery(format!(
                        "regex longer than {MAX_REGEX_LEN} bytes"
                    )));
                }
                Some(
                    regex::RegexBuilder::new(&format!("^(?:{value})$"))
                        .size_limit(1 << 20)
                        .build()
                        .map_err(|e| {
                            StorageError::InvalidQuery(format!("bad regex {value:?}: {e}"))
                        })?,
                )
            }
            _ => None,
        };
        Ok(Self { key, op, value, re })
    }

    /// Shorthand for an equality matcher.
    pub fn eq(key: impl Into<String>, value: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            op: MatchOp::Eq,
            value: value.into(),
            re: None,
        }
    }

    /// Whether `v` satisfies the matcher.
    pub fn matches(&self, v: &str) -> bool {
        match self.op {
            MatchOp::Eq => v == self.value,
            MatchOp::NotEq => v != self.value,
            MatchOp::Regex => self.re.as_ref().is_some_and(|r| r.is_match(v)),
            MatchOp::NotRegex => !self.re.as_ref().is_some_and(|r| r.is_match(v)),
        }
    }

    /// Whether rows lacking the key match (then postings cannot narrow the scan).
    pub fn matches_missing(&self) -> bool {
        self.matches("")
    }

    /// The compiled regex for `=~` and `!~`.
    pub fn regex(&self) -> Option<&Regex> {
        self.re.as_ref()
    }
}

/// One condition of a scan.
#[derive(Clone, Debug)]
pub enum Predicate {
    /// An attribute, promoted column or (for samples) series label matcher.
    Attr(Matcher),
    /// Rows of one trace (spans and logs).
    TraceId(TraceId),
    /// Log bodies matching a full-text query (logs only).
    FullText(String),
}

/// What to read: the rows of one tenant and signal in a time range that satisfy every predicate.
#[derive(Clone, Debug)]
pub struct ScanRequest {
    /// Tenant whose data is read (no other tenant's rows are ever returned).
    pub tenant: TenantId,
    /// Signal read.
    pub signal: Signal,
    /// Time range on the signal's time column.
    pub time: TimeRange,
    /// Conditions, all of which must hold.
    pub predicates: Vec<Predicate>,
    /// Columns to return (all when `None`); predicate columns need not be included.
    pub projection: Option<Vec<String>>,
    /// Spans: let segments answer from their rollups where that is exact (see
    /// [`crate::rollup`]); their rows come back in [`crate::ScanResult::rollups`] with the
    /// rollup schema, the other segments' rows in `batches` as usual.
    pub rollups: bool,
    /// With `rollups`: also return each rollup row's sorted span durations (column
    /// [`crate::rollup::DURATIONS`]), for exact latency quantiles.
    pub rollup_durations: bool,
    /// When the scan must stop: it checks between segments, row groups, decoded batches and
    /// memtable batches and fails with [`StorageError::DeadlineExceeded`] once this expires.
    pub deadline: Deadline,
}

impl ScanRequest {
    /// All rows of a signal in a time range.
    pub fn new(tenant: TenantId, signal: Signal, time: TimeRange) -> Self {
        Self {
            tenant,
            signal,
            time,
            predicates: Vec::new(),
            projection: None,
            rollups: false,
            rollup_durations: false,
            deadline: Deadline::none(),
        }
    }

    /// Sets the deadline.
    pub fn until(mut self, deadline: Deadline) -> Self {
        self.deadline = deadline;
        self
    }

    /// Adds a predicate.
    pub fn with(mut self, p: Predicate) -> Self {
        self.predicates.push(p);
        self
    }

    /// Sets the projection.
    pub fn project(mut self, columns: &[&str]) -> Self {
        self.projection = Some(columns.iter().map(|c| (*c).to_owned()).collect());
        self
    }

    /// Checks that predicates and projection fit the signal.
    pub fn validate(&self) -> Result<()> {
        let schema = schema::of(self.signal);
        if let Some(p) = &self.projection {
            for c in p {
                if schema.index_of(c).is_err() {
                    return Err(StorageError::InvalidQuery(format!(
                        "{} have no column {c:?}",
                        self.signal
                    )));
                }
            }
        }
        for p in &self.predicates {
            match p {
                Predicate::FullText(q) => {
                    if self.signal != Signal::Logs {
                        return Err(StorageError::InvalidQuery(
                            "full-text search applies to logs only".into(),
                        ));
                    }
                    crate::text_index::TextIndex::validate_query(q)?;
                }
                Predicate::TraceId(_) if self.signal == Signal::Samples => {
                    return Err(StorageError::InvalidQuery(
                        "metric samples carry no trace id".into(),
                    ));
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// Renders the cells of one promoted column as the strings matchers compare against.
pub(crate) enum CellRenderer<'a> {
    Str(&'a StringArray),
    Int64(&'a Int64Array),
    Int32(&'a Int32Array),
    Status(&'a UInt8Array),
    Kind(&'a UInt8Array),
}

/// Lowercase span kind name.
pub fn span_kind_name(code: u8) -> &'static str {
    match SpanKind::from_code(i32::from(code)) {
        SpanKind::Unspecified => "unspecified",
        SpanKind::Internal => "internal",
        SpanKind::Server => "server",
        SpanKind::Client => "client",
        SpanKind::Producer => "producer",
        SpanKind::Consumer => "consumer",
    }
}

impl<'a> CellRenderer<'a> {
    pub(crate) fn new(column_name: &str, array: &'a ArrayRef) -> Option<Self> {
        let any = array.as_any();
        if column_name == col::STATUS_CODE {
            return any.downcast_ref().map(CellRenderer::Status);
        }
        if column_name == col::SPAN_KIND {
            return any.downcast_ref().map(CellRenderer::Kind);
        }
        if let Some(a) = any.downcast_ref() {
            return Some(CellRenderer::Str(a));
        }
        if let Some(a) = any.downcast_ref() {
            return Some(CellRenderer::Int64(a));
        }
        any.downcast_ref().map(CellRenderer::Int32)
    }

    pub(crate) fn render(&self, row: usize) -> Cow<'a, str> {
        match self {
            CellRenderer::Str(a) if a.is_null(row) => Cow::Borrowed(""),
            CellRenderer::Str(a) => Cow::Borrowed(a.value(row)),
            CellRenderer::Int64(a) if a.is_null(row) => Cow::Borrowed(""),
            CellRenderer::Int64(a) => Cow::Owned(a.value(row).to_string()),
            CellRenderer::Int32(a) => Cow::Owned(a.value(row).to_string()),
            CellRenderer::Status(a) => {
                Cow::Borrowed(StatusCode::from_code(i32::from(a.value(row))).as_str())
            }
            CellRenderer::Kind(a) => Cow::Borrowed(span_kind_name(a.value(row))),
        }
    }
}

/// Evaluates `m` on every row of a span or log batch: the promoted column when the key has one,
/// else the span/log attribute, else the resource attribute, else `""`.
pub(crate) fn eval_matcher(
    batch: &RecordBatch,
    signal: Signal,
    m: &Matcher,
) -> Result<BooleanArray> {
    let n = batch.num_rows();
    if let Some(column) = schema::promoted_column(signal, &m.key) {
        let array = batch
            .column_by_name(column)
            .ok_or_else(|| StorageError::InvalidQuery(format!("column {column} not read")))?;
        let r = CellRenderer::new(column, array)
            .ok_or_else(|| StorageError::corruption("<batch>", format!("column {column} type")))?;
        return Ok((0..n).map(|i| Some(m.matches(&r.render(i)))).collect());
    }
    let attrs = map_column(batch, col::ATTRIBUTES)?;
    let res = map_column(batch, col::RESOURCE_ATTRIBUTES)?;
    let attrs = AttrReader::new(attrs)?;
    let res = AttrReader::new(res)?;
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let mut found: Option<Cow<'_, str>> = None;
        for reader in [&attrs, &res] {
            for e in reader.range(i)? {
                if reader.key(e) == m.key {
                    found = Some(reader.rendered(e)?);
                    break;
                }
            }
            if found.is_some() {
                break;
            }
        }
        out.push(Some(m.matches(found.as_deref().unwrap_or(""))));
    }
    Ok(out.into_iter().collect())
}

fn map_column<'a>(batch: &'a RecordBatch, name: &str) -> Result<&'a MapArray> {
    batch
        .column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<MapArray>())
        .ok_or_else(|| StorageError::InvalidQuery(format!("column {name} not read")))
}

/// Columns a predicate needs to be evaluated on a batch of `signal`.
pub(crate) fn predicate_columns(signal: Signal, p: &Predicate) -> Vec<&'static str> {
    match p {
        Predicate::Attr(m) => match schema::promoted_column(signal, &m.key) {
            Some(c) => vec![c],
            None if signal == Signal::Samples => vec![col::SERIES_ID],
            None => vec![col::ATTRIBUTES, col::RESOURCE_ATTRIBUTES],
        },
        Predicate::TraceId(_) => vec![col::TRACE_ID],
        // Answered by the text indexes (tantivy per segment, in memory for memtables), never
        // by reading bodies.
        Predicate::FullText(_) => Vec::new(),
    }
}

/// ANDs boolean masks.
pub(crate) fn and_all(masks: Vec<BooleanArray>, n: usize) -> Result<Option<BooleanArray>> {
    let mut it = masks.into_iter();
    let Some(mut acc) = it.next() else {
        return Ok(None);
    };
    for m in it {
        acc = arrow_arith_and(&acc, &m)?;
    }
    debug_assert_eq!(acc.len(), n);
    Ok(Some(acc))
}

fn arrow_arith_and(a: &BooleanArray, b: &BooleanArray) -> Result<BooleanArray> {
    and_masks(a, b).map_err(StorageError::from)
}

/// ANDs two masks of equal length (nulls count as false).
pub(crate) fn and_masks(
    a: &BooleanArray,
    b: &BooleanArray,
) -> std::result::Result<BooleanArray, arrow_schema::ArrowError> {
    if a.len() != b.len() {
        return Err(arrow_schema::ArrowError::InvalidArgumentError(
            "mask length mismatch".into(),
        ));
    }
    // Masks built here carry no nulls; treat any null as false to be safe.
    let va = match a.nulls() {
        Some(n) => a.values() & n.inner(),
        None => a.values().clone(),
    };
    let vb = match b.nulls() {
        Some(n) => b.values() & n.inner(),
        None => b.values().clone(),
    };
    Ok(BooleanArray::new(&va & &vb, None))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prometheus_matcher_semantics() {
        let ne = Matcher::new("k", MatchOp::NotEq, "v").expect("ok");
        assert!(ne.matches("") && ne.matches("w") && !ne.matches("v"));
        assert!(ne.matches_missing());
        let re = Matcher::new("k", MatchOp::Regex, "gpt-4.*").expect("ok");
        assert!(re.matches("gpt-4o") && !re.matches("my-gpt-4o"));
        assert!(!re.matches_missing());
        let nre = Matcher::new("k", MatchOp::NotRegex, "a|b").expect("ok");
        assert!(nre.matches("c") && !nre.matches("a"));
        assert!(Matcher::new("k", MatchOp::Regex, "(").is_err());
    }
}
