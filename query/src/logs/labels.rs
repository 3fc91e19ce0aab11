//! The stream-label model shared by LogQL and the Loki API.
//!
//! Like Loki's own OTLP ingestion, a log line's **stream labels** are its resource: `service_name`
//! (from `service.name`), every other resource attribute with its name sanitized to a Prometheus
//! label name (`k8s.pod.name` -> `k8s_pod_name`), plus `level`, the lowercased severity text (or,
//! when the text is empty, the name of the severity number's range: `trace`, `debug`, `info`,
//! `warn`, `error`, `fatal`). These are what `/loki/api/v1/labels`, `/series` and stream
//! selectors see.
//!
//! Everything else about a line is **structured metadata**: every log attribute (sanitized the
//! same way), `trace_id` and `span_id` (lowercase hex) when set. Structured metadata does not
//! select streams but can be filtered with `| key="v"` after the selector, and (as Loki does
//! when the client does not ask for categorized labels) is returned merged into the labels of
//! each result stream. A metadata key that collides with a stream label is dropped.

use std::collections::BTreeMap;

use sightline_storage::LogRecord;

/// A sorted label set.
pub type Labels = BTreeMap<String, String>;

/// The labels of one line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LineLabels {
    /// Stream labels (resource + `level`).
    pub stream: Labels,
    /// Structured metadata (log attributes, `trace_id`, `span_id`).
    pub metadata: Labels,
}

impl LineLabels {
    /// Stream labels and metadata in one set (stream labels win collisions).
    pub fn merged(&self) -> Labels {
        let mut out = self.stream.clone();
        for (k, v) in &self.metadata {
            out.entry(k.clone()).or_insert_with(|| v.clone());
        }
        out
    }
}

/// A Prometheus-style label name: characters other than `[A-Za-z0-9_]` become `_`, and a leading
/// digit gets a `_` prefix.
pub fn sanitize_label_name(key: &str) -> String {
    let mut out: String = key
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out
}

/// The `level` of a line: lowercased severity text, else the severity number's range name,
/// else `None` (unspecified).
pub fn level_of(severity_number: i32, severity_text: &str) -> Option<String> {
    if !severity_text.is_empty() {
        return Some(severity_text.to_ascii_lowercase());
    }
    let name = match severity_number {
        1..=4 => "trace",
        5..=8 => "debug",
        9..=12 => "info",
        13..=16 => "warn",
        17..=20 => "error",
        21..=24 => "fatal",
        _ => return None,
    };
    Some(name.to_owned())
}

/// The stream labels and structured metadata of a log record.
pub fn line_labels(rec: &LogRecord) -> LineLabels {
    let mut stream = Labels::new();
    for (k, v) in &rec.resource_attributes {
        stream.insert(sanitize_label_name(k), v.render());
    }
    if !rec.service_name.is_empty() {
        stream.insert("service_name".into(), rec.service_name.clone());
    }
    if let Some(l) = level_of(rec.severity_number, &rec.severity_text) {
        stream.insert("level".into(), l);
    }
    let mut metadata = Labels::new();
    for (k, v) in &rec.attributes {
        let name = sanitize_label_name(k);
        if !stream.contains_key(&name) {
            metadata.insert(name, v.render());
        }
    }
    for (name, id) in [
        ("trace_id", rec.trace_id.map(|t| t.to_hex())),
        ("span_id", rec.span_id.map(|s| s.to_hex())),
    ] {
        if let Some(id) = id
            && !stream.contains_key(name)
        {
            metadata.insert(name.into(), id);
        }
    }
    LineLabels { stream, metadata }
}

/// The value of label `name` of a record, as [`line_labels`] would give it: a stream label
/// (level, `service_name`, the last resource attribute of that sanitized name, in that order of
/// precedence), else, unless `stream_only`, structured metadata (`span_id`, `trace_id`, the last
/// log attribute of that sanitized name). Costs a scan of the attributes instead of building
/// every label of the line.
pub fn label_value(rec: &LogRecord, name: &str, stream_only: bool) -> Option<String> {
    if name == "level"
        && let Some(l) = level_of(rec.severity_number, &rec.severity_text)
    {
        return Some(l);
    }
    if name == "service_name" && !rec.service_name.is_empty() {
        return Some(rec.service_name.clone());
    }
    let last_named = |attrs: &[(String, sightline_storage::AttrValue)]| {
        attrs
            .iter()
            .rev()
            .find(|(k, _)| sanitized_equals(k, name))
            .map(|(_, v)| v.render())
    };
    if let Some(v) = last_named(&rec.resource_attributes) {
        return Some(v);
    }
    if stream_only {
        return None;
    }
    match name {
        "span_id" if rec.span_id.is_some() => rec.span_id.map(|s| s.to_hex()),
        "trace_id" if rec.trace_id.is_some() => rec.trace_id.map(|t| t.to_hex()),
        _ => last_named(&rec.attributes),
    }
}

/// Whether [`sanitize_label_name`] of `key` is `name`, without allocating.
fn sanitized_equals(key: &str, name: &str) -> bool {
    let digit_first = key.starts_with(|c: char| c.is_ascii_digit());
    let name = match (digit_first, name.strip_prefix('_')) {
        (true, Some(rest)) => rest,
        (true, None) => return false,
        (false, _) => name,
    };
    let mut n = name.chars();
    for c in key.chars() {
        let want = if c.is_ascii_alphanumeric() || c == '_' {
            c
        } else {
            '_'
        };
        if n.next() != Some(want) {
            return false;
        }
    }
    n.next().is_none()
}

/// The value of attribute `key` (OpenTelemetry naming) of a record, with the precedence storage
/// predicates use: promoted column, then log attribute, then resource attribute.
pub fn attribute_value(rec: &LogRecord, key: &str) -> Option<String> {
    match key {
        "service.name" => return Some(rec.service_name.clone()),
        "severity_text" => return Some(rec.severity_text.clone()),
        "severity_number" => return Some(rec.severity_number.to_string()),
        "event_name" => return Some(rec.event_name.clone()),
        "scope.name" => return Some(rec.scope_name.clone()),
        _ => {}
    }
    rec.attributes
        .iter()
        .chain(rec.resource_attributes.iter())
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.render())
}

#[cfg(test)]
mod tests {
    use super::*;

    use proptest::prelude::*;
    use sightline_storage::{AttrValue, SpanId, TraceId, UnixNanos};

    const KEYS: &[&str] = &[
        "level",
        "service.name",
        "service_name",
        "trace_id",
        "span_id",
        "k8s.pod",
        "k8s_pod",
        "1x",
        "_1x",
        "user.id",
    ];

    fn attrs() -> impl Strategy<Value = Vec<(String, AttrValue)>> {
        prop::collection::vec(
            (prop::sample::select(KEYS), "[a-c]{0,2}")
                .prop_map(|(k, v)| (k.to_owned(), AttrValue::Str(v))),
            0..4,
        )
    }

    proptest! {
        /// Every label's value, taken alone, is the one the whole label set gives it.
        #[test]
        fn label_value_agrees_with_line_labels(
            res in attrs(),
            attributes in attrs(),
            (sev, text) in (0i32..25, prop::sample::select(&["", "INFO", "Error"][..])),
            service in prop::sample::select(&["", "api"][..]),
            ids in any::<Option<(u8, u8)>>(),
        ) {
            let rec = LogRecord {
                time: UnixNanos(1),
                observed_time: UnixNanos(1),
                severity_number: sev,
                severity_text: text.into(),
                body: AttrValue::Str("x".into()),
                trace_id: ids.map(|(t, _)| TraceId([t; 16])),
                span_id: ids.map(|(_, s)| SpanId([s; 8])),
                flags: 0,
                service_name: service.into(),
                scope_name: String::new(),
                event_name: String::new(),
                resource_attributes: res,
                attributes,
            };
            let ll = line_labels(&rec);
            let merged = ll.merged();
            for name in ["level", "service_name", "trace_id", "span_id", "k8s_pod", "_1x", "user_id", "nope"] {
                prop_assert_eq!(label_value(&rec, name, false), merged.get(name).cloned(), "{}", name);
                prop_assert_eq!(label_value(&rec, name, true), ll.stream.get(name).cloned(), "{} (stream)", name);
            }
        }
    }

    #[test]
    fn names_and_levels() {
        assert_eq!(sanitize_label_name("k8s.pod.name"), "k8s_pod_name");
        assert_eq!(sanitize_label_name("1a-b"), "_1a_b");
        assert_eq!(level_of(0, "ERROR").as_deref(), Some("error"));
        assert_eq!(level_of(14, "").as_deref(), Some("warn"));
        assert_eq!(level_of(0, ""), None);
    }
}
