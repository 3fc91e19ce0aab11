//! A LogQL pipeline run on one line: line filters, the `json` and `logfmt` parsers, label
//! filters and `drop`/`keep`, over the line's labels.

use super::{LineOp, NumOp, Stage};
use crate::logs::labels::Labels;

/// Runs the pipeline on one line; `false` when a filter drops it.
pub(super) fn run_pipeline(stages: &[Stage], line: &str, labels: &mut Labels) -> bool {
    for s in stages {
        match s {
            Stage::Line { op, text, re } => {
                let ok = match op {
                    LineOp::Contains => line.contains(text.as_str()),
                    LineOp::NotContains => !line.contains(text.as_str()),
                    LineOp::Matches => re.as_ref().is_some_and(|r| r.is_match(line)),
                    LineOp::NotMatches => !re.as_ref().is_some_and(|r| r.is_match(line)),
                };
                if !ok {
                    return false;
                }
            }
            Stage::Json => parse_json(line, labels),
            Stage::Logfmt => parse_logfmt(line, labels),
            Stage::LabelMatch(m) => {
                if !m.matches(labels.get(&m.key).map_or("", String::as_str)) {
                    return false;
                }
            }
            Stage::LabelNum { name, op, value } => {
                let Some(v) = labels.get(name).and_then(|v| v.trim().parse::<f64>().ok()) else {
                    return false;
                };
                let ok = match op {
                    NumOp::Gt => v > *value,
                    NumOp::Ge => v >= *value,
                    NumOp::Lt => v < *value,
                    NumOp::Le => v <= *value,
                    NumOp::Eq => v == *value,
                    NumOp::Ne => v != *value,
                };
                if !ok {
                    return false;
                }
            }
            Stage::Drop(names) => {
                for n in names {
                    labels.remove(n);
                }
            }
            Stage::Keep(names) => labels.retain(|k, _| names.contains(k)),
        }
    }
    true
}

/// Adds a parsed label; a name already present gets the `_extracted` suffix (as in Loki).
fn add_parsed(labels: &mut Labels, key: &str, value: String) {
    let name = crate::logs::labels::sanitize_label_name(key);
    if name.is_empty() {
        return;
    }
    if labels.contains_key(&name) {
        labels.insert(format!("{name}_extracted"), value);
    } else {
        labels.insert(name, value);
    }
}

fn parse_json(line: &str, labels: &mut Labels) {
    match serde_json::from_str::<serde_json::Value>(line) {
        Ok(serde_json::Value::Object(map)) => {
            fn walk(prefix: &str, v: &serde_json::Value, labels: &mut Labels) {
                match v {
                    serde_json::Value::Object(m) => {
                        for (k, v) in m {
                            let key = if prefix.is_empty() {
                                k.clone()
                            } else {
                                format!("{prefix}_{k}")
                            };
                            walk(&key, v, labels);
                        }
                    }
                    serde_json::Value::Array(_) => {}
                    serde_json::Value::String(s) => add_parsed(labels, prefix, s.clone()),
                    serde_json::Value::Null => add_parsed(labels, prefix, String::new()),
                    other => add_parsed(labels, prefix, other.to_string()),
                }
            }
            for (k, v) in &map {
                walk(k, v, labels);
            }
        }
        _ => {
            labels.insert("__error__".into(), "JSONParserErr".into());
        }
    }
}

fn parse_logfmt(line: &str, labels: &mut Labels) {
    let mut rest = line.trim_start();
    while !rest.is_empty() {
        let key_end = rest
            .find(|c: char| c == '=' || c.is_whitespace())
            .unwrap_or(rest.len());
        let key = &rest[..key_end];
        rest = &rest[key_end..];
        let value = if let Some(r) = rest.strip_prefix('=') {
            if let Some(q) = r.strip_prefix('"') {
                let mut v = String::new();
                let mut chars = q.char_indices();
                let mut end = q.len();
                while let Some((i, c)) = chars.next() {
                    match c {
                        '\\' => {
                            if let Some((_, e)) = chars.next() {
                                v.push(match e {
                                    'n' => '\n',
                                    't' => '\t',
                                    other => other,
                                });
                            }
                        }
                        '"' => {
                            end = i + 1;
                            break;
                        }
                        c => v.push(c),
                    }
                }
                rest = &q[end.min(q.len())..];
                v
            } else {
                let e = r.find(char::is_whitespace).unwrap_or(r.len());
                rest = &r[e..];
                r[..e].to_owned()
            }
        } else {
            String::new()
        };
        if !key.is_empty() {
            add_parsed(labels, key, value);
        }
        rest = rest.trim_start();
    }
}
