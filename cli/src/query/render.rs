//! Plain-text tables for `sightline query` answers.

use serde_json::Value;

/// Left-aligned columns separated by two spaces, with a header row.
pub fn columns(header: &[String], rows: &[Vec<String>]) -> String {
    let mut width: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            if let Some(w) = width.get_mut(i) {
                *w = (*w).max(c.chars().count());
            }
        }
    }
    let line = |cells: &[String]| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            let pad = width.get(i).copied().unwrap_or(0);
            if i + 1 == cells.len() {
                s.push_str(c);
            } else {
                s.push_str(&format!("{c:<pad$}"));
            }
        }
        s.push('\n');
        s
    };
    let mut out = line(header);
    for r in rows {
        out.push_str(&line(r));
    }
    out
}

/// Nanoseconds since the epoch as RFC 3339 (UTC, milliseconds).
pub fn time_ns(ns: i64) -> String {
    chrono::DateTime::from_timestamp(
        ns.div_euclid(1_000_000_000),
        ns.rem_euclid(1_000_000_000) as u32,
    )
    .map(|t| t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string())
    .unwrap_or_else(|| ns.to_string())
}

fn cell(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => i.to_string(),
            (None, Some(f)) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{f:.0}"),
            (None, Some(f)) => format!("{f:.6}")
                .trim_end_matches('0')
                .trim_end_matches('.')
                .to_owned(),
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

/// A `{"columns": [...], "rows": [[...]]}` table; a `time` column is shown as RFC 3339, and
/// the `duration` column or an aggregate of it (`avg(duration)`, `quantile(0.99)(duration)`,
/// but not a `count`) in human units.
pub fn table(data: &Value) -> String {
    let header: Vec<String> = data["columns"]
        .as_array()
        .map(|c| c.iter().map(cell).collect())
        .unwrap_or_default();
    let time_col = header.iter().position(|h| h == "time");
    let is_duration =
        |h: &str| h == "duration" || (h.ends_with("(duration)") && !h.starts_with("count"));
    let rows: Vec<Vec<String>> = data["rows"]
        .as_array()
        .map(|rows| {
            rows.iter()
                .map(|r| {
                    r.as_array()
                        .map(|r| {
                            r.iter()
                                .enumerate()
                                .map(|(i, v)| match (Some(i) == time_col, v.as_i64()) {
                                    (true, Some(ns)) => time_ns(ns),
                                    _ if header.get(i).is_some_and(|h| is_duration(h)) => {
                                        v.as_f64().map_or_else(|| cell(v), duration)
                                    }
                                    _ => cell(v),
                                })
                                .collect()
                        })
                        .unwrap_or_default()
                })
                .collect()
        })
        .unwrap_or_default();
    let mut out = columns(&header, &rows);
    out.push_str(&format!("({} rows)", rows.len()));
    out
}

fn labels(metric: &Value) -> String {
    let Some(m) = metric.as_object() else {
        return "{}".into();
    };
    let name = m.get("__name__").and_then(Value::as_str).unwrap_or("");
    let rest: Vec<String> = m
        .iter()
        .filter(|(k, _)| *k != "__name__")
        .map(|(k, v)| format!("{k}={:?}", v.as_str().unwrap_or("")))
        .collect();
    format!("{name}{{{}}}", rest.join(", "))
}

fn sample_time(t: &Value) -> String {
    t.as_f64()
        .map(|s| time_ns((s * 1e9).round() as i64))
        .unwrap_or_default()
}

/// A Prometheus API answer (`{"status", "data": {"resultType", "result"}}`).
pub fn promql(v: &Value) -> String {
    let data = &v["data"];
    let result = &data["result"];
    let mut out = match data["resultType"].as_str() {
        Some("vector") => {
            let rows: Vec<Vec<String>> = result
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|s| {
                            vec![
                                labels(&s["metric"]),
                                sample_time(&s["value"][0]),
                                cell(&s["value"][1]),
                            ]
                        })
                        .collect()
                })
                .unwrap_or_default();
            columns(&["series".into(), "time".into(), "value".into()], &rows)
        }
        Some("matrix") => {
            let rows: Vec<Vec<String>> = result
                .as_array()
                .map(|a| {
                    a.iter()
                        .flat_map(|s| {
                            let name = labels(&s["metric"]);
                            s["values"]
                                .as_array()
                                .cloned()
                                .unwrap_or_default()
                                .into_iter()
                                .map(move |p| vec![name.clone(), sample_time(&p[0]), cell(&p[1])])
                        })
                        .collect()
                })
                .unwrap_or_default();
            columns(&["series".into(), "time".into(), "value".into()], &rows)
        }
        Some("scalar") | Some("string") => columns(
            &["time".into(), "value".into()],
            &[vec![sample_time(&result[0]), cell(&result[1])]],
        ),
        _ => v.to_string(),
    };
    if let Some(w) = v["warnings"].as_array() {
        for w in w {
            out.push_str(&format!("warning: {}\n", cell(w)));
        }
    }
    out.trim_end().to_owned()
}

fn ns(v: &Value) -> Option<i64> {
    v.as_i64()
        .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
}

fn millis(v: &Value) -> String {
    ns(v).map_or("-".into(), |d| duration(d as f64))
}

/// Nanoseconds in the unit a person reads them in: `850 µs`, `123.4 ms`, `4.47 s`, `2m 05s`,
/// `3h 07m`.
pub fn duration(ns: f64) -> String {
    let a = ns.abs();
    let sign = if ns < 0.0 { "-" } else { "" };
    if !a.is_finite() {
        return ns.to_string();
    }
    if a < 1e3 {
        format!("{sign}{a:.0} ns")
    } else if a < 1e6 {
        format!("{sign}{:.0} µs", a / 1e3)
    } else if a < 1e9 {
        format!("{sign}{:.1} ms", a / 1e6)
    } else if a < 60e9 {
        format!("{sign}{:.2} s", a / 1e9)
    } else {
        let secs = (a / 1e9).round() as u64;
        if secs < 3600 {
            format!("{sign}{}m {:02}s", secs / 60, secs % 60)
        } else {
            format!("{sign}{}h {:02}m", secs / 3600, (secs % 3600) / 60)
        }
    }
}

/// A trace (`/api/v1/traces/{id}`): spans as a tree in start order, `*` on the critical path.
pub fn trace(data: &Value) -> String {
    let spans = data["spans"].as_array().cloned().unwrap_or_default();
    let on_path: std::collections::HashSet<&str> = data["critical_path"]
        .as_array()
        .map(|a| a.iter().filter_map(|s| s["span_id"].as_str()).collect())
        .unwrap_or_default();
    let ids: std::collections::HashSet<&str> =
        spans.iter().filter_map(|s| s["span_id"].as_str()).collect();
    let t0 = spans
        .iter()
        .filter_map(|s| ns(&s["start_unix_nano"]))
        .min()
        .unwrap_or(0);
    let mut rows = Vec::new();
    // Depth-first from the roots (spans whose parent is absent), children in start order.
    let children = |parent: Option<&str>| -> Vec<&Value> {
        spans
            .iter()
            .filter(|s| {
                let p = s["parent_span_id"].as_str();
                match parent {
                    None => p.is_none_or(|p| !ids.contains(p)),
                    Some(id) => p == Some(id),
                }
            })
            .collect()
    };
    let mut stack: Vec<(&Value, usize)> =
        children(None).into_iter().rev().map(|s| (s, 0)).collect();
    let mut seen = std::collections::HashSet::new();
    while let Some((s, depth)) = stack.pop() {
        let id = s["span_id"].as_str().unwrap_or("");
        if !seen.insert(id) {
            continue;
        }
        let mark = if on_path.contains(id) { "*" } else { " " };
        let offset = ns(&s["start_unix_nano"]).map_or(0, |t| t - t0);
        rows.push(vec![
            format!(
                "{mark} {}{}",
                "  ".repeat(depth),
                s["name"].as_str().unwrap_or("")
            ),
            s["service_name"].as_str().unwrap_or("").to_owned(),
            format!("+{}", duration(offset as f64)),
            millis(&s["duration_nano"]),
            s["status"]["code"].as_str().unwrap_or("").to_owned(),
            id.to_owned(),
        ]);
        for c in children(Some(id)).into_iter().rev() {
            stack.push((c, depth + 1));
        }
    }
    let mut out = columns(
        &[
            "span".into(),
            "service".into(),
            "start".into(),
            "duration".into(),
            "status".into(),
            "span_id".into(),
        ],
        &rows,
    );
    out.push_str(&format!(
        "trace {} ({} spans; * = critical path)",
        data["trace_id"].as_str().unwrap_or(""),
        spans.len()
    ));
    out
}

/// A trace or span search (`/api/v1/traces/search`).
pub fn trace_search(data: &Value) -> String {
    if let Some(traces) = data["traces"].as_array() {
        let rows: Vec<Vec<String>> = traces
            .iter()
            .map(|t| {
                vec![
                    t["trace_id"].as_str().unwrap_or("").to_owned(),
                    ns(&t["start_unix_nano"]).map_or("-".into(), time_ns),
                    millis(&t["duration_nano"]),
                    t["root_service_name"].as_str().unwrap_or("").to_owned(),
                    t["root_span_name"].as_str().unwrap_or("").to_owned(),
                    cell(&t["span_count"]),
                    cell(&t["matched"]),
                ]
            })
            .collect();
        let mut out = columns(
            &[
                "trace_id".into(),
                "start".into(),
                "duration".into(),
                "root service".into(),
                "root span".into(),
                "spans".into(),
                "matched".into(),
            ],
            &rows,
        );
        out.push_str(&format!(
            "({} of {} traces)",
            rows.len(),
            cell(&data["total_traces"])
        ));
        out.push_str(&next_page(data, "remaining_traces", "traces"));
        return out;
    }
    let rows: Vec<Vec<String>> = data["spans"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|s| {
                    vec![
                        s["trace_id"].as_str().unwrap_or("").to_owned(),
                        ns(&s["start_unix_nano"]).map_or("-".into(), time_ns),
                        millis(&s["duration_nano"]),
                        s["service_name"].as_str().unwrap_or("").to_owned(),
                        s["name"].as_str().unwrap_or("").to_owned(),
                        s["status"].as_str().unwrap_or("").to_owned(),
                        s["model"].as_str().unwrap_or("-").to_owned(),
                    ]
                })
                .collect()
        })
        .unwrap_or_default();
    let mut out = columns(
        &[
            "trace_id".into(),
            "start".into(),
            "duration".into(),
            "service".into(),
            "span".into(),
            "status".into(),
            "model".into(),
        ],
        &rows,
    );
    out.push_str(&format!(
        "({} of {} spans)",
        rows.len(),
        cell(&data["total_matched"])
    ));
    out
}

/// A log search (`/api/v1/logs/search`).
pub fn logs(data: &Value) -> String {
    let rows: Vec<Vec<String>> = data["lines"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|l| {
                    let body = match &l["body"] {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    vec![
                        ns(&l["time_unix_nano"]).map_or("-".into(), time_ns),
                        l["severity_text"].as_str().unwrap_or("").to_owned(),
                        l["service_name"].as_str().unwrap_or("").to_owned(),
                        body.replace('\n', " "),
                    ]
                })
                .collect()
        })
        .unwrap_or_default();
    let mut out = columns(
        &[
            "time".into(),
            "severity".into(),
            "service".into(),
            "body".into(),
        ],
        &rows,
    );
    out.push_str(&format!(
        "({} of {} matching lines)",
        rows.len(),
        cell(&data["matched"])
    ));
    out.push_str(&next_page(data, "", "lines"));
    out
}

/// `" next page: --cursor C"` (with how many remain when `remaining` names a count), or
/// nothing on the last page.
fn next_page(data: &Value, remaining: &str, what: &str) -> String {
    match data["next_cursor"].as_str() {
        Some(c) if !remaining.is_empty() => format!(
            " {} more {what}; next page: --cursor {c}",
            cell(&data[remaining])
        ),
        Some(c) => format!(" next page: --cursor {c}"),
        None => String::new(),
    }
}

fn strings(v: &Value) -> String {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default()
}

fn num(v: &Value) -> String {
    v.as_f64().map_or_else(|| "-".into(), |x| format!("{x:.3}"))
}

/// `/api/v1/quality/provenance`: one row per scored answer.
pub fn provenance(v: &Value) -> String {
    let header: Vec<String> = [
        "time",
        "trace",
        "span",
        "model",
        "index",
        "label",
        "unsupported",
        "supporting",
        "documents",
    ]
    .map(String::from)
    .to_vec();
    let rows: Vec<Vec<String>> = v["answers"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|a| {
            vec![
                time_ns(a["time_ms"].as_i64().unwrap_or(0).saturating_mul(1_000_000)),
                a["trace_id"].as_str().unwrap_or("").to_owned(),
                a["span_id"].as_str().unwrap_or("").to_owned(),
                a["model"].as_str().unwrap_or("-").to_owned(),
                num(&a["hallucination_index"]),
                a["label"].as_str().unwrap_or("-").to_owned(),
                a["unsupported_sentences"].to_string(),
                strings(&a["supporting_documents"]),
                strings(&a["documents"]),
            ]
        })
        .collect();
    if rows.is_empty() {
        return "no scored answers in the range\n".into();
    }
    let mut out = columns(&header, &rows);
    // The sentences no passage supports, with the words and numbers no passage has.
    for a in v["answers"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
    {
        for s in a["sentences"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
        {
            let text = s["text"].as_str().unwrap_or("").trim();
            if s["supported"] == false && !text.is_empty() {
                let missing = strings(&s["missing"]);
                out.push_str(&format!(
                    "\n{} unsupported: \"{text}\"{}",
                    a["span_id"].as_str().unwrap_or(""),
                    if missing.is_empty() {
                        String::new()
                    } else {
                        format!(" (in no passage: {missing})")
                    }
                ));
            }
        }
    }
    out
}

/// `/api/v1/quality/provenance/groups`: one row per group.
pub fn provenance_groups(v: &Value) -> String {
    let header: Vec<String> = [
        "group",
        "answers",
        "with unsupported",
        "share",
        "unsupported sentences",
        "mean index",
    ]
    .map(String::from)
    .to_vec();
    let rows: Vec<Vec<String>> = v["groups"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|g| {
            let group = g["group"].as_str().unwrap_or("");
            vec![
                if group.is_empty() { "(none)" } else { group }.to_owned(),
                g["answers"].to_string(),
                g["answers_with_unsupported_sentences"].to_string(),
                num(&g["unsupported_share"]),
                g["unsupported_sentences"].to_string(),
                num(&g["mean_hallucination_index"]),
            ]
        })
        .collect();
    if rows.is_empty() {
        return "no scored answers in the range\n".into();
    }
    let mut out = columns(&header, &rows);
    // The sentences no passage supports, with the words and numbers no passage has.
    for a in v["answers"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
    {
        for s in a["sentences"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
        {
            let text = s["text"].as_str().unwrap_or("").trim();
            if s["supported"] == false && !text.is_empty() {
                let missing = strings(&s["missing"]);
                out.push_str(&format!(
                    "\n{} unsupported: \"{text}\"{}",
                    a["span_id"].as_str().unwrap_or(""),
                    if missing.is_empty() {
                        String::new()
                    } else {
                        format!(" (in no passage: {missing})")
                    }
                ));
            }
        }
    }
    out
}

/// `/api/v1/quality/documents`: usage per document, then the retrieval summary.
pub fn documents(v: &Value) -> String {
    let header: Vec<String> = [
        "document",
        "answers",
        "supporting",
        "sentences",
        "last used",
    ]
    .map(String::from)
    .to_vec();
    let rows: Vec<Vec<String>> = v["documents"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|d| {
            vec![
                d["document_id"].as_str().unwrap_or("").to_owned(),
                d["answers"].to_string(),
                d["supporting_answers"].to_string(),
                d["supported_sentences"].to_string(),
                time_ns(
                    d["last_used_ms"]
                        .as_i64()
                        .unwrap_or(0)
                        .saturating_mul(1_000_000),
                ),
            ]
        })
        .collect();
    let r = &v["retrieval"];
    let mut out = if rows.is_empty() {
        "no scored answers in the range\n".to_owned()
    } else {
        columns(&header, &rows)
    };
    out.push_str(&format!(
        "\n{} answers: {} documents retrieved and {} supporting per answer on average ({} of retrieved used); {} with unsupported sentences\n",
        r["answers"],
        num(&r["mean_documents"]),
        num(&r["mean_supporting_documents"]),
        num(&r["used_share"]),
        r["answers_with_unsupported_sentences"]
    ));
    let sc = &r["scores"];
    out.push_str(&format!(
        "{} retrievals: {} chunks each, {} used, on average; retriever scores of {} chunks: min {} median {} max {} (used chunks' median {}, unused {})\n",
        r["retrievals"],
        num(&r["mean_chunks_per_retrieval"]),
        num(&r["mean_chunks_used_per_retrieval"]),
        sc["count"],
        num(&sc["min"]),
        num(&sc["median"]),
        num(&sc["max"]),
        num(&r["used_scores"]["median"]),
        num(&r["unused_scores"]["median"]),
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn renders_tables_and_prometheus_answers() {
        let t = table(&json!({"columns": ["model", "time", "count"],
            "rows": [["gpt-4o", 1_780_272_000_000_000_000i64, 3], ["claude", 1_780_272_060_000_000_000i64, 12.5]]}));
        assert_eq!(
            t,
            "model   time                      count\ngpt-4o  2026-06-01T00:00:00.000Z  3\nclaude  2026-06-01T00:01:00.000Z  12.5\n(2 rows)"
        );
        let p = promql(
            &json!({"status": "success", "data": {"resultType": "scalar", "result": [4, "2"]}}),
        );
        assert_eq!(
            p,
            "time                      value\n1970-01-01T00:00:04.000Z  2"
        );
        let p = promql(
            &json!({"status": "success", "data": {"resultType": "vector",
            "result": [{"metric": {"__name__": "up", "job": "a"}, "value": [4.5, "1"]}]}}),
        );
        assert!(
            p.contains("up{job=\"a\"}  1970-01-01T00:00:04.500Z  1"),
            "{p}"
        );
    }

    #[test]
    fn durations_read_in_human_units() {
        let cases = [
            (0.0, "0 ns"),
            (999.0, "999 ns"),
            (850_000.0, "850 µs"),
            (123_449_000.0, "123.4 ms"),
            (4_466_000_000.0, "4.47 s"),
            (125e9, "2m 05s"),
            (3.0 * 3600e9 + 7.0 * 60e9, "3h 07m"),
            (-2e6, "-2.0 ms"),
        ];
        for (ns, want) in cases {
            assert_eq!(duration(ns), want, "{ns}");
        }
        let t = table(
            &json!({"columns": ["model", "count(duration)", "quantile(0.99)(duration)"],
            "rows": [["gpt-4o", 12, 2_843_112_004.0]]}),
        );
        assert!(t.contains("gpt-4o  12               2.84 s"), "{t}");
    }

    #[test]
    fn provenance_lists_each_unsupported_sentence() {
        let v = json!({"answers": [{
            "time_ms": 0, "trace_id": "t1", "span_id": "s1", "model": "gpt-4o",
            "hallucination_index": 0.7, "label": "high", "unsupported_sentences": 1,
            "supporting_documents": ["eiffel"], "documents": ["eiffel"],
            "sentences": [
                {"text": "The tower is 330 metres tall.", "supported": true, "missing": []},
                {"text": "Napoleon built it in Berlin.", "supported": false,
                 "missing": ["napoleon", "berlin"]}
            ]
        }]});
        let out = provenance(&v);
        assert!(
            out.contains(
                "s1 unsupported: \"Napoleon built it in Berlin.\" (in no passage: napoleon,berlin)"
            ),
            "{out}"
        );
        assert!(!out.contains("330 metres"), "{out}");
    }
}
