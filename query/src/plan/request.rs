//! The JSON form of a plan, as the native HTTP API (`POST /api/v1/aggregate`) and the CLI take
//! it. Times are RFC 3339 or Unix seconds; durations and time buckets are Prometheus-style
//! durations (`1m`, `1h`) or seconds.
//!
//! ```json
//! {"signal": "spans", "start": "2026-06-01T10:00:00Z", "end": "2026-06-01T11:00:00Z",
//!  "matchers": [{"key": "gen_ai.request.model", "op": "=~", "value": "gpt-.*"}],
//!  "filters": [{"field": "duration", "op": ">", "value": 2e9}],
//!  "group_by": ["gen_ai.request.model"], "bucket": "1m",
//!  "aggregates": [{"func": "count"}, {"func": {"quantile": 0.99}, "field": "duration"}],
//!  "order_by": {"by": {"aggregate": 1}, "descending": true}, "limit": 20}
//! ```

use serde::{Deserialize, Serialize};
use sightline_storage::{
    MatchOp, Matcher, Predicate, Signal, TenantId, TimeRange, TraceId, UnixNanos,
};

use super::{Aggregate, FieldFilter, GroupBy, OrderBy, Plan};
use crate::error::{QueryError, Result};
use crate::time::{parse_duration, parse_time};

/// Most output rows a request may ask for.
pub const MAX_LIMIT: usize = 100_000;

/// A matcher in JSON: `{"key": "service.name", "op": "=", "value": "gateway"}`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MatcherSpec {
    /// Attribute key (OpenTelemetry naming) or promoted field (`service.name`, `name`,
    /// `status`, `kind`, `gen_ai.request.model`, ...).
    pub key: String,
    /// `=`, `!=`, `=~` or `!~` (regexes are anchored).
    #[serde(default = "eq")]
    pub op: String,
    /// Literal or regex.
    pub value: String,
}

fn eq() -> String {
    "=".into()
}

/// A plan in JSON.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanRequest {
    /// `spans` or `logs`.
    pub signal: String,
    /// Start (inclusive); unbounded when absent.
    #[serde(default, deserialize_with = "text_or_number")]
    pub start: Option<String>,
    /// End (exclusive); unbounded when absent.
    #[serde(default, deserialize_with = "text_or_number")]
    pub end: Option<String>,
    /// Attribute and field matchers (pushed down to storage).
    #[serde(default)]
    pub matchers: Vec<MatcherSpec>,
    /// Full-text query over log bodies (docs/logs.md "Full-text queries"; logs only).
    #[serde(default)]
    pub text: Option<String>,
    /// Rows of one trace (hex id).
    #[serde(default)]
    pub trace_id: Option<String>,
    /// Numeric filters.
    #[serde(default)]
    pub filters: Vec<FieldFilter>,
    /// Group-by keys.
    #[serde(default)]
    pub group_by: Vec<String>,
    /// Time bucket width (a duration), grouped after the keys.
    #[serde(default, deserialize_with = "text_or_number")]
    pub bucket: Option<String>,
    /// Aggregates; none for a row query (then `limit` is required).
    #[serde(default)]
    pub aggregates: Vec<Aggregate>,
    /// Columns of a row query.
    #[serde(default)]
    pub columns: Vec<String>,
    /// Ordering.
    #[serde(default)]
    pub order_by: Option<OrderBy>,
    /// Most rows returned.
    #[serde(default)]
    pub limit: Option<usize>,
}

/// A time or duration given as a JSON string (`"2026-06-01T10:00:00Z"`, `"1m"`) or as a
/// number of seconds (`1780308000`, `60`); parsed later with the other fields.
fn text_or_number<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum TextOrNumber {
        Text(String),
        Number(serde_json::Number),
    }
    Ok(Option::<TextOrNumber>::deserialize(d)?.map(|v| match v {
        TextOrNumber::Text(s) => s,
        TextOrNumber::Number(n) => n.to_string(),
    }))
}

/// Parses `=`, `!=`, `=~`, `!~`.
pub fn match_op(op: &str) -> Result<MatchOp> {
    Ok(match op {
        "=" => MatchOp::Eq,
        "!=" => MatchOp::NotEq,
        "=~" => MatchOp::Regex,
        "!~" => MatchOp::NotRegex,
        other => {
            return Err(QueryError::BadRequest(format!(
                "unknown match operator {other:?} (use =, !=, =~ or !~)"
            )));
        }
    })
}

impl PlanRequest {
    /// The plan for `tenant`.
    pub fn into_plan(self, tenant: TenantId) -> Result<Plan> {
        let signal = match self.signal.as_str() {
            "spans" | "traces" => Signal::Spans,
            "logs" => Signal::Logs,
            other => {
                return Err(QueryError::BadRequest(format!(
                    "signal must be \"spans\" or \"logs\", not {other:?}"
                )));
            }
        };
        let start = self.start.as_deref().map(parse_time).transpose()?;
        let end = self.end.as_deref().map(parse_time).transpose()?;
        let time = TimeRange::new(
            start.unwrap_or(UnixNanos(i64::MIN)),
            end.unwrap_or(UnixNanos(i64::MAX)),
        )
        .map_err(|e| QueryError::BadRequest(e.to_string()))?;
        let mut plan = Plan::new(tenant, signal, time);
        for m in self.matchers {
            let op = match_op(&m.op)?;
            plan.predicates.push(Predicate::Attr(
                Matcher::new(m.key, op, m.value)
                    .map_err(|e| QueryError::BadRequest(e.to_string()))?,
            ));
        }
        if let Some(text) = self.text {
            if signal != Signal::Logs {
                return Err(QueryError::BadRequest("text search applies to logs".into()));
            }
            plan.predicates.push(Predicate::FullText(text));
        }
        if let Some(id) = self.trace_id {
            let id = TraceId::from_hex(&id).map_err(|e| QueryError::BadRequest(e.to_string()))?;
            plan.predicates.push(Predicate::TraceId(id));
        }
        plan.filters = self.filters;
        plan.group_by = self.group_by.into_iter().map(GroupBy::Key).collect();
        if let Some(b) = self.bucket {
            let step = parse_duration(&b)?;
            if step == 0 {
                return Err(QueryError::BadRequest("bucket must be positive".into()));
            }
            plan.group_by.push(GroupBy::Time(step));
        }
        plan.aggregates = self.aggregates;
        plan.columns = self.columns;
        plan.order_by = self.order_by;
        if let Some(l) = self.limit
            && l > MAX_LIMIT
        {
            return Err(QueryError::BadRequest(format!(
                "limit {l} is over the maximum of {MAX_LIMIT}"
            )));
        }
        plan.limit = self.limit;
        Ok(plan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::AggFunc;

    #[test]
    fn json_plan_round_trip() {
        let req: PlanRequest = serde_json::from_str(
            r#"{"signal": "spans", "start": "2026-06-01T10:00:00Z", "end": "1780311600",
                "matchers": [{"key": "gen_ai.request.model", "op": "=~", "value": "gpt-.*"}],
                "filters": [{"field": "duration", "op": ">", "value": 2e9}],
                "group_by": ["gen_ai.request.model"], "bucket": "1m",
                "aggregates": [{"func": "count"}, {"func": {"quantile": 0.99}, "field": "duration"}],
                "order_by": {"by": {"aggregate": 1}, "descending": true}, "limit": 20}"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let plan = req
            .into_plan(TenantId::new("t").unwrap_or_else(|e| panic!("{e}")))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(plan.time.start, UnixNanos(1_780_308_000_000_000_000));
        assert_eq!(plan.time.end, UnixNanos(1_780_311_600_000_000_000));
        assert_eq!(plan.group_by.len(), 2);
        assert_eq!(plan.group_by[1], GroupBy::Time(60_000_000_000));
        assert_eq!(plan.aggregates[1].func, AggFunc::Quantile(0.99));
        assert_eq!(plan.predicates.len(), 1);
    }

    #[test]
    fn times_and_buckets_may_be_json_numbers() {
        let req: PlanRequest = serde_json::from_str(
            r#"{"signal": "spans", "start": 1780308000, "end": 1780311600.5, "bucket": 60,
                "aggregates": [{"func": "count"}]}"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let plan = req
            .into_plan(TenantId::new("t").unwrap_or_else(|e| panic!("{e}")))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(plan.time.start, UnixNanos(1_780_308_000_000_000_000));
        assert_eq!(plan.time.end, UnixNanos(1_780_311_600_500_000_000));
        assert_eq!(plan.group_by, vec![GroupBy::Time(60_000_000_000)]);
        let bad = serde_json::from_str::<PlanRequest>(r#"{"signal": "spans", "start": [1]}"#);
        assert!(bad.is_err());
    }

    #[test]
    fn bad_requests_say_what_is_wrong() {
        let t = || TenantId::new("t").unwrap_or_else(|e| panic!("{e}"));
        let bad = |j: &str| -> String {
            match serde_json::from_str::<PlanRequest>(j) {
                Err(e) => e.to_string(),
                Ok(r) => r
                    .into_plan(t())
                    .err()
                    .map(|e| e.to_string())
                    .unwrap_or_default(),
            }
        };
        assert!(bad(r#"{"signal": "metrics"}"#).contains("signal"));
        assert!(bad(r#"{"signal": "spans", "start": "x"}"#).contains("cannot parse"));
        assert!(
            bad(r#"{"signal": "spans", "matchers": [{"key": "a", "op": "~", "value": "b"}]}"#)
                .contains("match operator")
        );
        assert!(bad(r#"{"signal": "spans", "text": "x"}"#).contains("logs"));
        assert!(bad(r#"{"signal": "spans", "bogus": 1}"#).contains("unknown field"));
        assert!(bad(r#"{"signal": "spans", "start": "10", "end": "5"}"#).contains("before"));
    }
}
