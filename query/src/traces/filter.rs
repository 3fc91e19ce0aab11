//! Span conditions: what a trace or span search asks for, where each condition's value lives
//! (a promoted column, the span attributes, the resource attributes), which conditions storage
//! can prune with, and their exact evaluation on Arrow batches.
//!
//! Semantics:
//! * string conditions (`=`, `!=`, `=~`, `!~`) follow the storage matchers: a missing value is
//!   `""`, so `!=` matches spans without the attribute, and regexes are anchored;
//! * numeric conditions (`<`, `<=`, `>`, `>=`, `=`, `!=`) hold only for spans that have a numeric
//!   value (an int or double attribute, or a non-null promoted column); a missing value never
//!   matches, whatever the operator;
//! * an unscoped key (`.key`, or a native-API attribute filter) is looked up as storage does: the
//!   promoted column when the key has one, else the span attributes, else the resource
//!   attributes; `span.` and `resource.` restrict the lookup to one list;
//! * an alternative ([`Cond::Any`], built by [`Cond::any`] from string conditions) holds when
//!   any of its conditions holds (the native API's `model` filter: request or response model).

use arrow_array::{
    Array, BooleanArray, FixedSizeBinaryArray, Float64Array, Int64Array, MapArray, RecordBatch,
    StringArray, UInt8Array,
};
use sightline_storage::columnar::AttrReader;
use sightline_storage::predicate::span_kind_name;
use sightline_storage::schema::{self, col};
use sightline_storage::{AttrValue, MAX_ANY_OF, MatchOp, Matcher, Predicate, Signal, StatusCode};

use crate::error::{QueryError, Result};

/// Which attribute list a key is looked up in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Promoted column, then span attributes, then resource attributes.
    Any,
    /// Span attributes (and the span's promoted columns).
    Span,
    /// Resource attributes (and `service.name`).
    Resource,
}

/// Numeric comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum CmpOp {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `=`
    Eq,
    /// `!=`
    Ne,
}

impl CmpOp {
    /// Whether `a op b`.
    pub fn holds(self, a: f64, b: f64) -> bool {
        match self {
            CmpOp::Lt => a < b,
            CmpOp::Le => a <= b,
            CmpOp::Gt => a > b,
            CmpOp::Ge => a >= b,
            CmpOp::Eq => a == b,
            CmpOp::Ne => a != b,
        }
    }
}

/// Intrinsic key of the span duration (nanoseconds).
pub const DURATION_KEY: &str = "duration";

/// Promoted numeric columns, addressable by these keys. Quality columns computed at ingest are
/// exposed under `sightline.*` names (the same names the Tempo API shows them under).
pub const NUMERIC_COLUMNS: &[(&str, &str)] = &[
    (DURATION_KEY, col::DURATION),
    ("gen_ai.usage.input_tokens", col::GEN_AI_INPUT_TOKENS),
    ("gen_ai.usage.output_tokens", col::GEN_AI_OUTPUT_TOKENS),
    ("gen_ai.usage.total_tokens", col::GEN_AI_TOTAL_TOKENS),
    (
        "gen_ai.usage.cache_read.input_tokens",
        col::GEN_AI_CACHE_READ_TOKENS,
    ),
    ("gen_ai.usage.cost", col::GEN_AI_COST),
    ("gen_ai.request.temperature", col::GEN_AI_TEMPERATURE),
    ("sightline.entropy.mean", col::ENTROPY_MEAN),
    ("sightline.entropy.max", col::ENTROPY_MAX),
    (
        "sightline.low_confidence_tokens",
        col::LOW_CONFIDENCE_TOKENS,
    ),
    ("sightline.hallucination_index", col::HALLUCINATION_INDEX),
];

/// One condition on a span.
#[derive(Clone, Debug)]
pub enum Cond {
    /// A string comparison.
    Str {
        /// Where to look the key up.
        scope: Scope,
        /// The matcher (its key is the attribute key, OpenTelemetry naming).
        matcher: Matcher,
    },
    /// A numeric comparison.
    Num {
        /// Where to look the key up.
        scope: Scope,
        /// Attribute key (or `duration`, in nanoseconds).
        key: String,
        /// Operator.
        op: CmpOp,
        /// Right-hand side.
        value: f64,
    },
    /// Any of these conditions: the OR of the alternatives. [`Cond::any`] builds it from 1 to
    /// [`MAX_ANY_OF`] string conditions ([`Cond::Str`]); storage then evaluates it as one
    /// [`Predicate::AnyOf`] when every alternative pushes down. Other contents are evaluated
    /// here (an empty `Any` holds for no span).
    Any(Vec<Cond>),
}

impl Cond {
    /// `key op value` as a string condition.
    pub fn string(scope: Scope, key: &str, op: MatchOp, value: &str) -> Result<Self> {
        let matcher =
            Matcher::new(key, op, value).map_err(|e| QueryError::BadRequest(e.to_string()))?;
        Ok(Cond::Str { scope, matcher })
    }

    /// `key op value` as a numeric condition.
    pub fn number(scope: Scope, key: &str, op: CmpOp, value: f64) -> Self {
        Cond::Num {
            scope,
            key: key.to_owned(),
            op,
            value,
        }
    }

    /// Any of `alternatives` (1 to [`MAX_ANY_OF`] string conditions).
    pub fn any(alternatives: Vec<Cond>) -> Result<Self> {
        if alternatives.is_empty() || alternatives.len() > MAX_ANY_OF {
            return Err(QueryError::BadRequest(format!(
                "an alternative needs 1 to {MAX_ANY_OF} conditions, got {}",
                alternatives.len()
            )));
        }
        if !alternatives.iter().all(|c| matches!(c, Cond::Str { .. })) {
            return Err(QueryError::BadRequest(
                "alternatives must be string conditions".into(),
            ));
        }
        Ok(Cond::Any(alternatives))
    }

    /// `status = <code>`.
    pub fn status(code: StatusCode) -> Self {
        Cond::Str {
            scope: Scope::Any,
            matcher: Matcher::eq("status", code.as_str()),
        }
    }
}

/// Where a condition's value is read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    Column(&'static str),
    SpanAttr,
    ResourceAttr,
    AnyAttr,
}

fn string_source(scope: Scope, key: &str) -> Source {
    let promoted = schema::promoted_column(Signal::Spans, key);
    match (scope, promoted) {
        (Scope::Any, Some(c)) => Source::Column(c),
        (Scope::Any, None) => Source::AnyAttr,
        (Scope::Resource, _) if key == "service.name" => Source::Column(col::SERVICE_NAME),
        (Scope::Resource, _) => Source::ResourceAttr,
        (Scope::Span, Some(c)) if c != col::SERVICE_NAME => Source::Column(c),
        (Scope::Span, _) => Source::SpanAttr,
    }
}

fn numeric_source(scope: Scope, key: &str) -> Source {
    let promoted = NUMERIC_COLUMNS
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, c)| *c);
    match (scope, promoted) {
        (Scope::Any | Scope::Span, Some(c)) => Source::Column(c),
        (Scope::Any, None) => Source::AnyAttr,
        (Scope::Span, None) => Source::SpanAttr,
        (Scope::Resource, _) => Source::ResourceAttr,
    }
}

impl Cond {
    /// Where the value is read from (`None` for an alternative, which reads its conditions').
    fn source(&self) -> Option<Source> {
        match self {
            Cond::Str { scope, matcher } => Some(string_source(*scope, &matcher.key)),
            Cond::Num { scope, key, .. } => Some(numeric_source(*scope, key)),
            Cond::Any(_) => None,
        }
    }

    /// The storage predicate that evaluates this condition exactly, when there is one (string
    /// conditions whose lookup is the storage's own: promoted columns and unscoped attributes;
    /// an alternative of 1 to [`MAX_ANY_OF`] such conditions, as [`Predicate::AnyOf`]).
    /// Storage then prunes with postings and evaluates it; the condition need not be checked
    /// again.
    pub fn pushdown(&self) -> Option<Predicate> {
        if let Cond::Any(alternatives) = self {
            return Self::pushdown_any(alternatives);
        }
        match (self, self.source()?) {
            (Cond::Str { matcher, .. }, Source::Column(c)) => {
                // Storage resolves the key itself; make sure it lands on the same column.
                (schema::promoted_column(Signal::Spans, &matcher.key) == Some(c))
                    .then(|| Predicate::Attr(matcher.clone()))
            }
            (Cond::Str { matcher, .. }, Source::AnyAttr) => Some(Predicate::Attr(matcher.clone())),
            _ => None,
        }
    }

    fn pushdown_any(alternatives: &[Cond]) -> Option<Predicate> {
        if alternatives.is_empty() || alternatives.len() > MAX_ANY_OF {
            return None;
        }
        let mut matchers = Vec::with_capacity(alternatives.len());
        for c in alternatives {
            match c.pushdown()? {
                Predicate::Attr(m) => matchers.push(m),
                _ => return None,
            }
        }
        Some(Predicate::AnyOf(matchers))
    }

    /// Columns needed to evaluate the condition on a batch (for an alternative, the union of
    /// its conditions').
    pub fn columns(&self) -> Vec<&'static str> {
        match self.source() {
            Some(Source::Column(c)) => vec![c],
            Some(Source::SpanAttr) => vec![col::ATTRIBUTES],
            Some(Source::ResourceAttr) => vec![col::RESOURCE_ATTRIBUTES],
            Some(Source::AnyAttr) => vec![col::ATTRIBUTES, col::RESOURCE_ATTRIBUTES],
            None => {
                let mut out: Vec<&'static str> = Vec::new();
                if let Cond::Any(alternatives) = self {
                    for c in alternatives.iter().flat_map(Cond::columns) {
                        if !out.contains(&c) {
                            out.push(c);
                        }
                    }
                }
                out
            }
        }
    }

    /// Evaluates the condition on every row of a span batch holding [`Cond::columns`].
    pub fn eval(&self, batch: &RecordBatch) -> Result<BooleanArray> {
        let n = batch.num_rows();
        match self {
            Cond::Any(alternatives) => {
                let mut acc = vec![false; n];
                for c in alternatives {
                    let mask = c.eval(batch)?;
                    for (a, i) in acc.iter_mut().zip(0..mask.len()) {
                        *a = *a || (mask.is_valid(i) && mask.value(i));
                    }
                }
                Ok(BooleanArray::from(acc))
            }
            Cond::Str { scope, matcher } => {
                let source = string_source(*scope, &matcher.key);
                if let Source::Column(c) = source {
                    return eval_str_column(batch, c, matcher);
                }
                let lists = attr_lists(batch, source)?;
                let mut out = Vec::with_capacity(n);
                for row in 0..n {
                    let v = lookup(&lists, row, &matcher.key)?;
                    let text = match v {
                        Some(v) => v.render(),
                        None => String::new(),
                    };
                    out.push(Some(matcher.matches(&text)));
                }
                Ok(out.into_iter().collect())
            }
            Cond::Num {
                scope,
                key,
                op,
                value,
            } => {
                let source = numeric_source(*scope, key);
                if let Source::Column(c) = source {
                    return eval_num_column(batch, c, *op, *value);
                }
                let lists = attr_lists(batch, source)?;
                let mut out = Vec::with_capacity(n);
                for row in 0..n {
                    let v = match lookup(&lists, row, key)? {
                        Some(AttrValue::Int(i)) => Some(i as f64),
                        Some(AttrValue::Double(d)) => Some(d),
                        _ => None,
                    };
                    out.push(Some(v.is_some_and(|v| op.holds(v, *value))));
                }
                Ok(out.into_iter().collect())
            }
        }
    }
}

fn missing(name: &str) -> QueryError {
    QueryError::Execution(format!(
        "span column {name} missing or of an unexpected type"
    ))
}

fn eval_str_column(batch: &RecordBatch, column: &str, m: &Matcher) -> Result<BooleanArray> {
    let array = batch
        .column_by_name(column)
        .ok_or_else(|| missing(column))?;
    let any = array.as_any();
    if column == col::STATUS_CODE {
        let a = any
            .downcast_ref::<UInt8Array>()
            .ok_or_else(|| missing(column))?;
        return Ok(a
            .values()
            .iter()
            .map(|c| Some(m.matches(StatusCode::from_code(i32::from(*c)).as_str())))
            .collect());
    }
    if column == col::SPAN_KIND {
        let a = any
            .downcast_ref::<UInt8Array>()
            .ok_or_else(|| missing(column))?;
        return Ok(a
            .values()
            .iter()
            .map(|c| Some(m.matches(span_kind_name(*c))))
            .collect());
    }
    if let Some(a) = any.downcast_ref::<StringArray>() {
        return Ok((0..a.len())
            .map(|i| Some(m.matches(if a.is_null(i) { "" } else { a.value(i) })))
            .collect());
    }
    if let Some(a) = any.downcast_ref::<Int64Array>() {
        return Ok((0..a.len())
            .map(|i| {
                Some(if a.is_null(i) {
                    m.matches("")
                } else {
                    m.matches(&a.value(i).to_string())
                })
            })
            .collect());
    }
    Err(missing(column))
}

fn eval_num_column(batch: &RecordBatch, column: &str, op: CmpOp, v: f64) -> Result<BooleanArray> {
    let array = batch
        .column_by_name(column)
        .ok_or_else(|| missing(column))?;
    let any = array.as_any();
    if let Some(a) = any.downcast_ref::<Int64Array>() {
        return Ok((0..a.len())
            .map(|i| Some(!a.is_null(i) && op.holds(a.value(i) as f64, v)))
            .collect());
    }
    if let Some(a) = any.downcast_ref::<Float64Array>() {
        return Ok((0..a.len())
            .map(|i| Some(!a.is_null(i) && op.holds(a.value(i), v)))
            .collect());
    }
    Err(missing(column))
}

/// Reads the attribute map column `name` of a span batch through storage's one reader of the
/// attribute layout; a missing column is an execution error naming it.
pub fn attr_reader<'a>(batch: &'a RecordBatch, name: &str) -> Result<AttrReader<'a>> {
    let map = batch
        .column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<MapArray>())
        .ok_or_else(|| missing(name))?;
    Ok(AttrReader::new(map)?)
}

fn attr_lists(batch: &RecordBatch, source: Source) -> Result<Vec<AttrReader<'_>>> {
    Ok(match source {
        Source::SpanAttr => vec![attr_reader(batch, col::ATTRIBUTES)?],
        Source::ResourceAttr => vec![attr_reader(batch, col::RESOURCE_ATTRIBUTES)?],
        Source::AnyAttr => vec![
            attr_reader(batch, col::ATTRIBUTES)?,
            attr_reader(batch, col::RESOURCE_ATTRIBUTES)?,
        ],
        Source::Column(_) => Vec::new(),
    })
}

fn lookup(lists: &[AttrReader<'_>], row: usize, key: &str) -> Result<Option<AttrValue>> {
    for l in lists {
        if let Some(v) = l.get(row, key)? {
            return Ok(Some(v));
        }
    }
    Ok(None)
}

/// ANDs a condition mask into `acc`.
pub fn and_into(acc: &mut [bool], mask: &BooleanArray) {
    for (a, i) in acc.iter_mut().zip(0..mask.len()) {
        *a = *a && mask.is_valid(i) && mask.value(i);
    }
}

/// Reads a fixed-size binary id column cell.
pub fn fixed_bytes<'a>(batch: &'a RecordBatch, name: &str) -> Result<&'a FixedSizeBinaryArray> {
    batch
        .column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<FixedSizeBinaryArray>())
        .ok_or_else(|| missing(name))
}

/// A typed column of a batch.
pub fn column<'a, T: 'static>(batch: &'a RecordBatch, name: &str) -> Result<&'a T> {
    batch
        .column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<T>())
        .ok_or_else(|| missing(name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sightline_storage::columnar::spans_to_batch;
    use sightline_storage::{SpanId, SpanRecord, TraceId, UnixNanos};

    fn span(n: u8, request: Option<&str>, response: Option<&str>, tier: &str) -> SpanRecord {
        let mut s = SpanRecord::new(
            TraceId([n; 16]),
            SpanId([n; 8]),
            "llm",
            "chat",
            UnixNanos(1),
            UnixNanos(2),
        );
        s.gen_ai.request_model = request.map(str::to_owned);
        s.gen_ai.response_model = response.map(str::to_owned);
        s.attributes = vec![("tier".into(), AttrValue::Str(tier.into()))];
        s
    }

    fn eq(scope: Scope, key: &str, v: &str) -> Cond {
        Cond::string(scope, key, MatchOp::Eq, v).expect("cond")
    }

    fn model(v: &str) -> Cond {
        Cond::any(vec![
            eq(Scope::Any, "gen_ai.request.model", v),
            eq(Scope::Any, "gen_ai.response.model", v),
        ])
        .expect("any")
    }

    fn mask(c: &Cond, batch: &RecordBatch) -> Vec<bool> {
        let m = c.eval(batch).expect("eval");
        (0..m.len()).map(|i| m.is_valid(i) && m.value(i)).collect()
    }

    #[test]
    fn any_is_the_or_of_its_conditions_and_pushes_down_as_any_of() {
        let batch = spans_to_batch(&[
            span(1, Some("gpt-4o"), Some("gpt-4o-2024-08-06"), "pro"),
            span(
                2,
                Some("gpt-4o-mini"),
                Some("gpt-4o-mini-2024-07-18"),
                "free",
            ),
            span(3, None, Some("gpt-4o"), "free"),
        ])
        .expect("batch");
        let c = model("gpt-4o");
        assert_eq!(mask(&c, &batch), [true, false, true]);
        assert_eq!(
            mask(&model("gpt-4o-2024-08-06"), &batch),
            [true, false, false]
        );
        assert_eq!(mask(&model("none"), &batch), [false, false, false]);
        assert_eq!(
            c.columns(),
            [col::GEN_AI_REQUEST_MODEL, col::GEN_AI_RESPONSE_MODEL]
        );
        match c.pushdown() {
            Some(Predicate::AnyOf(ms)) => {
                let got: Vec<(&str, &str)> = ms
                    .iter()
                    .map(|m| (m.key.as_str(), m.value.as_str()))
                    .collect();
                assert_eq!(
                    got,
                    [
                        ("gen_ai.request.model", "gpt-4o"),
                        ("gen_ai.response.model", "gpt-4o")
                    ]
                );
            }
            other => panic!("expected AnyOf, got {other:?}"),
        }
    }

    #[test]
    fn any_with_a_local_alternative_is_evaluated_here() {
        let batch = spans_to_batch(&[
            span(1, Some("gpt-4o"), None, "free"),
            span(2, Some("claude-3"), None, "pro"),
            span(3, Some("claude-3"), None, "free"),
        ])
        .expect("batch");
        // `span.tier` is read from the span attributes only, which storage cannot do.
        let c = Cond::any(vec![
            eq(Scope::Any, "gen_ai.request.model", "gpt-4o"),
            eq(Scope::Span, "tier", "pro"),
        ])
        .expect("any");
        assert!(c.pushdown().is_none());
        assert_eq!(c.columns(), [col::GEN_AI_REQUEST_MODEL, col::ATTRIBUTES]);
        assert_eq!(mask(&c, &batch), [true, true, false]);
        // Hand-built contents storage cannot take are evaluated here too.
        assert!(Cond::Any(Vec::new()).pushdown().is_none());
        assert_eq!(mask(&Cond::Any(Vec::new()), &batch), [false, false, false]);
        let num = Cond::Any(vec![Cond::number(Scope::Any, "duration", CmpOp::Ge, 1.0)]);
        assert!(num.pushdown().is_none());
        assert_eq!(mask(&num, &batch), [true, true, true]);
    }

    #[test]
    fn any_takes_one_to_max_string_conditions() {
        let many = |n: usize| {
            (0..n)
                .map(|i| eq(Scope::Any, "name", &i.to_string()))
                .collect::<Vec<_>>()
        };
        assert!(Cond::any(many(1)).is_ok());
        assert!(Cond::any(many(MAX_ANY_OF)).is_ok());
        for bad in [
            many(0),
            many(MAX_ANY_OF + 1),
            vec![Cond::number(Scope::Any, "duration", CmpOp::Ge, 1.0)],
            vec![model("gpt-4o")],
        ] {
            assert!(
                matches!(Cond::any(bad), Err(QueryError::BadRequest(_))),
                "refused"
            );
        }
    }
}
