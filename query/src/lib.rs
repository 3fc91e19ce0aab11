//! # sightline-query
//!
//! Answers questions over the store: PromQL for metrics (parsed with `promql-parser`, evaluated
//! here), aggregation plans over spans and logs (rollups where exact), trace and log search,
//! the LogQL and TraceQL subsets, and every time and duration grammar the APIs accept.
//!
//! **Owns:** query semantics (PromQL evaluation, lookback, staleness, vector matching) and
//! result shapes. **Does not:** touch storage files (it reads through
//! `sightline_storage::Store::scan` and `series`), speak HTTP (the server maps results to wire
//! formats), or compute LLM-quality statistics (`sightline-detect`).
//!
//! ## Modules
//!
//! PromQL parsed with `promql-parser` and evaluated step-wise over a `SampleSource`
//! (`promql::StoreSource` reads one tenant through `Store::series` + `Store::scan`;
//! `MemorySource` serves tests). `promql/eval` (selectors, lookback 5 min, staleness markers,
//! offset/@), `promql/functions` (rate family with Prometheus' extrapolation, `*_over_time`, math,
//! label functions, `histogram_quantile`), `promql/aggregate`, `promql/binary` (vector matching).
//! Unsupported constructs (subqueries, ...) fail with an error naming them. `promql/cache`
//! keeps range query answers per query, step and grid phase for the next request of a
//! dashboard, and drops kept steps when the store reports a late append or a removal
//! (`sightline_storage::SampleObserver`).
//! `query/tests/integration/promql_golden.rs` (+`query/tests/integration/golden/{data,prom,compare,queries}`) is the golden
//! suite: fixed samples loaded into a real Prometheus 2.42 (blocks via `promtool`) and into a
//! `Store`, 270+ queries compared instant and range, in the test run itself.
//!
//! `plan` (+`plan/{fields,accumulate,request}`): aggregation plans over spans and logs (tenant +
//! signal + time range + storage predicates + numeric filters + group-by keys/time buckets +
//! count/sum/avg/min/max/quantile/error_ratio/rate, or top rows by a field). Storage prunes and
//! evaluates the predicates; `accumulate` interns group keys per column, computes one group id per
//! row, then folds each aggregate column-wise over the batch. Plans that rollups answer exactly
//! (no quantiles, no numeric filters, rollup keys, whole-minute buckets) ask storage for rollups and
//! fold the rollup rows with their weights next to the rows of segments that had to be read. Every
//! answer carries an `Explain` (storage `ScanStats` with segments answered from rollups, plus rows
//! filtered, rollup rows folded, groups, timings). `plan/request` is its JSON form.
//! `time` (+`time/{prometheus,loki,units,relative}`): every time and duration grammar, as named
//! and documented dialects (`TimeDialect`: Prometheus, Loki, RFC 3339 or Unix seconds;
//! `DurationDialect`: Prometheus, seconds-or-units, LogQL, Loki step, TraceQL), the CLI's relative
//! times (`-6h`, `now`), typed results (`UnixNanos`/`UnixMillis`, `Nanos`/`Millis`), one
//! `TimeError` and `now()`: the HTTP APIs, plans, the CLI and the LogQL/TraceQL lexers parse
//! through it.
//! `quantile`: the one quantile (Prometheus' linear interpolation, NaN first) that PromQL,
//! plans and RED compute.
//! `bounds`: the size, nesting and operator limits every PromQL, LogQL and TraceQL text passes
//! before a recursive parser sees it.
//!
//! `logs` (+`logs/{search,labels,logql}`): log search and count-over-time histograms (time, full
//! text, attribute matchers, severity text and trace id pushed into the `ScanRequest`; minimum
//! severity and span id evaluated on the Arrow batches; `ScanStats` returned as `explain`; a search
//! reads times first and whole lines only from the `limit`-th line's time on), the
//! Loki stream-label model (`labels`: resource attributes + `level` are stream labels, log
//! attributes and trace/span ids structured metadata), and a LogQL subset (`logql` parser and
//! `logql/lexer`, `logql/eval`: selectors, line filters, `json`/`logfmt`, label filters, range and
//! vector aggregations, `vector(1)+vector(1)`).
//!
//! `traces/` (trace queries): `filter` (span conditions, which of them storage can prune with, exact
//! evaluation on Arrow batches), `search` (span and trace search, ranking, trace summaries),
//! `trace` (trace by id) and `critical_path` (the chain of segments that sets a trace's latency),
//! `red` (rate/errors/duration per group and bucket), `tags` (attribute keys and values),
//! `traceql` (the TraceQL subset of the Tempo API, logfmt tags, durations).

pub mod bounds;
pub mod error;
pub mod logs;
pub mod plan;
pub mod promql;
pub mod quantile;
pub mod time;
pub mod traces;

pub use error::{QueryError, Result};
