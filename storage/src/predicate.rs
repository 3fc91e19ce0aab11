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
    /// Log bodies that contain this text as it is spelled: a case-sensitive substring, LogQL's
    /// line filter `|=` (logs only; narrowed by the token indexes, then checked on the bodies).
    BodyContains(String),
    /// Rows that at least one of the matchers accepts (spans and logs; at most
    /// [`MAX_ANY_OF`] matchers). Model filters use it to match a request or a response model.
    AnyOf(Vec<Matcher>),
}

/// Most matchers one [`Predicate::AnyOf`] may hold.
pub const MAX_ANY_OF: usize = 16;

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
    /// With `rollups`: the caller folds rows into time buckets of whole, epoch-aligned hours
    /// (or into none), so hourly rollups ([`crate::rollup::HOURLY_FILE`]) may answer too, and
    /// the store cuts an unaligned range at hour edges as well as at minute edges.
    pub rollup_hours: bool,
    /// When the scan must stop: it checks between segments, row groups, decoded batches and
    /// memtable batches and fails with [`StorageError::DeadlineExceeded`] once this expires.
    pub deadline: Deadline,
    /// String columns segments return dictionary-encoded (`Dictionary(Int32, Utf8)`, decoded
    /// from the Parquet dictionary without building every row's string), for readers that
    /// group by them. Rows of unflushed data keep plain strings; a column named here that is
    /// also a predicate's column is returned plain.
    pub dictionary: Vec<String>,
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
            rollup_hours: false,
            deadline: Deadline::none(),
            dictionary: Vec::new(),
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
                    crate::text_index::validate_query(q)?;
                }
                Predicate::BodyContains(text) => {
                    if self.signal != Signal::Logs {
                        return Err(StorageError::InvalidQuery(
                            "line filters apply to logs only".into(),
                        ));
                    }
                    crate::text_index::TextQuery::literal(text)?;
                }
                Predicate::TraceId(_) if self.signal == Signal::Samples => {
                    return Err(StorageError::InvalidQuery(
                        "metric samples carry no trace id".into(),
                    ));
                }
                Predicate::AnyOf(_) if self.signal == Signal::Samples => {
                    return Err(StorageError::InvalidQuery(
                        "alternatives of matchers apply to spans and logs only".into(),
                    ));
                }
                Predicate::AnyOf(ms) if ms.is_empty() || ms.len() > MAX_ANY_OF => {
                    return Err(StorageError::InvalidQuery(format!(
                        "an alternative needs 1 to {MAX_ANY_OF} matchers, got {}",
                        ms.len()
                    )));
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
        Predicate::AnyOf(ms) => {
            let mut cols = Vec::new();
            for m in ms {
                for c in predicate_columns(signal, &Predicate::Attr(m.clone())) {
                    if !cols.contains(&c) {
                        cols.push(c);
                    }
                }
            }
            cols
        }
        // Answered by the token indexes (per segment, in memory for memtables); a query with
        // a phrase also reads the bodies to check them ([`crate::segment::scan::CompiledScan`]).
        Predicate::FullText(_) | Predicate::BodyContains(_) => Vec::new(),
    }
}

/// Evaluates a [`Predicate::AnyOf`]: a row passes when any matcher accepts it.
pub(crate) fn eval_any_of(
    batch: &RecordBatch,
    signal: Signal,
    matchers: &[Matcher],
) -> Result<BooleanArray> {
    let n = batch.num_rows();
    let mut acc = BooleanArray::new(arrow_buffer::BooleanBuffer::new_unset(n), None);
    for m in matchers {
        let mask = eval_matcher(batch, signal, m)?;
        let values = match mask.nulls() {
            Some(nulls) => mask.values() & nulls.inner(),
            None => mask.values().clone(),
        };
        acc = BooleanArray::new(acc.values() | &values, None);
    }
    Ok(acc)
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

    fn span(n: u8, request: Option<&str>, response: Option<&str>) -> crate::SpanRecord {
        let mut s = crate::SpanRecord::new(
            TraceId([n; 16]),
            crate::SpanId([n; 8]),
            "svc",
            "chat",
            crate::UnixNanos(1),
            crate::UnixNanos(2),
        );
        s.gen_ai.request_model = request.map(str::to_owned);
        s.gen_ai.response_model = response.map(str::to_owned);
        s
    }

    fn any_of(batch: &RecordBatch, ms: &[Matcher]) -> Vec<bool> {
        let mask = eval_any_of(batch, Signal::Spans, ms).expect("eval");
        assert_eq!(mask.null_count(), 0);
        mask.values().iter().collect()
    }

    #[test]
    fn any_of_is_the_or_of_its_matchers() {
        let batch = crate::columnar::spans_to_batch(&[
            span(1, Some("gpt-4o"), Some("gpt-4o-2024-08-06")),
            span(2, Some("gpt-4o-mini"), Some("gpt-4o-mini-2024-07-18")),
            span(3, None, Some("gpt-4o")),
            span(4, None, None),
        ])
        .expect("batch");
        let model = |v: &str| {
            vec![
                Matcher::eq("gen_ai.request.model", v),
                Matcher::eq("gen_ai.response.model", v),
            ]
        };
        assert_eq!(any_of(&batch, &model("gpt-4o")), [true, false, true, false]);
        assert_eq!(
            any_of(&batch, &model("gpt-4o-2024-08-06")),
            [true, false, false, false]
        );
        // A missing (null) value is "", as for a single matcher.
        let ne = Matcher::new("gen_ai.request.model", MatchOp::NotEq, "gpt-4o").expect("ne");
        assert_eq!(any_of(&batch, &[ne]), [false, true, true, true]);
        let re = Matcher::new("gen_ai.response.model", MatchOp::Regex, ".*-07-18").expect("re");
        let attr = Matcher::eq("user.id", "nobody");
        assert_eq!(any_of(&batch, &[attr, re]), [false, true, false, false]);
        // One matcher alone is that matcher.
        for m in model("gpt-4o") {
            let one = eval_matcher(&batch, Signal::Spans, &m).expect("eval");
            assert_eq!(
                any_of(&batch, std::slice::from_ref(&m)),
                one.iter().map(|v| v == Some(true)).collect::<Vec<_>>()
            );
        }
    }

    #[test]
    fn any_of_needs_one_to_max_matchers_on_spans_or_logs() {
        let t = TenantId::new("t").expect("tenant");
        let req = |signal, n: usize| {
            let ms = (0..n).map(|i| Matcher::eq("k", i.to_string())).collect();
            ScanRequest::new(t.clone(), signal, TimeRange::ALL).with(Predicate::AnyOf(ms))
        };
        for signal in [Signal::Spans, Signal::Logs] {
            assert!(req(signal, 1).validate().is_ok());
            assert!(req(signal, MAX_ANY_OF).validate().is_ok());
            for n in [0, MAX_ANY_OF + 1] {
                let e = req(signal, n).validate().expect_err("refused");
                assert!(matches!(e, StorageError::InvalidQuery(_)), "{e}");
            }
        }
        let e = req(Signal::Samples, 1).validate().expect_err("refused");
        assert!(e.to_string().contains("spans and logs only"), "{e}");
    }

    #[test]
    fn any_of_reads_the_columns_of_every_matcher() {
        let p = Predicate::AnyOf(vec![
            Matcher::eq("gen_ai.request.model", "a"),
            Matcher::eq("gen_ai.response.model", "a"),
            Matcher::eq("user.id", "a"),
            Matcher::eq("gen_ai.request.model", "b"),
        ]);
        assert_eq!(
            predicate_columns(Signal::Spans, &p),
            [
                col::GEN_AI_REQUEST_MODEL,
                col::GEN_AI_RESPONSE_MODEL,
                col::ATTRIBUTES,
                col::RESOURCE_ATTRIBUTES
            ]
        );
    }
}
