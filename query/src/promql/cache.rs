//! Range query answers kept for the next request of the same query: a dashboard that refreshes
//! a panel every few seconds asks again for the same query over a window that has slid a little.
//!
//! An entry holds, for one tenant, query text, step and grid phase (`start mod step`), the
//! answer at every step from `first` to `last`. A request whose start lies in or just after an
//! entry takes the entry's steps from its start on and evaluates only the steps after the
//! entry; the whole answer is then kept again. Each step of a PromQL range query is computed
//! from the samples of its own window, so a step's answer does not depend on the other steps
//! of the request.
//!
//! ## Correct after late and out-of-order samples
//! The answer at step `t` depends only on samples at or before `t + ahead`, where `ahead` is the
//! largest negative `offset` of the query's selectors (0 without one); queries with `@` are not
//! kept. The store tells the cache of every append with its earliest sample time `w`
//! ([`SampleObserver`]): each entry of that tenant drops its steps `t >= w - ahead`, and every
//! evaluation running for that tenant is marked so that it keeps no step from `w - ahead` on.
//! A removal of samples (retention, quarantine) drops the tenant's entries and keeps running
//! evaluations from being kept at all. An evaluation registers itself before it reads samples,
//! and the store tells observers after samples are visible, so a write is either seen by the
//! evaluation or marks it.
//!
//! Only steps at least [`CacheConfig::recent_ms`] before now are kept: appends of current
//! samples then never touch an entry and cost one atomic comparison.
//!
//! ## Bounds
//! The entries hold at most [`CacheConfig::max_bytes`] (least recently used dropped first); one
//! answer larger than an eighth of that is not kept, and an entry keeps at most
//! [`MAX_STEPS`] steps (the oldest go first).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use parking_lot::Mutex;
use promql_parser::parser::{Expr, Offset};
use promql_parser::util::{ExprVisitor, walk_expr};
use sightline_storage::{SampleObserver, TenantId, UnixNanos};

use super::budget::Budget;
use super::eval::MAX_STEPS;
use super::source::SampleSource;
use super::value::{Grid, QueryResult, ResultSeries};
use super::{eval_range, parse, range_grid};
use crate::error::Result;

/// How much the cache may hold and what it leaves out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheConfig {
    /// Bytes of kept answers, all tenants together; 0 turns the cache off.
    pub max_bytes: usize,
    /// Steps later than this before now are evaluated on every request, never kept (samples
    /// for them are still arriving).
    pub recent_ms: i64,
}

impl Default for CacheConfig {
    fn default() -> Self {
        Self {
            max_bytes: 64 << 20,
            recent_ms: 5 * 60 * 1000,
        }
    }
}

/// The cache's counters, all monotonic except `bytes` and `entries`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Requests answered at least in part from an entry.
    pub hits: u64,
    /// Cacheable requests evaluated in full.
    pub misses: u64,
    /// Steps answered from entries.
    pub steps_served: u64,
    /// Steps evaluated by cacheable requests.
    pub steps_evaluated: u64,
    /// Appends and removals that dropped steps of an entry or marked an evaluation.
    pub invalidations: u64,
    /// Bytes held.
    pub bytes: usize,
    /// Entries held.
    pub entries: usize,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Key {
    tenant: TenantId,
    query: String,
    step: i64,
    phase: i64,
}

#[derive(Debug)]
struct Entry {
    /// First and last step held (on the key's grid).
    first: i64,
    last: i64,
    /// How far past a step its samples may lie (negative offsets).
    ahead: i64,
    /// Sorted by labels; points sorted, within `first..=last`, none empty.
    series: Vec<ResultSeries>,
    bytes: usize,
    tick: u64,
}

/// A running evaluation that may keep its answer.
#[derive(Debug)]
struct Ticket {
    tenant: TenantId,
    /// The earliest sample time appended for the tenant since the evaluation registered;
    /// `i64::MIN` after a removal.
    dirty_from: Option<i64>,
}

#[derive(Debug, Default)]
struct State {
    entries: HashMap<Key, Entry>,
    /// Entries by last use.
    lru: BTreeMap<u64, Key>,
    tick: u64,
    bytes: usize,
    tickets: HashMap<u64, Ticket>,
    next_ticket: u64,
}

/// Range query answers kept across requests (see the module doc). Register it with the store
/// ([`sightline_storage::Store::observe_samples`]) before it answers a query.
#[derive(Debug)]
pub struct ResultCache {
    config: CacheConfig,
    state: Mutex<State>,
    /// No entry or running evaluation depends on a sample later than this (ms): appends
    /// that start after it change nothing here.
    horizon: AtomicI64,
    hits: AtomicU64,
    misses: AtomicU64,
    steps_served: AtomicU64,
    steps_evaluated: AtomicU64,
    invalidations: AtomicU64,
}

impl ResultCache {
    /// An empty cache.
    pub fn new(config: CacheConfig) -> Self {
        Self {
            config,
            state: Mutex::default(),
            horizon: AtomicI64::new(i64::MIN),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            steps_served: AtomicU64::new(0),
            steps_evaluated: AtomicU64::new(0),
            invalidations: AtomicU64::new(0),
        }
    }

    /// Its configuration.
    pub fn config(&self) -> CacheConfig {
        self.config
    }

    /// Counters and sizes.
    pub fn stats(&self) -> CacheStats {
        let st = self.state.lock();
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            steps_served: self.steps_served.load(Ordering::Relaxed),
            steps_evaluated: self.steps_evaluated.load(Ordering::Relaxed),
            invalidations: self.invalidations.load(Ordering::Relaxed),
            bytes: st.bytes,
            entries: st.entries.len(),
        }
    }

    /// [`super::range_query`] for `tenant`, reading `source`, with the steps it can take from
    /// an entry taken from it and the answer kept for the next request. `now_ms` decides which
    /// steps are recent ([`CacheConfig::recent_ms`]). The answer is sorted by labels.
    #[allow(clippy::too_many_arguments)]
    pub fn range_query(
        &self,
        source: &dyn SampleSource,
        tenant: &TenantId,
        query: &str,
        start_ms: i64,
        end_ms: i64,
        step_ms: i64,
        now_ms: i64,
        budget: &Budget,
    ) -> Result<QueryResult> {
        let grid = range_grid(start_ms, end_ms, step_ms)?;
        let expr = parse(query)?;
        let ahead = if self.config.max_bytes == 0 {
            None
        } else {
            samples_ahead(&expr)
        };
        // The last step that may be kept.
        let keepable = ahead.and_then(|ahead| {
            let limit = now_ms
                .saturating_sub(self.config.recent_ms)
                .saturating_sub(ahead)
                .min(end_ms);
            (limit >= start_ms).then(|| {
                let k = (limit - start_ms) / step_ms;
                (ahead, start_ms + k * step_ms)
            })
        });
        let Some((ahead, cap)) = keepable else {
            let mut series = eval_range(source, &expr, grid, grid, budget)?;
            series.sort_by(|a, b| a.labels.cmp(&b.labels));
            return Ok(QueryResult::Matrix(series));
        };
        let key = Key {
            tenant: tenant.clone(),
            query: query.to_owned(),
            step: step_ms,
            phase: start_ms.rem_euclid(step_ms),
        };
        let (cached, tail_start, ticket) = self.begin(&key, grid, cap, ahead);
        let registration = Registration {
            cache: self,
            id: ticket,
        };
        let tail = if tail_start <= end_ms {
            let tail_grid = Grid {
                start: tail_start,
                end: end_ms,
                step: step_ms,
            };
            self.steps_evaluated
                .fetch_add(tail_grid.len() as u64, Ordering::Relaxed);
            let mut t = eval_range(source, &expr, tail_grid, tail_grid, budget)?;
            t.sort_by(|a, b| a.labels.cmp(&b.labels));
            t
        } else {
            Vec::new()
        };
        let answer = append_steps(cached, tail);
        self.finish(key, ticket, start_ms, cap, ahead, &answer);
        drop(registration);
        Ok(QueryResult::Matrix(answer))
    }

    /// Takes what an entry holds of `grid` and registers the evaluation of the rest: the
    /// cached series, the first step to evaluate, the ticket.
    fn begin(&self, key: &Key, grid: Grid, cap: i64, ahead: i64) -> (Vec<ResultSeries>, i64, u64) {
        let mut st = self.state.lock();
        let st = &mut *st;
        st.tick += 1;
        let tick = st.tick;
        let mut cached = Vec::new();
        let mut tail_start = grid.start;
        if let Some(e) = st.entries.get_mut(key)
            && e.first <= grid.start
            && grid.start <= e.last.saturating_add(grid.step)
        {
            let until = e.last.min(grid.end);
            cached = slice(&e.series, grid.start, until);
            tail_start = e.last.saturating_add(grid.step).max(grid.start);
            let served = if until >= grid.start {
                (until - grid.start) / grid.step + 1
            } else {
                0
            };
            self.hits.fetch_add(1, Ordering::Relaxed);
            self.steps_served
                .fetch_add(served as u64, Ordering::Relaxed);
            st.lru.remove(&e.tick);
            e.tick = tick;
            st.lru.insert(tick, key.clone());
        } else {
            self.misses.fetch_add(1, Ordering::Relaxed);
        }
        let id = st.next_ticket;
        st.next_ticket += 1;
        st.tickets.insert(
            id,
            Ticket {
                tenant: key.tenant.clone(),
                dirty_from: None,
            },
        );
        // Raised under the lock, before the evaluation reads a sample.
        self.horizon
            .fetch_max(cap.saturating_add(ahead), Ordering::SeqCst);
        (cached, tail_start, id)
    }

    /// Keeps the steps of `answer` (`start..` on the key's grid) up to `cap` that no append
    /// since the ticket was taken can have changed.
    fn finish(
        &self,
        key: Key,
        ticket: u64,
        start: i64,
        cap: i64,
        ahead: i64,
        answer: &[ResultSeries],
    ) {
        let mut st = self.state.lock();
        let Some(t) = st.tickets.remove(&ticket) else {
            return;
        };
        let mut keep_until = cap;
        if let Some(w) = t.dirty_from {
            keep_until = keep_until.min(w.saturating_sub(ahead).saturating_sub(1));
        }
        let step = key.step;
        if keep_until < start {
            return;
        }
        // Align down to the grid.
        let keep_until = start + (keep_until - start) / step * step;
        let mut first = start;
        let mut head = Vec::new();
        if let Some(old) = st.entries.get(&key) {
            if old.first <= start && old.last >= keep_until {
                return;
            }
            if old.first < start && old.last >= start - step {
                head = slice(&old.series, old.first, start - step);
                first = old.first;
            }
        }
        let oldest = keep_until.saturating_sub((MAX_STEPS as i64 - 1).saturating_mul(step));
        if first < oldest {
            first = oldest;
            head = slice(&head, first, keep_until);
        }
        let series = append_steps(head, slice(answer, start.max(first), keep_until));
        st.remove(&key);
        let bytes = entry_bytes(&key, &series);
        if bytes > self.config.max_bytes / 8 {
            return;
        }
        st.tick += 1;
        let tick = st.tick;
        st.lru.insert(tick, key.clone());
        st.bytes += bytes;
        st.entries.insert(
            key,
            Entry {
                first,
                last: keep_until,
                ahead,
                series,
                bytes,
                tick,
            },
        );
        while st.bytes > self.config.max_bytes {
            let Some((_, k)) = st.lru.pop_first() else {
                break;
            };
            if let Some(e) = st.entries.remove(&k) {
                st.bytes -= e.bytes;
            }
        }
    }
}

/// Removes the ticket of an evaluation however it ends (an error, a panic).
struct Registration<'a> {
    cache: &'a ResultCache,
    id: u64,
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        self.cache.state.lock().tickets.remove(&self.id);
    }
}

impl State {
    fn remove(&mut self, key: &Key) {
        if let Some(e) = self.entries.remove(key) {
            self.bytes -= e.bytes;
            self.lru.remove(&e.tick);
        }
    }
}

impl SampleObserver for ResultCache {
    fn samples_written(&self, tenant: &TenantId, earliest: UnixNanos) {
        let w = earliest.as_millis();
        if w > self.horizon.load(Ordering::SeqCst) {
            return;
        }
        let mut st = self.state.lock();
        let st = &mut *st;
        let mut touched = false;
        for t in st.tickets.values_mut() {
            if &t.tenant == tenant {
                t.dirty_from = Some(t.dirty_from.map_or(w, |d| d.min(w)));
                touched = true;
            }
        }
        let mut emptied = Vec::new();
        for (k, e) in st.entries.iter_mut() {
            if &k.tenant != tenant || e.last.saturating_add(e.ahead) < w {
                continue;
            }
            touched = true;
            // Steps t with t + ahead < w stay.
            let limit = w.saturating_sub(e.ahead).saturating_sub(1);
            if limit < e.first {
                emptied.push(k.clone());
                continue;
            }
            let last = e.first + (limit - e.first) / k.step * k.step;
            e.series = slice(&e.series, e.first, last);
            e.last = last;
            let bytes = entry_bytes(k, &e.series);
            st.bytes = st.bytes - e.bytes + bytes;
            e.bytes = bytes;
        }
        for k in emptied {
            st.remove(&k);
        }
        if touched {
            self.invalidations.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn samples_removed(&self, tenant: &TenantId) {
        let mut st = self.state.lock();
        for t in st.tickets.values_mut() {
            if &t.tenant == tenant {
                t.dirty_from = Some(i64::MIN);
            }
        }
        let keys: Vec<Key> = st
            .entries
            .keys()
            .filter(|k| &k.tenant == tenant)
            .cloned()
            .collect();
        for k in &keys {
            st.remove(k);
        }
        self.invalidations.fetch_add(1, Ordering::Relaxed);
    }
}

/// How far after a step the samples it reads may lie (ms), or `None` when the query may not be
/// kept: `@` pins selectors to a time of its own (or to the request's start and end), and
/// subqueries are not evaluated.
fn samples_ahead(expr: &Expr) -> Option<i64> {
    struct Ahead(i64);
    impl ExprVisitor for Ahead {
        type Error = ();
        fn pre_visit(&mut self, e: &Expr) -> std::result::Result<bool, ()> {
            let vs = match e {
                Expr::VectorSelector(vs) => vs,
                Expr::MatrixSelector(ms) => &ms.vs,
                Expr::Subquery(_) | Expr::Extension(_) => return Err(()),
                _ => return Ok(true),
            };
            if vs.at.is_some() {
                return Err(());
            }
            if let Some(Offset::Neg(d)) = &vs.offset {
                let ms = i64::try_from(d.as_millis()).map_err(|_| ())?;
                self.0 = self.0.max(ms);
            }
            Ok(true)
        }
    }
    let mut v = Ahead(0);
    walk_expr(&mut v, expr).ok()?;
    Some(v.0)
}

/// The points of `series` from `from` to `to` (inclusive), series left without one dropped.
fn slice(series: &[ResultSeries], from: i64, to: i64) -> Vec<ResultSeries> {
    series
        .iter()
        .filter_map(|s| {
            let a = s.points.partition_point(|p| p.0 < from);
            let b = s.points.partition_point(|p| p.0 <= to);
            (a < b).then(|| ResultSeries {
                labels: s.labels.clone(),
                points: s.points[a..b].to_vec(),
            })
        })
        .collect()
}

/// Joins two answers sorted by labels whose steps do not overlap, `earlier`'s all before
/// `later`'s: one series per label set, sorted by labels. Series of one answer that share a
/// label set are joined too.
fn append_steps(earlier: Vec<ResultSeries>, later: Vec<ResultSeries>) -> Vec<ResultSeries> {
    let mut out: Vec<ResultSeries> = Vec::with_capacity(earlier.len().max(later.len()));
    let mut a = earlier.into_iter().peekable();
    let mut b = later.into_iter().peekable();
    loop {
        let next = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) if x.labels <= y.labels => a.next(),
            (Some(_), Some(_)) => b.next(),
            (Some(_), None) => a.next(),
            (None, Some(_)) => b.next(),
            (None, None) => break,
        };
        let Some(s) = next else { break };
        match out.last_mut() {
            Some(last) if last.labels == s.labels => {
                last.points.extend(s.points);
                last.points.sort_by_key(|p| p.0);
            }
            _ => out.push(s),
        }
    }
    out
}

/// What an entry of `key` holding `series` is counted as.
fn entry_bytes(key: &Key, series: &[ResultSeries]) -> usize {
    128 + key.query.len()
        + series
            .iter()
            .map(|s| {
                64 + s.points.len() * 16
                    + s.labels
                        .iter()
                        .map(|(k, v)| 48 + k.len() + v.len())
                        .sum::<usize>()
            })
            .sum::<usize>()
}

#[cfg(test)]
mod tests;
