//! One shape for Prometheus' JSON answers and ours, and their comparison: labels exact, floats
//! within a tight relative tolerance (NaN equals NaN, infinities equal by sign), series order
//! compared only where the query defines it (a top-level `sort`/`sort_desc`).

use serde_json::Value as Json;
use sightline_query::promql::QueryResult;

/// A label set, sorted by name.
pub type Labels = Vec<(String, String)>;

/// A query's answer.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// The query failed (the message is informative only).
    Error(String),
    /// `scalar`: `(t, v)`.
    Scalar(i64, f64),
    /// `string`.
    String(String),
    /// `vector`: `(labels, t, v)` in answer order.
    Vector(Vec<(Labels, i64, f64)>),
    /// `matrix`: series with their points.
    Matrix(Vec<(Labels, Vec<(i64, f64)>)>),
}

fn parse_float(s: &str) -> f64 {
    match s {
        "NaN" => f64::NAN,
        "+Inf" | "Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        _ => s.parse().unwrap_or_else(|e| panic!("bad float {s:?}: {e}")),
    }
}

fn parse_point(p: &Json) -> (i64, f64) {
    let t = p[0].as_f64().expect("point time");
    let v = p[1].as_str().expect("point value");
    ((t * 1000.0).round() as i64, parse_float(v))
}

fn parse_labels(m: &Json) -> Labels {
    let mut v: Labels = m
        .as_object()
        .expect("metric object")
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
        .collect();
    v.sort();
    v
}

/// Reads the `data` object of a successful Prometheus answer.
pub fn from_prometheus(data: &Json) -> Outcome {
    let result = &data["result"];
    match data["resultType"].as_str() {
        Some("scalar") => {
            let (t, v) = parse_point(result);
            Outcome::Scalar(t, v)
        }
        Some("string") => Outcome::String(result[1].as_str().unwrap_or_default().to_owned()),
        Some("vector") => Outcome::Vector(
            result
                .as_array()
                .expect("vector")
                .iter()
                .map(|s| {
                    let (t, v) = parse_point(&s["value"]);
                    (parse_labels(&s["metric"]), t, v)
                })
                .collect(),
        ),
        Some("matrix") => Outcome::Matrix(
            result
                .as_array()
                .expect("matrix")
                .iter()
                .map(|s| {
                    let points = s["values"]
                        .as_array()
                        .expect("values")
                        .iter()
                        .map(parse_point)
                        .collect();
                    (parse_labels(&s["metric"]), points)
                })
                .collect(),
        ),
        other => panic!("unknown resultType {other:?}"),
    }
}

/// Our answer in the same shape.
pub fn from_ours(r: sightline_query::Result<QueryResult>) -> Outcome {
    match r {
        Err(e) => Outcome::Error(e.to_string()),
        Ok(QueryResult::Scalar(p)) => match p.as_slice() {
            [(t, v)] => Outcome::Scalar(*t, *v),
            // A range query's scalar answer is a matrix of one unlabelled series.
            _ => Outcome::Matrix(vec![(Vec::new(), p)]),
        },
        Ok(QueryResult::String(_, s)) => Outcome::String(s),
        Ok(QueryResult::Vector(v)) => Outcome::Vector(
            v.into_iter()
                .map(|s| {
                    let (t, x) = s.points.first().copied().unwrap_or((i64::MIN, f64::NAN));
                    (s.labels, t, x)
                })
                .collect(),
        ),
        Ok(QueryResult::Matrix(m)) => {
            Outcome::Matrix(m.into_iter().map(|s| (s.labels, s.points)).collect())
        }
    }
}

/// Whether two floats agree: equal, both NaN, or within 1e-9 relative (1e-12 absolute near 0).
pub fn close(a: f64, b: f64) -> bool {
    if a.is_nan() || b.is_nan() {
        return a.is_nan() && b.is_nan();
    }
    if a.is_infinite() || b.is_infinite() {
        return a == b;
    }
    let d = (a - b).abs();
    d <= 1e-12 || d <= 1e-9 * a.abs().max(b.abs())
}

fn fmt_labels(l: &Labels) -> String {
    let inner: Vec<String> = l.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
    format!("{{{}}}", inner.join(", "))
}

/// Compares our answer with Prometheus'; `Err` says how they differ.
pub fn compare(ours: &Outcome, theirs: &Outcome, ordered: bool) -> Result<(), String> {
    match (ours, theirs) {
        (Outcome::Error(_), Outcome::Error(_)) => Ok(()),
        (Outcome::Scalar(t1, v1), Outcome::Scalar(t2, v2)) => {
            if t1 == t2 && close(*v1, *v2) {
                Ok(())
            } else {
                Err(format!(
                    "scalar: ours ({t1}, {v1}), prometheus ({t2}, {v2})"
                ))
            }
        }
        (Outcome::String(a), Outcome::String(b)) if a == b => Ok(()),
        (Outcome::Vector(a), Outcome::Vector(b)) => {
            if a.len() != b.len() {
                return Err(format!(
                    "vector: ours has {} series, prometheus {}: ours {:?}, prometheus {:?}",
                    a.len(),
                    b.len(),
                    summary(a),
                    summary(b)
                ));
            }
            if ordered {
                for (i, (x, y)) in a.iter().zip(b).enumerate() {
                    if !close(x.2, y.2) {
                        return Err(format!(
                            "sorted vector: position {i}: ours {} {}, prometheus {} {}",
                            fmt_labels(&x.0),
                            x.2,
                            fmt_labels(&y.0),
                            y.2
                        ));
                    }
                }
            }
            let mut a = a.clone();
            let mut b = b.clone();
            a.sort_by(|x, y| x.0.cmp(&y.0));
            b.sort_by(|x, y| x.0.cmp(&y.0));
            for (x, y) in a.iter().zip(&b) {
                if x.0 != y.0 || x.1 != y.1 || !close(x.2, y.2) {
                    return Err(format!(
                        "vector: ours {} @{} = {}, prometheus {} @{} = {}",
                        fmt_labels(&x.0),
                        x.1,
                        x.2,
                        fmt_labels(&y.0),
                        y.1,
                        y.2
                    ));
                }
            }
            Ok(())
        }
        (Outcome::Matrix(a), Outcome::Matrix(b)) => {
            let mut a = a.clone();
            let mut b = b.clone();
            a.sort_by(|x, y| x.0.cmp(&y.0));
            b.sort_by(|x, y| x.0.cmp(&y.0));
            let la: Vec<String> = a.iter().map(|s| fmt_labels(&s.0)).collect();
            let lb: Vec<String> = b.iter().map(|s| fmt_labels(&s.0)).collect();
            if la != lb {
                return Err(format!("matrix series: ours {la:?}, prometheus {lb:?}"));
            }
            for (x, y) in a.iter().zip(&b) {
                let same = x.1.len() == y.1.len()
                    && x.1
                        .iter()
                        .zip(&y.1)
                        .all(|(p, q)| p.0 == q.0 && close(p.1, q.1));
                if !same {
                    let first =
                        x.1.iter()
                            .zip(&y.1)
                            .find(|(p, q)| p.0 != q.0 || !close(p.1, q.1));
                    return Err(format!(
                        "matrix {}: ours {} points, prometheus {}; first difference {:?}",
                        fmt_labels(&x.0),
                        x.1.len(),
                        y.1.len(),
                        first
                    ));
                }
            }
            Ok(())
        }
        _ => Err(format!(
            "different kinds: ours {}, prometheus {}",
            brief(ours),
            brief(theirs)
        )),
    }
}

fn summary(v: &[(Labels, i64, f64)]) -> Vec<String> {
    let mut s: Vec<String> = v
        .iter()
        .map(|x| format!("{}={}", fmt_labels(&x.0), x.2))
        .collect();
    s.sort();
    s
}

fn brief(o: &Outcome) -> String {
    let s = format!("{o:?}");
    if s.chars().count() > 300 {
        format!("{}...", s.chars().take(300).collect::<String>())
    } else {
        s
    }
}
