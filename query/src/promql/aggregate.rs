//! Aggregation operators with `by` / `without`.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::Arc;

use promql_parser::parser::ast::{AggregateExpr, LabelModifier};

use super::eval::{Evaluator, op_name};
use super::value::{Labels, METRIC_NAME, Series, Value, with_label};
use crate::error::{QueryError, Result};
use crate::quantile::quantile;

fn group_labels(labels: &Labels, modifier: Option<&LabelModifier>) -> Labels {
    Arc::new(match modifier {
        Some(LabelModifier::Include(by)) => labels
            .iter()
            .filter(|(k, _)| by.labels.iter().any(|l| l == k))
            .cloned()
            .collect(),
        Some(LabelModifier::Exclude(without)) => labels
            .iter()
            .filter(|(k, _)| k != METRIC_NAME && !without.labels.iter().any(|l| l == k))
            .cloned()
            .collect(),
        None => Vec::new(),
    })
}

pub(crate) fn eval(ev: &Evaluator<'_>, a: &AggregateExpr) -> Result<Value> {
    let op_text = op_name(&a.op);
    let op = op_text.as_str();
    let input = ev.eval_vector(&a.expr, &format!("the argument of {op}"))?;
    let steps = ev.grid.len();
    let modifier = a.modifier.as_ref();
    let param_scalar = |what: &str| -> Result<Vec<f64>> {
        match &a.param {
            Some(p) => ev.eval_scalar(p, what),
            None => Err(QueryError::Execution(format!("{op} needs a parameter"))),
        }
    };

    match op {
        "topk" | "bottomk" => {
            let k = param_scalar("k")?;
            let mut groups: HashMap<Labels, Vec<usize>> = HashMap::new();
            for (i, s) in input.iter().enumerate() {
                groups
                    .entry(group_labels(&s.labels, modifier))
                    .or_default()
                    .push(i);
            }
            let mut keep = vec![vec![false; steps]; input.len()];
            for members in groups.values() {
                ev.budget.check_deadline()?;
                // Ties are decided by input order (selectors yield label order, as in
                // Prometheus) and the heap, so both follow Prometheus.
                for t in 0..steps {
                    let kt = k[t];
                    if kt.is_nan() || kt < 1.0 {
                        continue;
                    }
                    let present = members
                        .iter()
                        .copied()
                        .filter_map(|i| input[i].values[t].map(|v| (i, v)));
                    for i in select_k(present, kt.trunc(), op == "topk") {
                        keep[i][t] = true;
                    }
                }
            }
            let out = input
                .into_iter()
                .enumerate()
                .filter_map(|(i, s)| {
                    let values: Vec<Option<f64>> = (0..steps)
                        .map(|t| s.values[t].filter(|_| keep[i][t]))
                        .collect();
                    values.iter().any(Option::is_some).then_some(Series {
                        labels: s.labels,
                        values,
                    })
                })
                .collect();
            Ok(Value::Vector(out))
        }
        "count_values" => {
            let label = match &a.param {
                Some(p) => ev.eval_string(p, "the label of count_values")?,
                None => {
                    return Err(QueryError::Execution(
                        "count_values needs a label name".into(),
                    ));
                }
            };
            let mut out: HashMap<Labels, Vec<Option<f64>>> = HashMap::new();
            for s in &input {
                ev.budget.check_deadline()?;
                let g = group_labels(&s.labels, modifier);
                for t in 0..steps {
                    if let Some(v) = s.values[t] {
                        let l = with_label(&g, &label, &format_value(v));
                        // Every distinct value is a new series of `steps` points.
                        let e = match out.entry(l) {
                            Entry::Occupied(e) => e.into_mut(),
                            Entry::Vacant(e) => {
                                ev.held.take(steps)?;
                                e.insert(vec![None; steps])
                            }
                        };
                        e[t] = Some(e[t].unwrap_or(0.0) + 1.0);
                    }
                }
            }
            Ok(Value::Vector(
                out.into_iter()
                    .map(|(labels, values)| Series { labels, values })
                    .collect(),
            ))
        }
        _ => {
            let q = if op == "quantile" {
                Some(param_scalar("the quantile")?)
            } else {
                None
            };
            let mut groups: HashMap<Labels, Vec<usize>> = HashMap::new();
            let mut order = Vec::new();
            for (i, s) in input.iter().enumerate() {
                let g = group_labels(&s.labels, modifier);
                groups
                    .entry(g.clone())
                    .or_insert_with(|| {
                        order.push(g);
                        Vec::new()
                    })
                    .push(i);
            }
            let mut out = Vec::with_capacity(groups.len());
            for g in order {
                ev.budget.check_deadline()?;
                let members = &groups[&g];
                let mut values = Vec::with_capacity(steps);
                let mut buf = Vec::new();
                for t in 0..steps {
                    buf.clear();
                    buf.extend(members.iter().filter_map(|&i| input[i].values[t]));
                    values.push(if buf.is_empty() {
                        None
                    } else {
                        Some(reduce(op, &mut buf, q.as_ref().map(|q| q[t]))?)
                    });
                }
                if values.iter().any(Option::is_some) {
                    out.push(Series { labels: g, values });
                }
            }
            Ok(Value::Vector(out))
        }
    }
}

/// The `k` largest (`top`) or smallest values of `items`, chosen exactly as Prometheus 2.x's
/// bounded heap does (promql/engine.go `aggregation` over Go's `container/heap`: pop the root,
/// push the newcomer), so that ties pick the same series. A NaN root is always replaced.
fn select_k(items: impl Iterator<Item = (usize, f64)>, k: f64, top: bool) -> Vec<usize> {
    // Go's `vectorByValueHeap.Less` (`top`) or `vectorByReverseValueHeap.Less`.
    let less = |a: f64, b: f64| a.is_nan() || if top { a < b } else { a > b };
    let up = |h: &mut Vec<(usize, f64)>, mut j: usize| {
        while j > 0 {
            let i = (j - 1) / 2;
            if !less(h[j].1, h[i].1) {
                break;
            }
            h.swap(i, j);
            j = i;
        }
    };
    let down = |h: &mut Vec<(usize, f64)>, n: usize| {
        let mut i = 0;
        loop {
            let j1 = 2 * i + 1;
            if j1 >= n {
                break;
            }
            let mut j = j1;
            if j1 + 1 < n && less(h[j1 + 1].1, h[j1].1) {
                j = j1 + 1;
            }
            if !less(h[j].1, h[i].1) {
                break;
            }
            h.swap(i, j);
            i = j;
        }
    };
    let mut heap: Vec<(usize, f64)> = Vec::new();
    for (i, v) in items {
        if (heap.len() as f64) < k {
            heap.push((i, v));
            let last = heap.len() - 1;
            up(&mut heap, last);
            continue;
        }
        let Some(&(_, root)) = heap.first() else {
            continue;
        };
        let replaces = if top { root < v } else { root > v };
        if !(replaces || root.is_nan()) {
            continue;
        }
        if heap.len() == 1 {
            heap[0] = (i, v);
            continue;
        }
        // heap.Pop: move the root last, restore the heap on the rest, drop it; then heap.Push.
        let n = heap.len() - 1;
        heap.swap(0, n);
        down(&mut heap, n);
        heap.pop();
        heap.push((i, v));
        let last = heap.len() - 1;
        up(&mut heap, last);
    }
    heap.into_iter().map(|(i, _)| i).collect()
}

fn reduce(op: &str, v: &mut [f64], q: Option<f64>) -> Result<f64> {
    let n = v.len() as f64;
    Ok(match op {
        "sum" => kahan_sum(v),
        "avg" => {
            // Prometheus' incremental mean, which avoids overflow for large values.
            let mut mean = 0.0;
            for (i, x) in v.iter().enumerate() {
                if x.is_infinite() {
                    return Ok(kahan_sum(v) / n);
                }
                mean += (x - mean) / (i as f64 + 1.0);
            }
            mean
        }
        "min" => v
            .iter()
            .copied()
            .fold(f64::NAN, |a, x| if a.is_nan() || x < a { x } else { a }),
        "max" => v
            .iter()
            .copied()
            .fold(f64::NAN, |a, x| if a.is_nan() || x > a { x } else { a }),
        "count" => n,
        "group" => 1.0,
        "stddev" | "stdvar" => {
            let mut mean = 0.0;
            let mut m2 = 0.0;
            for (i, x) in v.iter().enumerate() {
                let c = i as f64 + 1.0;
                let d = x - mean;
                mean += d / c;
                m2 += d * (x - mean);
            }
            let var = m2 / n;
            if op == "stddev" { var.sqrt() } else { var }
        }
        "quantile" => quantile(v, q.unwrap_or(f64::NAN)),
        other => return Err(QueryError::Unsupported(format!("aggregation {other}"))),
    })
}

pub(crate) fn kahan_sum(v: &[f64]) -> f64 {
    let (mut sum, mut c) = (0.0f64, 0.0f64);
    for &x in v {
        let t = sum + x;
        if sum.abs() >= x.abs() {
            c += (sum - t) + x;
        } else {
            c += (x - t) + sum;
        }
        sum = t;
    }
    if c.is_finite() { sum + c } else { sum }
}

/// Formats a value like Prometheus' `strconv.FormatFloat(v, 'f', -1, 64)`.
pub(crate) fn format_value(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        }
    } else {
        let s = format!("{v}");
        s
    }
}
