//! Binary operators: arithmetic, comparison (with `bool`) and set operators, between scalars
//! and vectors, with `on`/`ignoring` and `group_left`/`group_right` vector matching.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::Arc;

use promql_parser::parser::ast::{BinaryExpr, LabelModifier, VectorMatchCardinality};

use super::eval::{Evaluator, op_name};
use super::value::{Labels, METRIC_NAME, Series, Value, drop_name};
use crate::error::{QueryError, Result};

fn arith(op: &str, a: f64, b: f64) -> Option<f64> {
    Some(match op {
        "+" => a + b,
        "-" => a - b,
        "*" => a * b,
        "/" => a / b,
        "%" => a % b,
        "^" => a.powf(b),
        "atan2" => a.atan2(b),
        _ => return None,
    })
}

fn compare(op: &str, a: f64, b: f64) -> Option<bool> {
    Some(match op {
        "==" => a == b,
        "!=" => a != b,
        ">" => a > b,
        "<" => a < b,
        ">=" => a >= b,
        "<=" => a <= b,
        _ => return None,
    })
}

fn is_comparison(op: &str) -> bool {
    matches!(op, "==" | "!=" | ">" | "<" | ">=" | "<=")
}

/// Whether the result keeps `__name__`: Prometheus 2.x drops it for `+ - * / % ^` and for
/// `bool` comparisons, and keeps it for filtering comparisons and `atan2`
/// (`shouldDropMetricName`).
fn keeps_name(op: &str, return_bool: bool) -> bool {
    !return_bool && (is_comparison(op) || op == "atan2")
}

/// Applies `op` to one pair of values. Returns the value to emit (`None`: filtered out) and
/// whether the result is a comparison result (0/1) rather than the left value.
fn apply(op: &str, return_bool: bool, a: f64, b: f64) -> Result<Option<f64>> {
    if let Some(v) = arith(op, a, b) {
        return Ok(Some(v));
    }
    match compare(op, a, b) {
        Some(c) if return_bool => Ok(Some(if c { 1.0 } else { 0.0 })),
        Some(true) => Ok(Some(a)),
        Some(false) => Ok(None),
        None => Err(QueryError::Unsupported(format!("operator {op}"))),
    }
}

/// Evaluates both sides, then combines them. A chain `a + b + c + ...` recurses through here
/// once per operator, so this frame stays small: the combining is a separate function.
pub(crate) fn eval(ev: &Evaluator<'_>, b: &BinaryExpr) -> Result<Value> {
    let lhs = ev.eval(&b.lhs)?;
    let rhs = ev.eval(&b.rhs)?;
    combine(ev, b, lhs, rhs)
}

#[inline(never)]
fn combine(ev: &Evaluator<'_>, b: &BinaryExpr, lhs: Value, rhs: Value) -> Result<Value> {
    let op_text = op_name(&b.op);
    let op = op_text.as_str();
    let return_bool = b.modifier.as_ref().is_some_and(|m| m.return_bool);
    match (lhs, rhs) {
        (Value::Scalar(l), Value::Scalar(r)) => {
            if is_comparison(op) && !return_bool {
                return Err(QueryError::Execution(
                    "comparisons between scalars must use the bool modifier".into(),
                ));
            }
            let mut out = Vec::with_capacity(l.len());
            for (a, b) in l.into_iter().zip(r) {
                out.push(apply(op, true, a, b)?.unwrap_or(f64::NAN));
            }
            Ok(Value::Scalar(out))
        }
        (Value::Vector(v), Value::Scalar(s)) => vector_scalar(op, return_bool, v, &s, false),
        (Value::Scalar(s), Value::Vector(v)) => vector_scalar(op, return_bool, v, &s, true),
        (Value::Vector(l), Value::Vector(r)) => vector_vector(ev, b, op, return_bool, l, r),
        _ => Err(QueryError::Execution(format!(
            "operator {op} needs numbers or instant vectors on both sides"
        ))),
    }
}

fn vector_scalar(
    op: &str,
    return_bool: bool,
    v: Vec<Series>,
    s: &[f64],
    scalar_left: bool,
) -> Result<Value> {
    if matches!(op, "and" | "or" | "unless") {
        return Err(QueryError::Execution(format!(
            "set operator {op} needs instant vectors on both sides"
        )));
    }
    let filter = is_comparison(op) && !return_bool;
    let keep_name = keeps_name(op, return_bool);
    let mut out = Vec::with_capacity(v.len());
    for series in v {
        let mut values = Vec::with_capacity(series.values.len());
        for (i, x) in series.values.iter().enumerate() {
            values.push(match x {
                Some(x) => {
                    let (a, b) = if scalar_left { (s[i], *x) } else { (*x, s[i]) };
                    // A filtering comparison keeps the vector's value, whichever side it is on.
                    match apply(op, return_bool, a, b)? {
                        Some(_) if filter => Some(*x),
                        other => other,
                    }
                }
                None => None,
            });
        }
        if values.iter().any(Option::is_some) {
            out.push(Series {
                labels: if keep_name {
                    series.labels
                } else {
                    drop_name(&series.labels)
                },
                values,
            });
        }
    }
    Ok(Value::Vector(out))
}

/// The labels that decide which series match.
fn signature(labels: &Labels, matching: Option<&LabelModifier>) -> Vec<(String, String)> {
    match matching {
        Some(LabelModifier::Include(on)) => labels
            .iter()
            .filter(|(k, _)| on.labels.iter().any(|l| l == k))
            .cloned()
            .collect(),
        Some(LabelModifier::Exclude(ign)) => labels
            .iter()
            .filter(|(k, _)| k != METRIC_NAME && !ign.labels.iter().any(|l| l == k))
            .cloned()
            .collect(),
        None => labels
            .iter()
            .filter(|(k, _)| k != METRIC_NAME)
            .cloned()
            .collect(),
    }
}

fn vector_vector(
    ev: &Evaluator<'_>,
    b: &BinaryExpr,
    op: &str,
    return_bool: bool,
    lhs: Vec<Series>,
    rhs: Vec<Series>,
) -> Result<Value> {
    let steps = ev.grid.len();
    let modifier = b.modifier.as_ref();
    let matching = modifier.and_then(|m| m.matching.as_ref());
    let card = modifier
        .map(|m| m.card.clone())
        .unwrap_or(VectorMatchCardinality::OneToOne);
    let lsig: Vec<Vec<(String, String)>> =
        lhs.iter().map(|s| signature(&s.labels, matching)).collect();
    let rsig: Vec<Vec<(String, String)>> =
        rhs.iter().map(|s| signature(&s.labels, matching)).collect();

    if matches!(op, "and" | "or" | "unless") {
        let mut rindex: HashMap<&Vec<(String, String)>, Vec<usize>> = HashMap::new();
        for (i, s) in rsig.iter().enumerate() {
            rindex.entry(s).or_default().push(i);
        }
        let present = |sig: &Vec<(String, String)>,
                       side: &[Series],
                       idx: Option<&Vec<usize>>,
                       step: usize| {
            let _ = sig;
            idx.is_some_and(|v| v.iter().any(|&j| side[j].values[step].is_some()))
        };
        let mut out = Vec::new();
        match op {
            "and" | "unless" => {
                for (i, s) in lhs.into_iter().enumerate() {
                    let idx = rindex.get(&lsig[i]);
                    let values: Vec<Option<f64>> = (0..steps)
                        .map(|t| {
                            let has = present(&lsig[i], &rhs, idx, t);
                            s.values[t].filter(|_| if op == "and" { has } else { !has })
                        })
                        .collect();
                    if values.iter().any(Option::is_some) {
                        out.push(Series {
                            labels: s.labels,
                            values,
                        });
                    }
                }
            }
            _ => {
                let mut lindex: HashMap<&Vec<(String, String)>, Vec<usize>> = HashMap::new();
                for (i, s) in lsig.iter().enumerate() {
                    lindex.entry(s).or_default().push(i);
                }
                for (j, s) in rhs.iter().enumerate() {
                    let idx = lindex.get(&rsig[j]);
                    let values: Vec<Option<f64>> = (0..steps)
                        .map(|t| s.values[t].filter(|_| !present(&rsig[j], &lhs, idx, t)))
                        .collect();
                    if values.iter().any(Option::is_some) {
                        out.push(Series {
                            labels: s.labels.clone(),
                            values,
                        });
                    }
                }
                let mut all = lhs;
                all.append(&mut out);
                return Ok(Value::Vector(all));
            }
        }
        return Ok(Value::Vector(out));
    }

    // Arithmetic and comparisons: the "one" side must be unique per signature and step.
    let (many, one, many_sig, one_sig, swapped, include) = match &card {
        VectorMatchCardinality::OneToMany(inc) => (&rhs, &lhs, &rsig, &lsig, true, Some(inc)),
        VectorMatchCardinality::ManyToOne(inc) => (&lhs, &rhs, &lsig, &rsig, false, Some(inc)),
        _ => (&lhs, &rhs, &lsig, &rsig, false, None),
    };
    let mut one_index: HashMap<&Vec<(String, String)>, Vec<usize>> = HashMap::new();
    for (i, s) in one_sig.iter().enumerate() {
        one_index.entry(s).or_default().push(i);
    }
    let filter = is_comparison(op) && !return_bool;
    let keep_name = keeps_name(op, return_bool);
    let mut results: HashMap<Labels, Vec<Option<f64>>> = HashMap::new();
    let mut order: Vec<Labels> = Vec::new();
    let mut many_seen: HashMap<(Vec<(String, String)>, usize), usize> = HashMap::new();
    for (i, m) in many.iter().enumerate() {
        ev.budget.check_deadline()?;
        let Some(cands) = one_index.get(&many_sig[i]) else {
            continue;
        };
        for t in 0..steps {
            let Some(mv) = m.values[t] else { continue };
            let mut found: Option<&Series> = None;
            for &j in cands {
                if one[j].values[t].is_some() {
                    if found.is_some() {
                        return Err(QueryError::Execution(format!(
                            "found duplicate series for the match group {:?} on the {} side of the operation; many-to-many matching not allowed: matching labels must be unique on one side",
                            one_sig[j],
                            if swapped { "left" } else { "right" }
                        )));
                    }
                    found = Some(&one[j]);
                }
            }
            let Some(o) = found else { continue };
            let Some(ov) = o.values[t] else { continue };
            if include.is_none() {
                *many_seen.entry((many_sig[i].clone(), t)).or_insert(0) += 1;
                if many_seen[&(many_sig[i].clone(), t)] > 1 {
                    return Err(QueryError::Execution(format!(
                        "found duplicate series for the match group {:?} on the left side of the operation; use group_left/group_right for many-to-one matching",
                        many_sig[i]
                    )));
                }
            }
            let (a, bv) = if swapped { (ov, mv) } else { (mv, ov) };
            let Some(v) = apply(op, return_bool, a, bv)? else {
                continue;
            };
            // Filtering comparisons keep the left-hand value.
            let v = if filter { a } else { v };
            let labels = result_labels(&m.labels, &o.labels, matching, &card, include, keep_name);
            let entry = match results.entry(labels) {
                Entry::Occupied(e) => e.into_mut(),
                Entry::Vacant(e) => {
                    // A new result series of `steps` points.
                    ev.held.take(steps)?;
                    order.push(e.key().clone());
                    e.insert(vec![None; steps])
                }
            };
            if entry[t].is_some() {
                return Err(QueryError::Execution(
                    "multiple matches for labels: grouping labels must ensure unique matches"
                        .into(),
                ));
            }
            entry[t] = Some(v);
        }
    }
    Ok(Value::Vector(
        order
            .into_iter()
            .filter_map(|l| {
                results
                    .remove(&l)
                    .map(|values| Series { labels: l, values })
            })
            .collect(),
    ))
}

fn result_labels(
    many: &Labels,
    one: &Labels,
    matching: Option<&LabelModifier>,
    card: &VectorMatchCardinality,
    include: Option<&promql_parser::label::Labels>,
    keep_name: bool,
) -> Labels {
    let mut v: Vec<(String, String)> = many
        .iter()
        .filter(|(k, _)| keep_name || k != METRIC_NAME)
        .cloned()
        .collect();
    if matches!(card, VectorMatchCardinality::OneToOne) {
        match matching {
            Some(LabelModifier::Include(on)) => v.retain(|(k, _)| on.labels.iter().any(|l| l == k)),
            Some(LabelModifier::Exclude(ign)) => {
                v.retain(|(k, _)| !ign.labels.iter().any(|l| l == k))
            }
            None => {}
        }
    }
    if let Some(inc) = include {
        for name in &inc.labels {
            v.retain(|(k, _)| k != name);
            if let Some((_, val)) = one.iter().find(|(k, _)| k == name) {
                v.push((name.clone(), val.clone()));
            }
        }
        v.sort();
    }
    Arc::new(v)
}
