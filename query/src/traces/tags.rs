//! Tag (attribute key) and tag value listing over the spans of a time range, for search UIs.

use std::collections::BTreeSet;

use arrow_array::{Array, Float64Array, Int64Array, StringArray, UInt8Array};
use serde::Serialize;
use sightline_storage::columnar::AttrReader;
use sightline_storage::predicate::span_kind_name;
use sightline_storage::schema::{self, col};
use sightline_storage::{
    AttrValue, Deadline, ScanStats, Signal, StatusCode, Store, TenantId, TimeRange,
};

use super::filter::{Cond, NUMERIC_COLUMNS, Scope, attr_reader};
use super::search::scan_matching;
use crate::error::Result;

/// Most distinct names or values listed; the listing says when it stopped there.
pub const MAX_TAGS: usize = 5_000;

/// Intrinsic fields every span has.
pub const INTRINSICS: &[&str] = &["duration", "kind", "name", "status", "statusMessage"];

/// Attribute keys seen, per scope.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TagNames {
    /// Span attribute keys (including promoted GenAI keys present on some span).
    pub span: Vec<String>,
    /// Resource attribute keys (including `service.name`).
    pub resource: Vec<String>,
    /// Intrinsics.
    pub intrinsic: Vec<String>,
    /// Whether [`MAX_TAGS`] cut the listing.
    pub truncated: bool,
    /// Scan statistics.
    pub stats: ScanStats,
}

/// A value with its type (`string`, `int`, `float`, `bool`, `keyword` for status and kind).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct TypedValue {
    /// Type name, as Tempo's v2 tag values API spells it.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Rendered value.
    pub value: String,
}

fn string_columns() -> Vec<(&'static str, &'static str)> {
    schema::SPAN_PROMOTED_KEYS
        .iter()
        .filter(|(k, _)| !matches!(*k, "name" | "status" | "kind" | "service.name"))
        .copied()
        .collect()
}

/// Attribute keys of the spans of `tenant` starting in `time`; [`crate::QueryError::Timeout`]
/// once `deadline` passes.
pub fn tag_names(
    store: &Store,
    tenant: &TenantId,
    time: TimeRange,
    deadline: &Deadline,
) -> Result<TagNames> {
    let mut span: BTreeSet<String> = BTreeSet::new();
    let mut resource: BTreeSet<String> = BTreeSet::new();
    resource.insert("service.name".to_owned());
    let promoted: Vec<(&str, &str)> = string_columns()
        .into_iter()
        .chain(
            NUMERIC_COLUMNS
                .iter()
                .copied()
                .filter(|(k, _)| *k != "duration"),
        )
        .collect();
    let mut cols: Vec<&str> = vec![col::ATTRIBUTES, col::RESOURCE_ATTRIBUTES];
    cols.extend(promoted.iter().map(|(_, c)| *c));
    let mut truncated = false;
    let stats = scan_matching(store, tenant, (time, deadline), &[], &cols, |b, _| {
        for (key, c) in &promoted {
            if b.column_by_name(c)
                .is_some_and(|a| a.null_count() < a.len())
            {
                span.insert((*key).to_owned());
            }
        }
        for (name, set) in [
            (col::ATTRIBUTES, &mut span),
            (col::RESOURCE_ATTRIBUTES, &mut resource),
        ] {
            let list = attr_reader(b, name)?;
            for row in 0..b.num_rows() {
                for (k, _) in list.row(row)? {
                    if set.len() >= MAX_TAGS {
                        truncated = true;
                        break;
                    }
                    set.insert(k);
                }
            }
        }
        Ok(())
    })?;
    Ok(TagNames {
        span: span.into_iter().collect(),
        resource: resource.into_iter().collect(),
        intrinsic: INTRINSICS.iter().map(|s| (*s).to_owned()).collect(),
        truncated,
        stats,
    })
}

fn typed(v: &AttrValue) -> Option<TypedValue> {
    let kind = match v {
        AttrValue::Str(_) => "string",
        AttrValue::Int(_) => "int",
        AttrValue::Double(_) => "float",
        AttrValue::Bool(_) => "bool",
        _ => return None,
    };
    Some(TypedValue {
        kind,
        value: v.render(),
    })
}

/// Distinct values of `key` (looked up in `scope`; `scope = Any` with an intrinsic name lists
/// the intrinsic) over the spans in `time` that satisfy `conds`. Sorted, at most [`MAX_TAGS`];
/// the flag says whether the listing was cut. [`crate::QueryError::Timeout`] once `deadline`
/// passes.
pub fn tag_values(
    store: &Store,
    tenant: &TenantId,
    time: TimeRange,
    scope: Scope,
    key: &str,
    conds: &[Cond],
    deadline: &Deadline,
) -> Result<(Vec<TypedValue>, bool)> {
    let mut out: BTreeSet<TypedValue> = BTreeSet::new();
    let mut truncated = false;
    let mut push = |v: TypedValue, out: &mut BTreeSet<TypedValue>| {
        if out.len() >= MAX_TAGS {
            truncated = true;
        } else {
            out.insert(v);
        }
    };
    let intrinsic =
        scope == Scope::Any && matches!(key, "name" | "status" | "kind" | "statusMessage");
    let promoted_str = match scope {
        Scope::Resource if key == "service.name" => Some(col::SERVICE_NAME),
        Scope::Resource => None,
        _ => schema::promoted_column(Signal::Spans, key),
    };
    let promoted_num = match scope {
        Scope::Resource => None,
        _ => NUMERIC_COLUMNS
            .iter()
            .find(|(k, _)| *k == key && *k != "duration")
            .map(|(_, c)| *c),
    };
    let column = if intrinsic {
        Some(match key {
            "name" => col::SPAN_NAME,
            "status" => col::STATUS_CODE,
            "kind" => col::SPAN_KIND,
            _ => col::STATUS_MESSAGE,
        })
    } else {
        promoted_str.or(promoted_num)
    };
    let cols: Vec<&str> = match column {
        Some(c) => vec![c],
        None => vec![col::ATTRIBUTES, col::RESOURCE_ATTRIBUTES],
    };
    scan_matching(store, tenant, (time, deadline), conds, &cols, |b, mask| {
        if let Some(c) = column {
            let a = b
                .column_by_name(c)
                .ok_or_else(|| crate::QueryError::Execution(format!("column {c} missing")))?;
            let any = a.as_any();
            for (i, keep) in mask.iter().enumerate() {
                if !keep || a.is_null(i) {
                    continue;
                }
                let v = if c == col::STATUS_CODE {
                    any.downcast_ref::<UInt8Array>().map(|x| TypedValue {
                        kind: "keyword",
                        value: StatusCode::from_code(i32::from(x.value(i)))
                            .as_str()
                            .to_owned(),
                    })
                } else if c == col::SPAN_KIND {
                    any.downcast_ref::<UInt8Array>().map(|x| TypedValue {
                        kind: "keyword",
                        value: span_kind_name(x.value(i)).to_owned(),
                    })
                } else if let Some(x) = any.downcast_ref::<StringArray>() {
                    Some(TypedValue {
                        kind: "string",
                        value: x.value(i).to_owned(),
                    })
                } else if let Some(x) = any.downcast_ref::<Int64Array>() {
                    Some(TypedValue {
                        kind: "int",
                        value: x.value(i).to_string(),
                    })
                } else {
                    any.downcast_ref::<Float64Array>().map(|x| TypedValue {
                        kind: "float",
                        value: x.value(i).to_string(),
                    })
                };
                if let Some(v) = v {
                    push(v, &mut out);
                }
            }
            return Ok(());
        }
        let lists: Vec<AttrReader<'_>> = match scope {
            Scope::Span => vec![attr_reader(b, col::ATTRIBUTES)?],
            Scope::Resource => vec![attr_reader(b, col::RESOURCE_ATTRIBUTES)?],
            Scope::Any => vec![
                attr_reader(b, col::ATTRIBUTES)?,
                attr_reader(b, col::RESOURCE_ATTRIBUTES)?,
            ],
        };
        for (i, keep) in mask.iter().enumerate() {
            if !keep {
                continue;
            }
            for l in &lists {
                if let Some(v) = l.get(i, key)? {
                    if let Some(t) = typed(&v) {
                        push(t, &mut out);
                    }
                    break;
                }
            }
        }
        Ok(())
    })?;
    Ok((out.into_iter().collect(), truncated))
}
