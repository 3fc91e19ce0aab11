//! Log search and count-over-time histograms over one tenant's logs.

use std::collections::BTreeMap;

use arrow_array::{Array, FixedSizeBinaryArray, Int32Array, RecordBatch, TimestampNanosecondArray};
use sightline_storage::columnar::LogRows;
use sightline_storage::schema::col;
use sightline_storage::{
    Deadline, LogRecord, Matcher, Predicate, ScanRequest, ScanStats, Signal, SpanId, Store,
    TenantId, TimeRange, TraceId, UnixNanos,
};

use super::labels::{attribute_value, level_of};
use super::{MAX_BUCKETS, MAX_LIMIT};
use crate::error::{QueryError, Result};

/// Which lines a search or histogram considers. All conditions must hold.
#[derive(Clone, Debug)]
pub struct LogFilter {
    /// Time range on the line's event time.
    pub time: TimeRange,
    /// Full-text query on the body (docs/logs.md "Full-text queries": words ANDed), if any.
    pub full_text: Option<String>,
    /// Matchers on log attributes, resource attributes and promoted columns (`service.name`,
    /// `severity_text`, `severity_number`, `event_name`, `scope.name`). A missing attribute
    /// compares as `""`.
    pub matchers: Vec<Matcher>,
    /// Lines with `severity_number >= min_severity` only.
    pub min_severity: Option<i32>,
    /// Lines whose severity text is exactly this.
    pub severity_text: Option<String>,
    /// Lines correlated with this trace.
    pub trace_id: Option<TraceId>,
    /// Lines correlated with this span.
    pub span_id: Option<SpanId>,
    /// When the search or histogram must stop ([`QueryError::Timeout`]): the storage scans
    /// check it per row group and batch, and the residual filtering per batch. Not a
    /// condition on lines; [`LogFilter::new`] sets none.
    pub deadline: Deadline,
}

impl LogFilter {
    /// Every line in `time`.
    pub fn new(time: TimeRange) -> Self {
        Self {
            time,
            full_text: None,
            matchers: Vec::new(),
            min_severity: None,
            severity_text: None,
            trace_id: None,
            span_id: None,
            deadline: Deadline::none(),
        }
    }

    /// The storage scan for this filter: everything storage can prune on.
    pub fn scan_request(&self, tenant: &TenantId) -> ScanRequest {
        let mut req =
            ScanRequest::new(tenant.clone(), Signal::Logs, self.time).until(self.deadline.clone());
        if let Some(q) = self.full_text.as_deref().filter(|q| !q.trim().is_empty()) {
            req = req.with(Predicate::FullText(q.to_owned()));
        }
        if let Some(t) = self.trace_id {
            req = req.with(Predicate::TraceId(t));
        }
        if let Some(s) = &self.severity_text {
            req = req.with(Predicate::Attr(Matcher::eq("severity_text", s.clone())));
        }
        for m in &self.matchers {
            req = req.with(Predicate::Attr(m.clone()));
        }
        req
    }

    /// Whether the conditions storage does not evaluate (minimum severity, span id) hold on
    /// `row` of a scanned batch.
    fn residual(&self, cols: &Residual<'_>, row: usize) -> bool {
        if let (Some(min), Some(sev)) = (self.min_severity, cols.severity)
            && sev.value(row) < min
        {
            return false;
        }
        if let (Some(want), Some(span)) = (self.span_id, cols.span)
            && (span.is_null(row) || span.value(row) != want.as_bytes())
        {
            return false;
        }
        true
    }
}

/// Columns the residual conditions read.
struct Residual<'a> {
    time: &'a TimestampNanosecondArray,
    severity: Option<&'a Int32Array>,
    span: Option<&'a FixedSizeBinaryArray>,
}

impl<'a> Residual<'a> {
    fn of(batch: &'a RecordBatch) -> Result<Self> {
        let time = batch
            .column_by_name(col::TIME)
            .and_then(|c| c.as_any().downcast_ref::<TimestampNanosecondArray>())
            .ok_or_else(|| QueryError::Execution("log batch without time column".into()))?;
        Ok(Self {
            time,
            severity: batch
                .column_by_name(col::SEVERITY_NUMBER)
                .and_then(|c| c.as_any().downcast_ref()),
            span: batch
                .column_by_name(col::SPAN_ID)
                .and_then(|c| c.as_any().downcast_ref()),
        })
    }
}

/// Order of returned lines.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Newest first.
    #[default]
    Backward,
    /// Oldest first.
    Forward,
}

/// A search.
#[derive(Clone, Debug)]
pub struct SearchRequest {
    /// Which lines.
    pub filter: LogFilter,
    /// At most this many lines (capped at [`MAX_LIMIT`]).
    pub limit: usize,
    /// Order (and which end of the range `limit` keeps).
    pub direction: Direction,
}

/// Lines found.
#[derive(Clone, Debug)]
pub struct SearchResult {
    /// The lines, in the requested order.
    pub lines: Vec<LogRecord>,
    /// Lines that matched before `limit` cut.
    pub matched: usize,
    /// What the scan pruned and read.
    pub explain: ScanStats,
}

/// The rows of a scan that pass the residual filter: (time, batch, row).
pub(crate) fn matching_rows(
    batches: &[RecordBatch],
    filter: &LogFilter,
) -> Result<Vec<(i64, usize, usize)>> {
    let mut hits = Vec::new();
    for (bi, b) in batches.iter().enumerate() {
        filter.deadline.check()?;
        let cols = Residual::of(b)?;
        for row in 0..b.num_rows() {
            if filter.residual(&cols, row) {
                hits.push((cols.time.value(row), bi, row));
            }
        }
    }
    Ok(hits)
}

/// Sorts hits by time in `direction`, ties by scan position so results are deterministic.
pub(crate) fn sort_hits(hits: &mut [(i64, usize, usize)], direction: Direction) {
    match direction {
        Direction::Backward => hits.sort_unstable_by(|a, b| b.cmp(a)),
        Direction::Forward => hits.sort_unstable(),
    }
}

/// Row decoders of scanned log batches, one per batch.
pub(crate) fn row_decoders(batches: &[RecordBatch]) -> Result<Vec<LogRows<'_>>> {
    Ok(batches
        .iter()
        .map(LogRows::new)
        .collect::<std::result::Result<_, _>>()?)
}

/// Most lines the second pass of one search page decodes (the page, the lines a cursor skips,
/// and the lines that share the boundary timestamps).
pub const MAX_PAGE_DECODE: usize = 100_000;

/// Where a page of log search ended: the time of its last line and how many lines with
/// exactly that time the pages so far showed. Written as `<b|f>.<time ns>.<lines>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogCursor {
    /// The order of the pages.
    pub direction: Direction,
    /// Time of the last line shown, ns.
    pub time: i64,
    /// Lines with exactly that time already shown.
    pub skip: usize,
}

impl LogCursor {
    /// Parses `<b|f>.<time ns>.<lines>`.
    pub fn parse(s: &str) -> Result<Self> {
        let bad = || QueryError::BadRequest(format!("cursor: not a log search cursor: {s:?}"));
        let mut parts = s.splitn(3, '.');
        let (Some(d), Some(time), Some(skip)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(bad());
        };
        Ok(Self {
            direction: match d {
                "b" => Direction::Backward,
                "f" => Direction::Forward,
                _ => return Err(bad()),
            },
            time: time.parse().map_err(|_| bad())?,
            skip: skip.parse().map_err(|_| bad())?,
        })
    }
}

impl std::fmt::Display for LogCursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let d = match self.direction {
            Direction::Backward => "b",
            Direction::Forward => "f",
        };
        write!(f, "{d}.{}.{}", self.time, self.skip)
    }
}

/// Runs a search: newest (or oldest) `limit` lines matching the filter.
pub fn search(store: &Store, tenant: &TenantId, req: &SearchRequest) -> Result<SearchResult> {
    search_after(store, tenant, req, None).map(|(r, _)| r)
}

/// Runs one page of a search: the first `limit` lines after `after` (the previous page's
/// cursor; `None`: from the newest, or oldest, line), and the cursor of the next page when
/// lines remain. `matched` counts the lines from `after` on.
///
/// Lines are ordered by time, and lines with the same time by their content (every field), so
/// pages neither repeat nor skip a line whatever the storage layout between two requests.
///
/// Two passes: the first reads only the time column (and the columns of the conditions storage
/// does not evaluate) of every matching line, which gives the count and the time of the
/// `limit`-th line; the second reads whole lines only from that time on (to the end of the
/// range, or from its start for `Forward`), where row-group statistics of the time-sorted
/// segments skip most of the data. `explain` is the first pass's: it covers every matching
/// line.
pub fn search_after(
    store: &Store,
    tenant: &TenantId,
    req: &SearchRequest,
    after: Option<&LogCursor>,
) -> Result<(SearchResult, Option<LogCursor>)> {
    let limit = req.limit.min(MAX_LIMIT);
    let mut filter = req.filter.clone();
    if let Some(c) = after {
        if c.direction != req.direction {
            return Err(QueryError::BadRequest(
                "cursor: it belongs to a search in the other direction".into(),
            ));
        }
        let t = &mut filter.time;
        match c.direction {
            Direction::Backward => t.end = UnixNanos(t.end.0.min(c.time.saturating_add(1))),
            Direction::Forward => t.start = UnixNanos(t.start.0.max(c.time)),
        }
        if t.end.0 <= t.start.0 {
            let empty = SearchResult {
                lines: Vec::new(),
                matched: 0,
                explain: ScanStats::default(),
            };
            return Ok((empty, None));
        }
    }
    // Lines at the cursor's time already shown (the first ones in this order).
    let skip_shown = |times: &mut Vec<i64>| {
        if let Some(c) = after {
            let at = times.iter().take_while(|&&t| t == c.time).count();
            times.drain(..at.min(c.skip));
        }
    };
    let mut light = filter.scan_request(tenant);
    let mut columns = vec![col::TIME.to_owned()];
    if filter.min_severity.is_some() {
        columns.push(col::SEVERITY_NUMBER.to_owned());
    }
    if filter.span_id.is_some() {
        columns.push(col::SPAN_ID.to_owned());
    }
    light.projection = Some(columns);
    let first = store.scan(&light)?;
    let mut hits = matching_rows(&first.batches, &filter)?;
    sort_hits(&mut hits, req.direction);
    let mut times: Vec<i64> = hits.iter().map(|h| h.0).collect();
    drop(hits);
    skip_shown(&mut times);
    let matched = times.len();
    times.truncate(limit);
    let Some(&cutoff) = times.last() else {
        let empty = SearchResult {
            lines: Vec::new(),
            matched,
            explain: first.stats,
        };
        return Ok((empty, None));
    };
    let mut narrow = filter.clone();
    let (start, end) = (narrow.time.start, narrow.time.end);
    narrow.time = match req.direction {
        Direction::Backward => TimeRange {
            start: UnixNanos(cutoff.max(start.0)),
            end,
        },
        Direction::Forward => TimeRange {
            start,
            end: UnixNanos(cutoff.saturating_add(1).min(end.0)),
        },
    };
    let second = store.scan(&narrow.scan_request(tenant))?;
    let hits = matching_rows(&second.batches, &narrow)?;
    if hits.len() > MAX_PAGE_DECODE {
        return Err(QueryError::BadRequest(format!(
            "{} lines share this page's boundary times (at most {MAX_PAGE_DECODE}); narrow the query",
            hits.len()
        )));
    }
    let mut lines = Vec::with_capacity(hits.len());
    let decoders = row_decoders(&second.batches)?;
    for &(_, bi, row) in &hits {
        filter.deadline.check()?;
        let rec = decoders[bi].row(row)?;
        let key = serde_json::to_vec(&rec).unwrap_or_default();
        lines.push((rec.time.0, key, rec));
    }
    match req.direction {
        Direction::Backward => lines.sort_unstable_by(|a, b| (b.0, &b.1).cmp(&(a.0, &a.1))),
        Direction::Forward => lines.sort_unstable_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1))),
    }
    let skip = after.map_or(0, |c| {
        let at = lines.iter().take_while(|l| l.0 == c.time).count();
        at.min(c.skip)
    });
    let lines: Vec<LogRecord> = lines
        .into_iter()
        .skip(skip)
        .take(limit)
        .map(|(_, _, r)| r)
        .collect();
    let next = match lines.last() {
        Some(last) if matched > lines.len() => {
            let t = last.time.0;
            let mut shown = lines.iter().filter(|l| l.time.0 == t).count();
            if let Some(c) = after.filter(|c| c.time == t) {
                shown += c.skip;
            }
            Some(LogCursor {
                direction: req.direction,
                time: t,
                skip: shown,
            })
        }
        _ => None,
    };
    let result = SearchResult {
        lines,
        matched,
        explain: first.stats,
    };
    Ok((result, next))
}

/// How histogram counts are split.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum HistogramGroup {
    /// One series.
    #[default]
    None,
    /// One series per level (see [`level_of`]; `unknown` when unspecified).
    Severity,
    /// One series per value of an attribute (OpenTelemetry key; `""` when missing).
    Label(String),
}

/// A histogram request.
#[derive(Clone, Debug)]
pub struct HistogramRequest {
    /// Which lines; buckets start at `filter.time.start`.
    pub filter: LogFilter,
    /// Bucket width in nanoseconds (> 0).
    pub step_ns: i64,
    /// Grouping.
    pub group: HistogramGroup,
}

/// Counts of one group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistogramSeries {
    /// The group's value (`None` without grouping).
    pub group: Option<String>,
    /// One count per bucket.
    pub counts: Vec<u64>,
}

/// Bucketed counts over the range.
#[derive(Clone, Debug)]
pub struct Histogram {
    /// Bucket start times (ns); bucket `i` is `[buckets[i], buckets[i] + step)`.
    pub buckets: Vec<i64>,
    /// Series sorted by group.
    pub series: Vec<HistogramSeries>,
    /// What the scan pruned and read.
    pub explain: ScanStats,
}

/// Counts matching lines per bucket (and group).
pub fn histogram(store: &Store, tenant: &TenantId, req: &HistogramRequest) -> Result<Histogram> {
    if req.step_ns <= 0 {
        return Err(QueryError::BadRequest("step must be positive".into()));
    }
    let (start, end) = (req.filter.time.start.0, req.filter.time.end.0);
    let span = i128::from(end) - i128::from(start);
    let n = span.div_euclid(i128::from(req.step_ns))
        + i128::from(span.rem_euclid(i128::from(req.step_ns)) != 0);
    if n > MAX_BUCKETS as i128 {
        return Err(QueryError::BadRequest(format!(
            "{n} buckets exceed the limit of {MAX_BUCKETS}; use a larger step"
        )));
    }
    let n = n as usize;
    let mut scan_req = req.filter.scan_request(tenant);
    if !matches!(req.group, HistogramGroup::Label(_)) {
        scan_req = scan_req.project(&[
            col::TIME,
            col::SEVERITY_NUMBER,
            col::SEVERITY_TEXT,
            col::SPAN_ID,
        ]);
    }
    let scan = store.scan(&scan_req)?;
    let mut groups: BTreeMap<Option<String>, Vec<u64>> = BTreeMap::new();
    for b in &scan.batches {
        req.filter.deadline.check()?;
        let cols = Residual::of(b)?;
        let decoder = match req.group {
            HistogramGroup::Label(_) => Some(LogRows::new(b)?),
            _ => None,
        };
        let sev_text = b
            .column_by_name(col::SEVERITY_TEXT)
            .and_then(|c| c.as_any().downcast_ref::<arrow_array::StringArray>());
        for row in 0..b.num_rows() {
            if !req.filter.residual(&cols, row) {
                continue;
            }
            let t = cols.time.value(row);
            let idx = ((i128::from(t) - i128::from(start)) / i128::from(req.step_ns)) as usize;
            if idx >= n {
                continue;
            }
            let key = match &req.group {
                HistogramGroup::None => None,
                HistogramGroup::Severity => Some(
                    level_of(
                        cols.severity.map_or(0, |s| s.value(row)),
                        sev_text.map_or("", |s| s.value(row)),
                    )
                    .unwrap_or_else(|| "unknown".into()),
                ),
                HistogramGroup::Label(key) => {
                    let rec = decoder
                        .as_ref()
                        .ok_or_else(|| QueryError::Execution("no row decoder".into()))?
                        .row(row)?;
                    Some(attribute_value(&rec, key).unwrap_or_default())
                }
            };
            groups.entry(key).or_insert_with(|| vec![0; n])[idx] += 1;
        }
    }
    Ok(Histogram {
        buckets: (0..n as i64).map(|i| start + i * req.step_ns).collect(),
        series: groups
            .into_iter()
            .map(|(group, counts)| HistogramSeries { group, counts })
            .collect(),
        explain: scan.stats,
    })
}
