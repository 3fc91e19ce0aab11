//! Where selectors read samples from: the store, or any [`SampleSource`] (tests use a fixed one).

use std::sync::Arc;

use rustc_hash::FxHashMap;
use sightline_storage::{
    MatchOp, Matcher, Predicate, ScanRequest, Signal, Store, TenantId, TimeRange, UnixNanos,
};

use super::budget::Budget;
use super::value::{Labels, METRIC_NAME, RawSeries};
use crate::error::{QueryError, Result};

/// Supplies the raw samples of the series matching label matchers.
pub trait SampleSource: Send + Sync {
    /// Series matching every matcher, with their samples in `[start_ms, end_ms]`, sorted.
    /// `budget.max_samples` is what the evaluation may still load: a source fails with
    /// [`QueryError::TooManySamples`] rather than return more, and with
    /// [`QueryError::Timeout`] once `budget.deadline` passes.
    fn select(
        &self,
        matchers: &[Matcher],
        start_ms: i64,
        end_ms: i64,
        budget: &Budget,
    ) -> Result<Vec<RawSeries>>;
}

/// One tenant's metrics in a [`Store`].
pub struct StoreSource<'a> {
    store: &'a Store,
    tenant: TenantId,
}

impl<'a> StoreSource<'a> {
    /// Reads `tenant`'s samples from `store`.
    pub fn new(store: &'a Store, tenant: TenantId) -> Self {
        Self { store, tenant }
    }
}

fn labels_of(def: &sightline_storage::SeriesDef) -> Labels {
    let mut v: Vec<(String, String)> = Vec::with_capacity(def.labels.len() + 1);
    v.push((METRIC_NAME.to_owned(), def.metric_name.clone()));
    v.extend(def.labels.iter().cloned());
    v.sort();
    Arc::new(v)
}

impl SampleSource for StoreSource<'_> {
    fn select(
        &self,
        matchers: &[Matcher],
        start_ms: i64,
        end_ms: i64,
        budget: &Budget,
    ) -> Result<Vec<RawSeries>> {
        budget.check_deadline()?;
        let defs = self.store.series(&self.tenant, matchers);
        if defs.is_empty() {
            return Ok(Vec::new());
        }
        let start = UnixNanos::from_millis(start_ms.max(0));
        let end = UnixNanos::from_millis(end_ms.saturating_add(1).max(0));
        let range = TimeRange::new(start, end).map_err(QueryError::from)?;
        let mut req = ScanRequest::new(self.tenant.clone(), Signal::Samples, range);
        req.predicates = matchers.iter().cloned().map(Predicate::Attr).collect();
        req.deadline = budget.deadline.clone();
        // Refused before the samples are merged and copied out of the scan's batches.
        let res = self.store.scan_samples(&req, budget.max_samples)?;
        let mut by_id: FxHashMap<u64, sightline_storage::SeriesSamples> =
            res.series.into_iter().map(|s| (s.series.0, s)).collect();
        let mut out = Vec::with_capacity(defs.len());
        for d in defs {
            if let Some(s) = by_id.remove(&d.id.0) {
                out.push(RawSeries {
                    labels: labels_of(&d),
                    timestamps: s.timestamps,
                    values: s.values,
                });
            }
        }
        Ok(out)
    }
}

/// Series held in memory (tests, and data computed elsewhere).
#[derive(Debug, Default, Clone)]
pub struct MemorySource {
    /// The series.
    pub series: Vec<RawSeries>,
}

impl SampleSource for MemorySource {
    fn select(
        &self,
        matchers: &[Matcher],
        start_ms: i64,
        end_ms: i64,
        budget: &Budget,
    ) -> Result<Vec<RawSeries>> {
        let mut out = Vec::new();
        let mut loaded = 0usize;
        for s in &self.series {
            budget.check_deadline()?;
            if !matchers
                .iter()
                .all(|m| m.matches(super::value::label(&s.labels, &m.key)))
            {
                continue;
            }
            let idx: Vec<usize> = (0..s.timestamps.len())
                .filter(|&i| s.timestamps[i] >= start_ms && s.timestamps[i] <= end_ms)
                .collect();
            if idx.is_empty() {
                continue;
            }
            loaded += idx.len();
            if loaded > budget.max_samples {
                return Err(QueryError::TooManySamples);
            }
            out.push(RawSeries {
                labels: s.labels.clone(),
                timestamps: idx.iter().map(|&i| s.timestamps[i]).collect(),
                values: idx.iter().map(|&i| s.values[i]).collect(),
            });
        }
        Ok(out)
    }
}

/// Converts promql-parser matchers to storage matchers.
pub fn convert_matchers(
    name: Option<&str>,
    matchers: &promql_parser::label::Matchers,
) -> Result<Vec<Matcher>> {
    if !matchers.or_matchers.is_empty() {
        return Err(QueryError::Unsupported("`or` inside a selector".into()));
    }
    let mut out = Vec::with_capacity(matchers.matchers.len() + 1);
    if let Some(n) = name {
        out.push(Matcher::eq(METRIC_NAME, n));
    }
    for m in &matchers.matchers {
        use promql_parser::label::MatchOp as P;
        let op = match &m.op {
            P::Equal => MatchOp::Eq,
            P::NotEqual => MatchOp::NotEq,
            P::Re(_) => MatchOp::Regex,
            P::NotRe(_) => MatchOp::NotRegex,
        };
        out.push(Matcher::new(m.name.clone(), op, m.value.clone())?);
    }
    Ok(out)
}
