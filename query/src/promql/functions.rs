//! PromQL functions.

use std::collections::HashMap;
use std::sync::Arc;

use promql_parser::parser::{Call, Expr};

use super::aggregate::kahan_sum;
use super::eval::{Evaluator, Window};
use super::value::{Labels, Series, Value, drop_name, label, with_label};
use crate::error::{QueryError, Result};
use crate::quantile::{nan_first, quantile};

fn arg(c: &Call, i: usize) -> Result<&Expr> {
    c.args.args.get(i).map(|b| b.as_ref()).ok_or_else(|| {
        QueryError::Execution(format!("{}() is missing argument {}", c.func.name, i + 1))
    })
}

fn matrix_arg(c: &Call, i: usize) -> Result<&promql_parser::parser::MatrixSelector> {
    let mut e = arg(c, i)?;
    while let Expr::Paren(p) = e {
        e = &p.expr;
    }
    match e {
        Expr::MatrixSelector(m) => Ok(m),
        Expr::Subquery(_) => Err(QueryError::Unsupported("subqueries".into())),
        _ => Err(QueryError::Execution(format!(
            "{}() needs a range vector",
            c.func.name
        ))),
    }
}

fn map_vector(
    v: Vec<Series>,
    keep_name: bool,
    mut f: impl FnMut(f64, usize) -> Option<f64>,
) -> Vec<Series> {
    v.into_iter()
        .filter_map(|s| {
            let values: Vec<Option<f64>> = s
                .values
                .iter()
                .enumerate()
                .map(|(t, x)| x.and_then(|x| f(x, t)))
                .collect();
            values.iter().any(Option::is_some).then(|| Series {
                labels: if keep_name {
                    s.labels
                } else {
                    drop_name(&s.labels)
                },
                values,
            })
        })
        .collect()
}

/// Prometheus' `extrapolatedRate` (promql/functions.go) for rate, increase and delta.
fn extrapolated(
    w: Window<'_>,
    t: i64,
    range_ms: i64,
    is_counter: bool,
    is_rate: bool,
) -> Option<f64> {
    let points = w.points;
    if points.len() < 2 {
        return None;
    }
    let (first, last) = (points[0], points[points.len() - 1]);
    let mut result = last.1 - first.1;
    if is_counter {
        // Prometheus adds the value before each reset, in order; the window's drops are
        // exactly those (its first sample, compared with zero, adds zero).
        if first.1 < 0.0 {
            result += 0.0;
        }
        for &(_, before) in w.drops {
            result += before;
        }
    }
    let range_start = t - range_ms;
    let mut to_start = (first.0 - range_start) as f64 / 1000.0;
    let to_end = (t - last.0) as f64 / 1000.0;
    let sampled = (last.0 - first.0) as f64 / 1000.0;
    let avg_between = sampled / (points.len() - 1) as f64;
    if is_counter && result > 0.0 && first.1 >= 0.0 {
        let to_zero = sampled * (first.1 / result);
        if to_zero < to_start {
            to_start = to_zero;
        }
    }
    let threshold = avg_between * 1.1;
    let mut interval = sampled;
    interval += if to_start < threshold {
        to_start
    } else {
        avg_between / 2.0
    };
    interval += if to_end < threshold {
        to_end
    } else {
        avg_between / 2.0
    };
    result *= interval / sampled;
    if is_rate {
        result /= range_ms as f64 / 1000.0;
    }
    Some(result)
}

fn instant_delta(w: &[(i64, f64)], is_rate: bool) -> Option<f64> {
    if w.len() < 2 {
        return None;
    }
    let (prev, last) = (w[w.len() - 2], w[w.len() - 1]);
    let mut d = last.1 - prev.1;
    if is_rate && last.1 < prev.1 {
        d = last.1; // counter reset
    }
    if is_rate {
        let dt = (last.0 - prev.0) as f64 / 1000.0;
        if dt == 0.0 {
            return None;
        }
        d /= dt;
    }
    Some(d)
}

fn linear_regression(w: &[(i64, f64)], intercept_t: i64) -> (f64, f64) {
    let n = w.len() as f64;
    let (mut sx, mut sy, mut sxy, mut sxx) = (0.0, 0.0, 0.0, 0.0);
    for &(t, v) in w {
        let x = (t - intercept_t) as f64 / 1000.0;
        sx += x;
        sy += v;
        sxy += x * v;
        sxx += x * x;
    }
    let cov = sxy - sx * sy / n;
    let var = sxx - sx * sx / n;
    let slope = cov / var;
    (slope, sy / n - slope * sx / n)
}

fn over_time(name: &str, w: &[(i64, f64)], q: f64) -> Option<f64> {
    let vals = || w.iter().map(|x| x.1);
    let n = w.len() as f64;
    Some(match name {
        "avg_over_time" => {
            let mut mean = 0.0;
            for (i, v) in vals().enumerate() {
                mean += (v - mean) / (i as f64 + 1.0);
            }
            mean
        }
        "sum_over_time" => kahan_sum(&vals().collect::<Vec<_>>()),
        "count_over_time" => n,
        "min_over_time" => vals().fold(f64::NAN, |a, x| if a.is_nan() || x < a { x } else { a }),
        "max_over_time" => vals().fold(f64::NAN, |a, x| if a.is_nan() || x > a { x } else { a }),
        "last_over_time" => w[w.len() - 1].1,
        "present_over_time" => 1.0,
        "stddev_over_time" | "stdvar_over_time" => {
            let (mut mean, mut m2) = (0.0, 0.0);
            for (i, x) in vals().enumerate() {
                let d = x - mean;
                mean += d / (i as f64 + 1.0);
                m2 += d * (x - mean);
            }
            let var = m2 / n;
            if name == "stddev_over_time" {
                var.sqrt()
            } else {
                var
            }
        }
        "quantile_over_time" => quantile(&mut vals().collect::<Vec<_>>(), q),
        _ => return None,
    })
}

/// Prometheus' `bucketQuantile` (promql/quantile.go) over `(upper bound, cumulative count)`.
fn bucket_quantile(q: f64, buckets: &mut Vec<(f64, f64)>) -> f64 {
    if q.is_nan() {
        return f64::NAN;
    }
    if q < 0.0 {
        return f64::NEG_INFINITY;
    }
    if q > 1.0 {
        return f64::INFINITY;
    }
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    if buckets.len() < 2 || buckets.last().is_none_or(|b| b.0 != f64::INFINITY) {
        return f64::NAN;
    }
    // Merge equal bounds and make counts monotonic, as Prometheus does.
    buckets.dedup_by(|b, a| {
        if a.0 == b.0 {
            a.1 += b.1;
            true
        } else {
            false
        }
    });
    let mut max = f64::NEG_INFINITY;
    for b in buckets.iter_mut() {
        if b.1 > max {
            max = b.1;
        } else {
            b.1 = max;
        }
    }
    let observations = buckets[buckets.len() - 1].1;
    if observations == 0.0 {
        return f64::NAN;
    }
    let rank = q * observations;
    let b = buckets.partition_point(|x| x.1 < rank);
    if b == buckets.len() - 1 {
        return buckets[buckets.len() - 2].0;
    }
    if b == 0 && buckets[0].0 <= 0.0 {
        return buckets[0].0;
    }
    let (mut start, mut count, mut rank) = (0.0, buckets[b].1, rank);
    let end = buckets[b].0;
    if b > 0 {
        start = buckets[b - 1].0;
        count -= buckets[b - 1].1;
        rank -= buckets[b - 1].1;
    }
    start + (end - start) * (rank / count)
}

pub(crate) fn eval(ev: &Evaluator<'_>, c: &Call) -> Result<Value> {
    let name = c.func.name;
    let steps = ev.grid.len();
    match name {
        "rate" | "increase" | "delta" => {
            let counter = name != "delta";
            let rate = name == "rate";
            let m = matrix_arg(c, 0)?;
            Ok(Value::Vector(ev.range_apply(m, false, |w, t, r, _| {
                extrapolated(w, t, r, counter, rate)
            })?))
        }
        "irate" | "idelta" => {
            let m = matrix_arg(c, 0)?;
            Ok(Value::Vector(ev.range_apply(m, false, |w, _, _, _| {
                instant_delta(w.points, name == "irate")
            })?))
        }
        "resets" | "changes" => {
            let m = matrix_arg(c, 0)?;
            Ok(Value::Vector(ev.range_apply(m, false, |w, _, _, _| {
                Some(if name == "resets" {
                    w.drops.len() as f64
                } else {
                    w.points
                        .windows(2)
                        .filter(|p| p[1].1 != p[0].1 && !(p[1].1.is_nan() && p[0].1.is_nan()))
                        .count() as f64
                })
            })?))
        }
        "deriv" => {
            let m = matrix_arg(c, 0)?;
            Ok(Value::Vector(ev.range_apply(m, false, |w, _, _, _| {
                let w = w.points;
                (w.len() >= 2).then(|| linear_regression(w, w[0].0).0)
            })?))
        }
        "predict_linear" => {
            let m = matrix_arg(c, 0)?;
            let secs = ev.eval_scalar(arg(c, 1)?, "the horizon of predict_linear")?;
            Ok(Value::Vector(ev.range_apply(m, false, |w, t, _, i| {
                let w = w.points;
                (w.len() >= 2).then(|| {
                    let (slope, intercept) = linear_regression(w, t);
                    intercept + slope * secs[i]
                })
            })?))
        }
        "avg_over_time" | "sum_over_time" | "count_over_time" | "min_over_time"
        | "max_over_time" | "last_over_time" | "present_over_time" | "stddev_over_time"
        | "stdvar_over_time" => {
            let m = matrix_arg(c, 0)?;
            Ok(Value::Vector(ev.range_apply(
                m,
                name == "last_over_time",
                |w, _, _, _| over_time(name, w.points, 0.0),
            )?))
        }
        "quantile_over_time" => {
            let q = ev.eval_scalar(arg(c, 0)?, "the quantile")?;
            let m = matrix_arg(c, 1)?;
            Ok(Value::Vector(ev.range_apply(m, false, |w, _, _, i| {
                over_time(name, w.points, q[i])
            })?))
        }
        "absent_over_time" => {
            let m = matrix_arg(c, 0)?;
            let present = ev.range_apply(m, false, |_, _, _, _| Some(1.0))?;
            let labels = absent_labels(arg(c, 0)?);
            let values: Vec<Option<f64>> = (0..steps)
                .map(|t| (!present.iter().any(|s| s.values[t].is_some())).then_some(1.0))
                .collect();
            Ok(Value::Vector(if values.iter().any(Option::is_some) {
                vec![Series { labels, values }]
            } else {
                Vec::new()
            }))
        }
        "abs" | "ceil" | "floor" | "exp" | "ln" | "log2" | "log10" | "sqrt" | "sgn" | "acos"
        | "asin" | "atan" | "cos" | "sin" | "tan" | "cosh" | "sinh" | "tanh" | "deg" | "rad" => {
            let v = ev.eval_vector(arg(c, 0)?, &format!("the argument of {name}"))?;
            let f: fn(f64) -> f64 = match name {
                "abs" => f64::abs,
                "ceil" => f64::ceil,
                "floor" => f64::floor,
                "exp" => f64::exp,
                "ln" => f64::ln,
                "log2" => f64::log2,
                "log10" => f64::log10,
                "sqrt" => f64::sqrt,
                "sgn" => |x: f64| {
                    if x > 0.0 {
                        1.0
                    } else if x < 0.0 {
                        -1.0
                    } else {
                        x
                    }
                },
                "acos" => f64::acos,
                "asin" => f64::asin,
                "atan" => f64::atan,
                "cos" => f64::cos,
                "sin" => f64::sin,
                "tan" => f64::tan,
                "cosh" => f64::cosh,
                "sinh" => f64::sinh,
                "tanh" => f64::tanh,
                "deg" => f64::to_degrees,
                _ => f64::to_radians,
            };
            Ok(Value::Vector(map_vector(v, false, |x, _| Some(f(x)))))
        }
        "round" => {
            let v = ev.eval_vector(arg(c, 0)?, "the argument of round")?;
            let to = match c.args.args.get(1) {
                Some(e) => ev.eval_scalar(e, "to_nearest")?,
                None => vec![1.0; steps],
            };
            Ok(Value::Vector(map_vector(v, false, |x, t| {
                let inv = 1.0 / to[t];
                Some((x * inv + 0.5).floor() / inv)
            })))
        }
        "clamp" | "clamp_min" | "clamp_max" => {
            let v = ev.eval_vector(arg(c, 0)?, &format!("the argument of {name}"))?;
            let a = ev.eval_scalar(arg(c, 1)?, "the bound")?;
            let b = if name == "clamp" {
                Some(ev.eval_scalar(arg(c, 2)?, "the upper bound")?)
            } else {
                None
            };
            Ok(Value::Vector(map_vector(v, false, |x, t| match name {
                "clamp_min" => Some(go_max(x, a[t])),
                "clamp_max" => Some(go_min(x, a[t])),
                _ => {
                    let hi = b.as_ref().map_or(f64::NAN, |b| b[t]);
                    if a[t] > hi {
                        None
                    } else {
                        Some(go_min(go_max(x, a[t]), hi))
                    }
                }
            })))
        }
        "time" => Ok(Value::Scalar(
            (0..steps).map(|i| ev.grid.at(i) as f64 / 1000.0).collect(),
        )),
        "timestamp" => {
            let mut e = arg(c, 0)?;
            while let Expr::Paren(p) = e {
                e = &p.expr;
            }
            if let Expr::VectorSelector(vs) = e {
                return Ok(Value::Vector(ev.selector_timestamps(vs)?));
            }
            let v = ev.eval_vector(e, "the argument of timestamp")?;
            Ok(Value::Vector(map_vector(v, false, |_, t| {
                Some(ev.grid.at(t) as f64 / 1000.0)
            })))
        }
        "minute" | "hour" | "day_of_month" | "day_of_week" | "day_of_year" | "month" | "year"
        | "days_in_month" => {
            let v = match c.args.args.first() {
                Some(e) => ev.eval_vector(e, &format!("the argument of {name}"))?,
                None => vec![Series {
                    labels: Arc::new(Vec::new()),
                    values: (0..steps)
                        .map(|i| Some(ev.grid.at(i) as f64 / 1000.0))
                        .collect(),
                }],
            };
            Ok(Value::Vector(map_vector(v, false, |x, _| {
                calendar(name, x)
            })))
        }
        "vector" => {
            let s = ev.eval_scalar(arg(c, 0)?, "the argument of vector")?;
            Ok(Value::Vector(vec![Series {
                labels: Arc::new(Vec::new()),
                values: s.into_iter().map(Some).collect(),
            }]))
        }
        "scalar" => {
            let v = ev.eval_vector(arg(c, 0)?, "the argument of scalar")?;
            Ok(Value::Scalar(
                (0..steps)
                    .map(|t| {
                        let mut it = v.iter().filter_map(|s| s.values[t]);
                        match (it.next(), it.next()) {
                            (Some(x), None) => x,
                            _ => f64::NAN,
                        }
                    })
                    .collect(),
            ))
        }
        "absent" => {
            let v = ev.eval_vector(arg(c, 0)?, "the argument of absent")?;
            let labels = absent_labels(arg(c, 0)?);
            let values: Vec<Option<f64>> = (0..steps)
                .map(|t| (!v.iter().any(|s| s.values[t].is_some())).then_some(1.0))
                .collect();
            Ok(Value::Vector(if values.iter().any(Option::is_some) {
                vec![Series { labels, values }]
            } else {
                Vec::new()
            }))
        }
        "sort" | "sort_desc" => {
            let mut v = ev.eval_vector(arg(c, 0)?, &format!("the argument of {name}"))?;
            if steps == 1 {
                v.sort_by(|a, b| {
                    let (x, y) = (
                        a.values[0].unwrap_or(f64::NAN),
                        b.values[0].unwrap_or(f64::NAN),
                    );
                    // NaN sorts to the bottom either way, as in Prometheus' funcSort(Desc).
                    match (x.is_nan(), y.is_nan()) {
                        (true, true) => std::cmp::Ordering::Equal,
                        (true, false) => std::cmp::Ordering::Greater,
                        (false, true) => std::cmp::Ordering::Less,
                        _ if name == "sort" => nan_first(x, y),
                        _ => nan_first(y, x),
                    }
                });
            }
            Ok(Value::Vector(v))
        }
        "label_replace" => {
            let v = ev.eval_vector(arg(c, 0)?, "the argument of label_replace")?;
            let dst = ev.eval_string(arg(c, 1)?, "dst_label")?;
            let repl = ev.eval_string(arg(c, 2)?, "replacement")?;
            let src = ev.eval_string(arg(c, 3)?, "src_label")?;
            let re = ev.eval_string(arg(c, 4)?, "regex")?;
            let re = regex::Regex::new(&format!("^(?s:{re})$")).map_err(|e| {
                QueryError::Execution(format!(
                    "invalid regular expression in label_replace(): {e}"
                ))
            })?;
            if !is_label_name(&dst) {
                return Err(QueryError::Execution(format!(
                    "invalid destination label name in label_replace(): {dst}"
                )));
            }
            let out = v
                .into_iter()
                .map(|s| {
                    let value = label(&s.labels, &src);
                    let labels = match re.captures(value) {
                        Some(caps) => {
                            let mut res = String::new();
                            caps.expand(&repl, &mut res);
                            with_label(&s.labels, &dst, &res)
                        }
                        None => s.labels.clone(),
                    };
                    Series {
                        labels,
                        values: s.values,
                    }
                })
                .collect();
            Ok(Value::Vector(out))
        }
        "label_join" => {
            let v = ev.eval_vector(arg(c, 0)?, "the argument of label_join")?;
            let dst = ev.eval_string(arg(c, 1)?, "dst_label")?;
            let sep = ev.eval_string(arg(c, 2)?, "separator")?;
            let mut srcs = Vec::new();
            for i in 3..c.args.args.len() {
                srcs.push(ev.eval_string(arg(c, i)?, "src_label")?);
            }
            let out = v
                .into_iter()
                .map(|s| {
                    let joined = srcs
                        .iter()
                        .map(|n| label(&s.labels, n))
                        .collect::<Vec<_>>()
                        .join(&sep);
                    Series {
                        labels: with_label(&s.labels, &dst, &joined),
                        values: s.values,
                    }
                })
                .collect();
            Ok(Value::Vector(out))
        }
        "histogram_quantile" => {
            let q = ev.eval_scalar(arg(c, 0)?, "the quantile")?;
            let v = ev.eval_vector(arg(c, 1)?, "the buckets")?;
            let mut groups: HashMap<Labels, Vec<(f64, usize)>> = HashMap::new();
            for (i, s) in v.iter().enumerate() {
                let le = label(&s.labels, "le");
                let Ok(bound) = parse_le(le) else { continue };
                let g: Labels = Arc::new(
                    s.labels
                        .iter()
                        .filter(|(k, _)| k != "le" && k != super::value::METRIC_NAME)
                        .cloned()
                        .collect(),
                );
                groups.entry(g).or_default().push((bound, i));
            }
            let mut out = Vec::new();
            for (labels, members) in groups {
                let values: Vec<Option<f64>> = (0..steps)
                    .map(|t| {
                        let mut buckets: Vec<(f64, f64)> = members
                            .iter()
                            .filter_map(|&(b, i)| v[i].values[t].map(|c| (b, c)))
                            .collect();
                        (!buckets.is_empty()).then(|| bucket_quantile(q[t], &mut buckets))
                    })
                    .collect();
                if values.iter().any(Option::is_some) {
                    out.push(Series { labels, values });
                }
            }
            Ok(Value::Vector(out))
        }
        other => Err(QueryError::Unsupported(format!("function {other}()"))),
    }
}

/// Go's `math.Max`: NaN if either is NaN (Rust's `f64::max` ignores a NaN).
fn go_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.max(b)
    }
}

/// Go's `math.Min`: NaN if either is NaN.
fn go_min(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.min(b)
    }
}

fn parse_le(s: &str) -> std::result::Result<f64, ()> {
    match s {
        "+Inf" | "Inf" | "inf" | "+inf" => Ok(f64::INFINITY),
        _ => s.parse().map_err(|_| ()),
    }
}

fn is_label_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Labels of `absent(sel)`: the selector's equality matchers.
fn absent_labels(e: &Expr) -> Labels {
    let mut e = e;
    while let Expr::Paren(p) = e {
        e = &p.expr;
    }
    let vs = match e {
        Expr::VectorSelector(vs) => vs,
        Expr::MatrixSelector(ms) => &ms.vs,
        _ => return Arc::new(Vec::new()),
    };
    // As Prometheus' createLabelsForAbsentFunction: an equality matcher sets its label unless
    // the label is already set; any other matcher on a set label (or a second `=`) removes it.
    let mut v: Vec<(String, String)> = Vec::new();
    for m in &vs.matchers.matchers {
        if m.name == super::value::METRIC_NAME {
            continue;
        }
        let set = v.iter().any(|(k, _)| k == &m.name);
        if matches!(m.op, promql_parser::label::MatchOp::Equal) && !set {
            v.push((m.name.clone(), m.value.clone()));
        } else {
            v.retain(|(k, _)| k != &m.name);
        }
    }
    v.sort();
    Arc::new(v)
}

/// Calendar functions on Unix seconds, UTC.
fn calendar(name: &str, secs: f64) -> Option<f64> {
    if !secs.is_finite() {
        return Some(f64::NAN);
    }
    let s = secs.floor() as i64;
    let days = s.div_euclid(86_400);
    let rem = s.rem_euclid(86_400);
    let (y, m, d) = sightline_storage::types::civil_from_days(days);
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let month_len = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    Some(match name {
        "minute" => ((rem % 3600) / 60) as f64,
        "hour" => (rem / 3600) as f64,
        "day_of_month" => d as f64,
        "day_of_week" => (days + 4).rem_euclid(7) as f64,
        "day_of_year" => (month_len[..(m as usize - 1)].iter().sum::<u32>() + d) as f64,
        "month" => m as f64,
        "year" => y as f64,
        _ => month_len[m as usize - 1] as f64,
    })
}
