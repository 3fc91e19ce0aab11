//! OTLP `AnyValue` / `KeyValue` to storage [`AttrValue`]s, with the per-item limits (count,
//! value length, nesting depth), and the resource's `service.name`.
//!
//! Duplicate keys (forbidden by OTLP) keep the last value, as a map insert would. An absent
//! `AnyValue` becomes [`AttrValue::Empty`]. An item over a limit is rejected as a whole, with
//! one exception: LLM content (every string and bytes value, at any depth, of the top-level
//! keys [`crate::otlp::genai::content::is_content_key`] names: prompts, answers, documents,
//! logprobs, also as structured messages) of one span and its events, or of one GenAI log
//! record and its body, shares a [`ContentBudget`] of `max_content_bytes_per_span` instead of
//! the per-value limit; past it a value is cut (a string at a character boundary) and its
//! top-level key listed, once, in `sightline.truncated_attributes`. Counts and depth keep their
//! limits.

use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value::Value};
use opentelemetry_proto::tonic::resource::v1::Resource;
use sightline_storage::{AttrValue, Attributes};

use super::{ItemError, RejectReason};
use crate::limits::Limits;
use crate::otlp::genai::content::is_content_key;

/// The attribute listing the content keys of a span or GenAI log record that were truncated
/// (`body` for a log record's body).
pub const TRUNCATED_KEY: &str = "sightline.truncated_attributes";

/// What is left of one span's (or GenAI log record's) content allowance, and the keys cut so
/// far.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContentBudget {
    left: usize,
    /// Keys whose values were cut, in order.
    pub truncated: Vec<String>,
}

impl ContentBudget {
    /// A budget of `bytes`.
    pub fn new(bytes: usize) -> Self {
        Self {
            left: bytes,
            truncated: Vec::new(),
        }
    }

    /// How many of `len` bytes fit, charged to the budget; past it, `key` is listed (once).
    fn charge(&mut self, key: &str, len: usize, fit: impl FnOnce(usize) -> usize) -> usize {
        if len <= self.left {
            self.left -= len;
            return len;
        }
        let cut = fit(self.left);
        self.left = 0;
        if !self.truncated.iter().any(|k| k == key) {
            self.truncated.push(key.to_owned());
        }
        cut
    }

    /// `s` as stored: whole while the budget lasts, else its longest prefix that fits
    /// (at a character boundary).
    fn take(&mut self, key: &str, s: &str) -> String {
        let cut = self.charge(key, s.len(), |left| s.floor_char_boundary(left));
        s[..cut].to_owned()
    }

    /// `b` as stored: whole while the budget lasts, else its prefix that fits.
    fn take_bytes(&mut self, key: &str, b: &[u8]) -> Vec<u8> {
        let cut = self.charge(key, b.len(), |left| left);
        b[..cut].to_vec()
    }
}

/// `service.name` used when a resource has none (as the OpenTelemetry SDKs' fallback).
pub const UNKNOWN_SERVICE: &str = "unknown_service";

/// How the string and bytes leaves of a value are bounded.
enum Leaves<'a> {
    /// Each by `max_attribute_value_bytes`.
    PerValue,
    /// All from one content budget, cuts listed under the top-level key.
    Content(&'a mut ContentBudget, &'a str),
}

fn check_len(len: usize, key: &str, limits: &Limits) -> Result<(), ItemError> {
    if len > limits.max_attribute_value_bytes {
        return Err(ItemError::new(
            RejectReason::ValueTooLong,
            format!(
                "value of {key:?} is {len} bytes, over the limit of {}",
                limits.max_attribute_value_bytes
            ),
        ));
    }
    Ok(())
}

/// Converts one value; `key` names it in error messages.
pub fn convert_value(
    v: Option<&AnyValue>,
    key: &str,
    limits: &Limits,
    depth: usize,
) -> Result<AttrValue, ItemError> {
    convert_any(v, key, limits, depth, &mut Leaves::PerValue)
}

/// Converts one top-level value whose strings and bytes, at any depth, are LLM content drawn
/// from `content` (cuts listed under `key`); counts and depth keep their limits.
pub fn convert_content_value(
    v: Option<&AnyValue>,
    key: &str,
    limits: &Limits,
    content: &mut ContentBudget,
) -> Result<AttrValue, ItemError> {
    convert_any(v, key, limits, 0, &mut Leaves::Content(content, key))
}

fn convert_any(
    v: Option<&AnyValue>,
    key: &str,
    limits: &Limits,
    depth: usize,
    leaves: &mut Leaves<'_>,
) -> Result<AttrValue, ItemError> {
    if depth > limits.max_attribute_depth {
        return Err(ItemError::new(
            RejectReason::TooDeep,
            format!(
                "value of {key:?} nests deeper than {}",
                limits.max_attribute_depth
            ),
        ));
    }
    let Some(value) = v.and_then(|v| v.value.as_ref()) else {
        return Ok(AttrValue::Empty);
    };
    Ok(match value {
        Value::StringValue(s) => match leaves {
            Leaves::PerValue => {
                check_len(s.len(), key, limits)?;
                AttrValue::Str(s.clone())
            }
            Leaves::Content(budget, top) => AttrValue::Str(budget.take(top, s)),
        },
        Value::BoolValue(b) => AttrValue::Bool(*b),
        Value::IntValue(i) => AttrValue::Int(*i),
        Value::DoubleValue(d) => AttrValue::Double(*d),
        Value::BytesValue(b) => match leaves {
            Leaves::PerValue => {
                check_len(b.len(), key, limits)?;
                AttrValue::Bytes(b.clone())
            }
            Leaves::Content(budget, top) => AttrValue::Bytes(budget.take_bytes(top, b)),
        },
        Value::ArrayValue(a) => {
            if a.values.len() > limits.max_attributes_per_item {
                return Err(ItemError::new(
                    RejectReason::TooManyAttributes,
                    format!(
                        "array {key:?} has {} elements, over the limit of {}",
                        a.values.len(),
                        limits.max_attributes_per_item
                    ),
                ));
            }
            let mut out = Vec::with_capacity(a.values.len());
            for item in &a.values {
                out.push(convert_any(Some(item), key, limits, depth + 1, leaves)?);
            }
            AttrValue::Array(out)
        }
        Value::KvlistValue(kv) => AttrValue::KvList(convert_list(&kv.values, limits, |kv| {
            convert_any(kv.value.as_ref(), &kv.key, limits, depth + 1, leaves)
        })?),
        Value::StringValueStrindex(_) => {
            return Err(ItemError::new(
                RejectReason::InvalidValue,
                format!("value of {key:?} is a string table index, which only profiles may use"),
            ));
        }
    })
}

/// A key-value list, each value through `value`; duplicate keys keep the first position and
/// the last value.
fn convert_list(
    kvs: &[KeyValue],
    limits: &Limits,
    mut value: impl FnMut(&KeyValue) -> Result<AttrValue, ItemError>,
) -> Result<Attributes, ItemError> {
    if kvs.len() > limits.max_attributes_per_item {
        return Err(ItemError::new(
            RejectReason::TooManyAttributes,
            format!(
                "{} attributes, over the limit of {}",
                kvs.len(),
                limits.max_attributes_per_item
            ),
        ));
    }
    let mut out: Attributes = Vec::with_capacity(kvs.len());
    // Comparing keys pairwise (lengths first) costs less than hashing them below a few dozen.
    if kvs.len() <= 24 {
        for kv in kvs {
            check_len(kv.key.len(), "attribute key", limits)?;
            let v = value(kv)?;
            // Keys are unique by the OTLP rules; when a client breaks them, the last value wins.
            if let Some(slot) = out.iter_mut().find(|(k, _)| *k == kv.key) {
                slot.1 = v;
            } else {
                out.push((kv.key.clone(), v));
            }
        }
        return Ok(out);
    }
    // Many keys: dedupe with a hash set instead of the quadratic scan.
    let mut index: std::collections::HashMap<&str, usize> =
        std::collections::HashMap::with_capacity(kvs.len());
    for kv in kvs {
        check_len(kv.key.len(), "attribute key", limits)?;
        let v = value(kv)?;
        match index.get(kv.key.as_str()) {
            Some(&i) => out[i].1 = v,
            None => {
                index.insert(kv.key.as_str(), out.len());
                out.push((kv.key.clone(), v));
            }
        }
    }
    Ok(out)
}

/// Converts an attribute list.
pub fn convert_attributes(kvs: &[KeyValue], limits: &Limits) -> Result<Attributes, ItemError> {
    convert_list(kvs, limits, |kv| {
        convert_value(kv.value.as_ref(), &kv.key, limits, 0)
    })
}

/// Converts a span's (or its events', or a GenAI log record's) attribute list, LLM content
/// from `content`.
pub fn convert_span_attributes(
    kvs: &[KeyValue],
    limits: &Limits,
    content: &mut ContentBudget,
) -> Result<Attributes, ItemError> {
    // Every string and bytes leaf of a content key's value is content; other keys keep the
    // per-value limit.
    convert_list(kvs, limits, |kv| {
        if is_content_key(&kv.key) {
            convert_content_value(kv.value.as_ref(), &kv.key, limits, content)
        } else {
            convert_value(kv.value.as_ref(), &kv.key, limits, 0)
        }
    })
}

/// A resource: its `service.name` and its other attributes.
#[derive(Clone, Debug, PartialEq)]
pub struct ResourceInfo {
    /// `service.name` (string values only; [`UNKNOWN_SERVICE`] when absent).
    pub service_name: String,
    /// Attributes other than a string `service.name` (a non-string one is kept here).
    pub attributes: Attributes,
}

/// Converts a resource.
pub fn convert_resource(r: Option<&Resource>, limits: &Limits) -> Result<ResourceInfo, ItemError> {
    let mut attributes = match r {
        Some(r) => convert_attributes(&r.attributes, limits)?,
        None => Vec::new(),
    };
    let mut service_name = UNKNOWN_SERVICE.to_owned();
    if let Some(i) = attributes
        .iter()
        .position(|(k, v)| k == "service.name" && matches!(v, AttrValue::Str(_)))
        && let (_, AttrValue::Str(s)) = attributes.remove(i)
    {
        service_name = s;
    }
    Ok(ResourceInfo {
        service_name,
        attributes,
    })
}

/// Validates the attribute list of a scope (kept only as name/version).
pub fn check_scope_attributes(kvs: &[KeyValue], limits: &Limits) -> Result<(), ItemError> {
    convert_attributes(kvs, limits).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::common::v1::{ArrayValue, KeyValueList};

    fn kv(k: &str, v: Value) -> KeyValue {
        KeyValue {
            key: k.into(),
            value: Some(AnyValue { value: Some(v) }),
            ..Default::default()
        }
    }

    #[test]
    fn converts_every_kind() {
        let limits = Limits::default();
        let attrs = vec![
            kv("s", Value::StringValue("x".into())),
            kv("i", Value::IntValue(-1)),
            kv("d", Value::DoubleValue(0.5)),
            kv("b", Value::BoolValue(true)),
            kv("y", Value::BytesValue(vec![1, 2])),
            kv(
                "a",
                Value::ArrayValue(ArrayValue {
                    values: vec![AnyValue {
                        value: Some(Value::IntValue(1)),
                    }],
                }),
            ),
            kv(
                "m",
                Value::KvlistValue(KeyValueList {
                    values: vec![kv("k", Value::StringValue("v".into()))],
                }),
            ),
            KeyValue {
                key: "e".into(),
                value: None,
                ..Default::default()
            },
            kv("s", Value::StringValue("last".into())),
        ];
        let out = convert_attributes(&attrs, &limits).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(out.len(), 8);
        assert_eq!(out[0], ("s".into(), AttrValue::Str("last".into())));
        assert_eq!(
            out[6].1,
            AttrValue::KvList(vec![("k".into(), AttrValue::Str("v".into()))])
        );
        assert_eq!(out[7].1, AttrValue::Empty);
    }

    #[test]
    fn many_keys_with_duplicates_keep_first_position_and_last_value() {
        let limits = Limits::default();
        let mut attrs: Vec<KeyValue> = (0..40)
            .map(|i| kv(&format!("k{i}"), Value::IntValue(i)))
            .collect();
        attrs.push(kv("k3", Value::StringValue("late".into())));
        attrs.push(kv("k39", Value::IntValue(-1)));
        let out = convert_attributes(&attrs, &limits).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(out.len(), 40);
        assert_eq!(out[3], ("k3".into(), AttrValue::Str("late".into())));
        assert_eq!(out[39], ("k39".into(), AttrValue::Int(-1)));
        assert_eq!(out[4], ("k4".into(), AttrValue::Int(4)));
    }

    #[test]
    fn llm_content_shares_a_budget_and_is_cut_at_a_character_boundary() {
        // Keys are checked against the same limit: 24 bytes fits them.
        let limits = Limits {
            max_attribute_value_bytes: 24,
            ..Limits::default()
        };
        let accents = "é".repeat(15);
        let letters = "a".repeat(40);
        let attrs = vec![
            kv(
                "gen_ai.output.messages",
                Value::StringValue(accents.clone()),
            ),
            kv("input.value", Value::StringValue(letters.clone())),
            kv("other", Value::StringValue("ab".into())),
        ];
        // 30 bytes of é (over the per-value limit: content is not held to it), then 40: a
        // budget of 33 keeps the first whole and 3 bytes of the second.
        let mut budget = ContentBudget::new(33);
        let out = convert_span_attributes(&attrs, &limits, &mut budget)
            .unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(out[0].1, AttrValue::Str(accents.clone()));
        assert_eq!(out[1].1, AttrValue::Str("aaa".into()));
        assert_eq!(out[2].1, AttrValue::Str("ab".into()));
        assert_eq!(budget.truncated, vec!["input.value".to_owned()]);
        // A cut inside a character backs off to its start.
        let mut small = ContentBudget::new(3);
        let out = convert_span_attributes(&attrs[..1], &limits, &mut small)
            .unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(out[0].1, AttrValue::Str("é".into()));
        // Other keys keep the per-value limit, and items without a budget too.
        let long = vec![kv("other", Value::StringValue(letters))];
        assert!(convert_span_attributes(&long, &limits, &mut ContentBudget::new(100)).is_err());
        assert!(convert_attributes(&attrs[..1], &limits).is_err());
    }

    fn any(v: Value) -> AnyValue {
        AnyValue { value: Some(v) }
    }

    fn kvlist(kvs: Vec<KeyValue>) -> Value {
        Value::KvlistValue(KeyValueList { values: kvs })
    }

    /// `[{role: assistant, parts: [{type: text, content}, ...]}]` as openai-v2 sends
    /// `gen_ai.output.messages` with the latest conventions.
    fn messages(parts: Vec<Value>) -> Value {
        let parts = parts
            .into_iter()
            .map(|p| {
                any(kvlist(vec![
                    kv("type", Value::StringValue("text".into())),
                    kv("content", p),
                ]))
            })
            .collect();
        Value::ArrayValue(ArrayValue {
            values: vec![any(kvlist(vec![
                kv("role", Value::StringValue("assistant".into())),
                kv("parts", Value::ArrayValue(ArrayValue { values: parts })),
            ]))],
        })
    }

    /// The `content` of part `i` of the first message.
    fn part(v: &AttrValue, i: usize) -> &AttrValue {
        let AttrValue::Array(msgs) = v else {
            panic!("not an array: {v:?}")
        };
        let AttrValue::KvList(m) = &msgs[0] else {
            panic!("not a kvlist")
        };
        let Some((_, AttrValue::Array(parts))) = m.iter().find(|(k, _)| k == "parts") else {
            panic!("no parts")
        };
        let AttrValue::KvList(p) = &parts[i] else {
            panic!("not a kvlist")
        };
        &p[1].1
    }

    #[test]
    fn structured_llm_content_draws_every_leaf_from_the_budget() {
        let limits = Limits::default();
        let mib = 1 << 20;
        // 3 MiB nested in the messages: over the per-value limit, under the 4 MiB budget.
        let three = "a".repeat(3 * mib);
        let attrs = vec![kv(
            "gen_ai.output.messages",
            messages(vec![Value::StringValue(three.clone())]),
        )];
        let mut budget = ContentBudget::new(limits.max_content_bytes_per_span);
        let out = convert_span_attributes(&attrs, &limits, &mut budget)
            .unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(part(&out[0].1, 0), &AttrValue::Str(three));
        assert!(budget.truncated.is_empty());
        // 5 MiB: "assistant" and "text" (13 bytes) come first, the answer is cut to what is
        // left; a second part (string, then bytes) gets nothing; the key is listed once.
        let five = "b".repeat(5 * mib);
        let attrs = vec![
            kv("gen_ai.input.messages", Value::StringValue("hi".into())),
            kv(
                "gen_ai.output.messages",
                messages(vec![
                    Value::StringValue(five.clone()),
                    Value::StringValue("more".into()),
                    Value::BytesValue(vec![1, 2, 3]),
                ]),
            ),
        ];
        let mut budget = ContentBudget::new(limits.max_content_bytes_per_span);
        let out = convert_span_attributes(&attrs, &limits, &mut budget)
            .unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(out[0].1, AttrValue::Str("hi".into()));
        let left = limits.max_content_bytes_per_span - 2 - "assistant".len() - "text".len();
        assert_eq!(part(&out[1].1, 0), &AttrValue::Str(five[..left].to_owned()));
        assert_eq!(part(&out[1].1, 1), &AttrValue::Str(String::new()));
        assert_eq!(part(&out[1].1, 2), &AttrValue::Bytes(Vec::new()));
        assert_eq!(budget.truncated, vec!["gen_ai.output.messages".to_owned()]);
        // Bytes are cut at any byte.
        let mut small = ContentBudget::new(2);
        let bytes = vec![kv("gen_ai.prompt", Value::BytesValue(vec![1, 2, 3]))];
        let out = convert_span_attributes(&bytes, &limits, &mut small)
            .unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(out[0].1, AttrValue::Bytes(vec![1, 2]));
        assert_eq!(small.truncated, vec!["gen_ai.prompt".to_owned()]);
    }

    #[test]
    fn structured_values_of_other_keys_and_content_counts_keep_their_limits() {
        let limits = Limits::default();
        // A 300 KiB string nested under a key that is not content: rejected, budget or not.
        let nested = vec![kv(
            "app.payload",
            messages(vec![Value::StringValue("c".repeat(300 << 10))]),
        )];
        let mut budget = ContentBudget::new(limits.max_content_bytes_per_span);
        assert_eq!(
            convert_span_attributes(&nested, &limits, &mut budget).map_err(|e| e.reason),
            Err(RejectReason::ValueTooLong)
        );
        // The same under a content key without a budget (resources, links): rejected.
        let content = vec![kv(
            "gen_ai.output.messages",
            messages(vec![Value::StringValue("c".repeat(300 << 10))]),
        )];
        assert_eq!(
            convert_attributes(&content, &limits).map_err(|e| e.reason),
            Err(RejectReason::ValueTooLong)
        );
        // Content keys keep the element count and depth limits.
        let tight = Limits {
            max_attributes_per_item: 2,
            max_attribute_depth: 2,
            ..Limits::default()
        };
        let many = vec![kv(
            "gen_ai.output.messages",
            messages(vec![
                Value::StringValue("x".into()),
                Value::StringValue("y".into()),
                Value::StringValue("z".into()),
            ]),
        )];
        assert_eq!(
            convert_span_attributes(&many, &tight, &mut ContentBudget::new(100))
                .map_err(|e| e.reason),
            Err(RejectReason::TooManyAttributes)
        );
        // messages -> message -> parts -> part -> content: depth 4.
        let deep = vec![kv(
            "gen_ai.output.messages",
            messages(vec![Value::StringValue("x".into())]),
        )];
        assert_eq!(
            convert_span_attributes(&deep, &tight, &mut ContentBudget::new(100))
                .map_err(|e| e.reason),
            Err(RejectReason::TooDeep)
        );
    }

    #[test]
    fn limits_reject() {
        let limits = Limits {
            max_attributes_per_item: 2,
            max_attribute_value_bytes: 3,
            max_attribute_depth: 1,
            ..Limits::default()
        };
        let too_many: Vec<KeyValue> = (0..3)
            .map(|i| kv(&format!("k{i}"), Value::IntValue(i)))
            .collect();
        assert_eq!(
            convert_attributes(&too_many, &limits).map_err(|e| e.reason),
            Err(RejectReason::TooManyAttributes)
        );
        let long = vec![kv("k", Value::StringValue("abcd".into()))];
        assert_eq!(
            convert_attributes(&long, &limits).map_err(|e| e.reason),
            Err(RejectReason::ValueTooLong)
        );
        let mut v = AnyValue {
            value: Some(Value::IntValue(1)),
        };
        for _ in 0..3 {
            v = AnyValue {
                value: Some(Value::ArrayValue(ArrayValue { values: vec![v] })),
            };
        }
        let deep = vec![KeyValue {
            key: "k".into(),
            value: Some(v),
            ..Default::default()
        }];
        assert_eq!(
            convert_attributes(&deep, &limits).map_err(|e| e.reason),
            Err(RejectReason::TooDeep)
        );
    }
}
