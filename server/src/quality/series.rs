//! Quality metrics per group per time bucket (`GET /api/v1/quality`).
//!
//! Buckets are `step` wide and aligned to the Unix epoch; a point's time is its bucket's start.
//! Every bucket from the one holding `start` to the one holding `end - 1ns` gets a point, `null`
//! when the group had no data there. Per metric:
//!
//! | metric | value of a bucket |
//! |---|---|
//! | `token_entropy_mean` | mean of the spans' mean token entropy (nats) |
//! | `hallucination_index` | mean hallucination index of the spans scored at ingest |
//! | `low_confidence_tokens` | mean low-confidence token count per span |
//! | `context_expansion` | pooled expansion rate of the turn pairs ending in the bucket |
//! | `cache_hit_ratio` | `sum(cache_read_input_tokens) / sum(input_tokens)` of spans reporting cache reads |
//!
//! Context expansion: the turns of a conversation (`gen_ai.conversation.id`, spans with input
//! and output token counts) are ordered by time; each consecutive pair `(prev, next)` is one
//! two-turn conversation for [`context_expansion`], attributed to `next`'s group and bucket, so
//! a bucket's value is `sum(input_next - input_prev) / sum(output_prev)` over its pairs.

use std::collections::BTreeMap;

use sightline_detect::context::{Turn, context_expansion};
use sightline_query::plan::{
    AggFunc, Aggregate, Cell, CmpOp, FieldFilter, GroupBy, Plan, Table, execute,
};
use sightline_storage::{Deadline, Signal, Store, TenantId, TimeRange, UnixNanos};

use super::{GroupKey, QualityError, SpanFilters};

/// Most points one series may have.
pub const MAX_POINTS: i64 = 11_000;
/// Most turns read for a context-expansion answer.
pub const MAX_TURNS: usize = 1_000_000;
const NS_PER_MS: i64 = 1_000_000;

/// A quality metric (`metric=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QualityMetric {
    /// Mean token entropy.
    TokenEntropyMean,
    /// Hallucination index.
    HallucinationIndex,
    /// Low-confidence tokens per response.
    LowConfidenceTokens,
    /// Context-expansion rate.
    ContextExpansion,
    /// Prompt-cache hit ratio.
    CacheHitRatio,
}

impl QualityMetric {
    /// Every metric, by name.
    pub const ALL: [(&'static str, QualityMetric); 5] = [
        ("token_entropy_mean", QualityMetric::TokenEntropyMean),
        ("hallucination_index", QualityMetric::HallucinationIndex),
        ("low_confidence_tokens", QualityMetric::LowConfidenceTokens),
        ("context_expansion", QualityMetric::ContextExpansion),
        ("cache_hit_ratio", QualityMetric::CacheHitRatio),
    ];

    /// Parses a metric name.
    pub fn parse(s: &str) -> Result<Self, QualityError> {
        Self::ALL
            .iter()
            .find(|(n, _)| *n == s)
            .map(|(_, m)| *m)
            .ok_or_else(|| {
                let names: Vec<&str> = Self::ALL.iter().map(|(n, _)| *n).collect();
                QualityError::BadRequest(format!(
                    "metric: expected one of {}, got {s:?}",
                    names.join(", ")
                ))
            })
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, m)| *m == self)
            .map(|(n, _)| *n)
            .unwrap_or("")
    }
}

/// A `/api/v1/quality` question.
#[derive(Clone, Debug)]
pub struct QualityQuery {
    /// The metric.
    pub metric: QualityMetric,
    /// The grouping.
    pub by: GroupKey,
    /// Start, Unix nanoseconds (inclusive).
    pub start_ns: i64,
    /// End, Unix nanoseconds (exclusive).
    pub end_ns: i64,
    /// Bucket width, nanoseconds (a whole number of milliseconds).
    pub step_ns: i64,
    /// Span filters.
    pub filters: SpanFilters,
}

/// One group's series.
#[derive(Clone, Debug, serde::Serialize)]
pub struct QualitySeries {
    /// The group's value (`""` for spans without the key).
    pub group: String,
    /// `[bucket start ms, value or null]`, one per bucket.
    pub points: Vec<(i64, Option<f64>)>,
}

pub(super) fn cell_str(c: &Cell) -> String {
    match c {
        Cell::Str(s) => s.clone(),
        Cell::Int(i) => i.to_string(),
        Cell::Num(v) => v.to_string(),
        Cell::Null => String::new(),
    }
}

fn cell_i64(c: &Cell) -> Option<i64> {
    match c {
        Cell::Int(i) => Some(*i),
        _ => None,
    }
}

fn has(field: &str) -> FieldFilter {
    FieldFilter {
        field: field.into(),
        op: CmpOp::Ge,
        value: f64::MIN,
    }
}

fn agg(func: AggFunc, field: &str) -> Aggregate {
    Aggregate {
        func,
        field: Some(field.into()),
    }
}

impl QualityQuery {
    fn validate(&self) -> Result<(i64, usize), QualityError> {
        if self.step_ns < NS_PER_MS || self.step_ns % NS_PER_MS != 0 {
            return Err(QualityError::BadRequest(
                "step must be a positive whole number of milliseconds".into(),
            ));
        }
        if self.end_ns <= self.start_ns {
            return Err(QualityError::BadRequest("end must be after start".into()));
        }
        let first = self.start_ns.div_euclid(self.step_ns) * self.step_ns;
        let last = (self.end_ns - 1).div_euclid(self.step_ns) * self.step_ns;
        // In i128: an extreme range (i64::MIN..i64::MAX) overflows i64 here.
        let n = (i128::from(last) - i128::from(first)) / i128::from(self.step_ns) + 1;
        if n > i128::from(MAX_POINTS) {
            return Err(QualityError::BadRequest(format!(
                "{n} points per series; at most {MAX_POINTS} (raise step or shorten the range)"
            )));
        }
        Ok((first, n as usize))
    }

    pub(super) fn plan(&self, tenant: &TenantId, time: TimeRange) -> Plan {
        let mut plan = Plan::new(tenant.clone(), Signal::Spans, time);
        plan.predicates = self.filters.predicates();
        plan
    }
}

/// Series per group, sorted by group, for `q` over `tenant`'s spans.
pub fn quality_series(
    store: &Store,
    tenant: &TenantId,
    q: &QualityQuery,
    deadline: &Deadline,
) -> Result<Vec<QualitySeries>, QualityError> {
    let (first_ns, n) = q.validate()?;
    let time = TimeRange::new(UnixNanos(q.start_ns), UnixNanos(q.end_ns))
        .map_err(|e| QualityError::BadRequest(e.to_string()))?;
    let mut plan = q.plan(tenant, time);
    plan.deadline = deadline.clone();
    let key = q.by.key().to_owned();
    // group -> bucket index -> value
    let mut groups: BTreeMap<String, Vec<Option<f64>>> = BTreeMap::new();
    let mut put = |group: String, bucket_ns: i64, v: Option<f64>| {
        let i = (bucket_ns - first_ns) / q.step_ns;
        if let (Ok(i), Some(v)) = (usize::try_from(i), v)
            && i < n
            && v.is_finite()
        {
            groups.entry(group).or_insert_with(|| vec![None; n])[i] = Some(v);
        }
    };
    match q.metric {
        QualityMetric::TokenEntropyMean
        | QualityMetric::HallucinationIndex
        | QualityMetric::LowConfidenceTokens => {
            let field = q.metric.name();
            plan.group_by = vec![GroupBy::Key(key), GroupBy::Time(q.step_ns)];
            plan.filters = vec![has(field)];
            plan.aggregates = vec![agg(AggFunc::Avg, field)];
            for r in execute(store, &plan)?.rows {
                if let [g, t, v] = r.as_slice()
                    && let Some(t) = cell_i64(t)
                {
                    put(cell_str(g), t, v.as_f64());
                }
            }
        }
        QualityMetric::CacheHitRatio => {
            const CACHE: &str = "gen_ai.usage.cache_read_input_tokens";
            const INPUT: &str = "gen_ai.usage.input_tokens";
            plan.group_by = vec![GroupBy::Key(key), GroupBy::Time(q.step_ns)];
            plan.filters = vec![has(CACHE), has(INPUT)];
            plan.aggregates = vec![agg(AggFunc::Sum, CACHE), agg(AggFunc::Sum, INPUT)];
            for r in execute(store, &plan)?.rows {
                if let [g, t, cached, input] = r.as_slice()
                    && let (Some(t), Some(c), Some(i)) =
                        (cell_i64(t), cached.as_f64(), input.as_f64())
                    && i > 0.0
                {
                    put(cell_str(g), t, Some(c / i));
                }
            }
        }
        QualityMetric::ContextExpansion => {
            for (g, t, v) in expansion(store, q, plan, key)? {
                put(g, t, Some(v));
            }
        }
    }
    Ok(groups
        .into_iter()
        .map(|(group, vals)| QualitySeries {
            group,
            points: vals
                .into_iter()
                .enumerate()
                .map(|(i, v)| ((first_ns + i as i64 * q.step_ns) / NS_PER_MS, v))
                .collect(),
        })
        .collect())
}

/// One LLM call as read for context expansion.
struct Call {
    conversation: String,
    group: String,
    time_ns: i64,
    input: u64,
    output: u64,
}

fn calls(table: Table) -> Vec<Call> {
    table
        .rows
        .into_iter()
        .filter_map(|r| match r.as_slice() {
            [conv, g, t, input, output] => {
                let conversation = cell_str(conv);
                if conversation.is_empty() {
                    return None;
                }
                Some(Call {
                    conversation,
                    group: cell_str(g),
                    time_ns: cell_i64(t)?,
                    input: input.as_f64()?.max(0.0) as u64,
                    output: output.as_f64()?.max(0.0) as u64,
                })
            }
            _ => None,
        })
        .collect()
}

/// `(group, bucket start ns, pooled rate)` for every group and bucket with turn pairs.
fn expansion(
    store: &Store,
    q: &QualityQuery,
    mut plan: Plan,
    key: String,
) -> Result<Vec<(String, i64, f64)>, QualityError> {
    const INPUT: &str = "gen_ai.usage.input_tokens";
    const OUTPUT: &str = "gen_ai.usage.output_tokens";
    // One group per call: conversation, group key and the call's start (1 ns buckets).
    plan.group_by = vec![
        GroupBy::Key("gen_ai.conversation.id".into()),
        GroupBy::Key(key),
        GroupBy::Time(1),
    ];
    plan.filters = vec![has(INPUT), has(OUTPUT)];
    plan.aggregates = vec![agg(AggFunc::Sum, INPUT), agg(AggFunc::Sum, OUTPUT)];
    let mut all = calls(execute(store, &plan)?);
    if all.len() > MAX_TURNS {
        return Err(QualityError::BadRequest(format!(
            "more than {MAX_TURNS} LLM calls in the range; shorten it"
        )));
    }
    all.sort_by(|a, b| {
        a.conversation
            .cmp(&b.conversation)
            .then(a.time_ns.cmp(&b.time_ns))
    });
    // (group, bucket) -> turns of two-turn pseudo-conversations
    let mut per: BTreeMap<(String, i64), Vec<Turn>> = BTreeMap::new();
    for (i, w) in all.windows(2).enumerate() {
        let [prev, next] = w else { continue };
        if prev.conversation != next.conversation {
            continue;
        }
        let bucket = next.time_ns.div_euclid(q.step_ns) * q.step_ns;
        let id = format!("{}#{i}", next.conversation);
        let turns = per.entry((next.group.clone(), bucket)).or_default();
        for (c, t) in [(prev, prev.time_ns), (next, next.time_ns)] {
            turns.push(Turn {
                conversation_id: id.clone(),
                timestamp_ms: t / NS_PER_MS,
                route: next.group.clone(),
                input_tokens: c.input,
                output_tokens: c.output,
                cache_read_input_tokens: None,
            });
        }
    }
    let mut out = Vec::new();
    for ((group, bucket), turns) in per {
        let report = context_expansion(&turns)
            .map_err(|e| QualityError::BadRequest(format!("context expansion: {e}")))?;
        if let Some(rate) = report.routes.first().and_then(|r| r.pooled_rate) {
            out.push((group, bucket, rate));
        }
    }
    Ok(out)
}
