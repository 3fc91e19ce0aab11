//! Prometheus names from OpenTelemetry metric names, units and attribute keys (see the
//! parent module's docs for the rules).

use sightline_storage::MetricKind;

pub(super) fn sanitize(name: &str, digit_prefix: &str) -> String {
    let mut out = String::with_capacity(name.len() + 1);
    for c in name.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '_' || c == ':' {
            c
        } else {
            '_'
        };
        if c == '_' && out.ends_with('_') {
            continue;
        }
        out.push(c);
    }
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert_str(0, digit_prefix);
    }
    out
}

/// A metric name sanitised by the Prometheus rules.
pub fn sanitize_metric_name(name: &str) -> String {
    sanitize(name, "_")
}

/// A label name sanitised by the Prometheus rules.
pub fn sanitize_label_name(name: &str) -> String {
    let s = sanitize(name, "key_");
    if s.is_empty() { "key_".into() } else { s }
}

fn unit_word(unit: &str) -> Option<&'static str> {
    Some(match unit {
        "d" => "days",
        "h" => "hours",
        "min" => "minutes",
        "s" => "seconds",
        "ms" => "milliseconds",
        "us" => "microseconds",
        "ns" => "nanoseconds",
        "By" => "bytes",
        "KiBy" => "kibibytes",
        "MiBy" => "mebibytes",
        "GiBy" => "gibibytes",
        "TiBy" => "tibibytes",
        "KBy" => "kilobytes",
        "MBy" => "megabytes",
        "GBy" => "gigabytes",
        "TBy" => "terabytes",
        "m" => "meters",
        "V" => "volts",
        "A" => "amperes",
        "J" => "joules",
        "W" => "watts",
        "g" => "grams",
        "Cel" => "celsius",
        "Hz" => "hertz",
        "%" => "percent",
        _ => return None,
    })
}

fn per_unit_word(unit: &str) -> Option<&'static str> {
    Some(match unit {
        "s" => "second",
        "m" => "minute",
        "h" => "hour",
        "d" => "day",
        "w" => "week",
        "mo" => "month",
        "y" => "year",
        _ => return None,
    })
}

/// The Prometheus unit suffix of a UCUM unit (`""` when none).
pub fn unit_suffix(unit: &str, is_gauge: bool) -> String {
    // Drop `{annotations}`.
    let mut clean = String::with_capacity(unit.len());
    let mut depth = 0u32;
    for c in unit.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            _ if depth == 0 => clean.push(c),
            _ => {}
        }
    }
    let clean = clean.trim();
    if clean == "1" {
        return if is_gauge {
            "ratio".into()
        } else {
            String::new()
        };
    }
    let word = |u: &str, per: bool| -> String {
        let w = if per { per_unit_word(u) } else { unit_word(u) };
        w.map(str::to_owned)
            .unwrap_or_else(|| sanitize(u, "").trim_matches('_').to_owned())
    };
    match clean.split_once('/') {
        Some((num, den)) => {
            let (n, d) = (word(num, false), word(den, true));
            match (n.is_empty(), d.is_empty()) {
                (_, true) => n,
                (true, false) => format!("per_{d}"),
                (false, false) => format!("{n}_per_{d}"),
            }
        }
        None => word(clean, false),
    }
}

/// The full Prometheus name of a metric (without `_bucket`/`_sum`/`_count`).
pub fn metric_name(name: &str, unit: &str, kind: MetricKind) -> String {
    let mut n = sanitize_metric_name(name);
    let suffix = unit_suffix(unit, kind == MetricKind::Gauge);
    if kind == MetricKind::Counter
        && let Some(stripped) = n.strip_suffix("_total")
    {
        n = stripped.to_owned();
    }
    if !suffix.is_empty() && !n.ends_with(&suffix) {
        if !n.ends_with('_') {
            n.push('_');
        }
        n.push_str(&suffix);
    }
    if kind == MetricKind::Counter {
        n.push_str("_total");
    }
    n
}

/// Formats a float as Prometheus label values do (`+Inf`, `-Inf`, `NaN`, shortest decimal).
pub fn format_float(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v == f64::INFINITY {
        "+Inf".into()
    } else if v == f64::NEG_INFINITY {
        "-Inf".into()
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_prometheus_rules() {
        assert_eq!(
            metric_name("http.server.duration", "s", MetricKind::Histogram),
            "http_server_duration_seconds"
        );
        assert_eq!(
            metric_name("requests", "1", MetricKind::Counter),
            "requests_total"
        );
        assert_eq!(
            metric_name("requests_total", "{request}", MetricKind::Counter),
            "requests_total"
        );
        assert_eq!(
            metric_name("cpu.utilization", "1", MetricKind::Gauge),
            "cpu_utilization_ratio"
        );
        assert_eq!(metric_name("mem", "By", MetricKind::Gauge), "mem_bytes");
        assert_eq!(
            metric_name("mem_bytes", "By", MetricKind::Gauge),
            "mem_bytes"
        );
        assert_eq!(
            metric_name("speed", "m/s", MetricKind::Gauge),
            "speed_meters_per_second"
        );
        assert_eq!(
            metric_name("2xx..count", "", MetricKind::Gauge),
            "_2xx_count"
        );
        assert_eq!(
            metric_name(
                "gen_ai.client.token.usage",
                "{token}",
                MetricKind::Histogram
            ),
            "gen_ai_client_token_usage"
        );
        assert_eq!(sanitize_label_name("http.method"), "http_method");
        assert_eq!(sanitize_label_name("1a"), "key_1a");
    }
}
