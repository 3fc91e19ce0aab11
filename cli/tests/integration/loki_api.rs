//! The Loki API and native log API against a real `sightline serve`, with logs ingested over
//! OTLP/HTTP, replaying the requests Grafana's Loki datasource sends: the health check, the log
//! panel's query_range, the log-volume histogram, the query builder's labels/values/series, and
//! index stats. Also tenant isolation and bad-query errors.

use crate::common::{ServerProcess, http};
use serde_json::{Value, json};

const NS: i64 = 1_000_000_000;

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64
}

fn enc(pairs: &[(&str, String)]) -> String {
    let mut s = form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        s.append_pair(k, v);
    }
    s.finish()
}

struct Fixture {
    server: ServerProcess,
    _dir: tempfile::TempDir,
    /// Times of the checkout lines (oldest first), their levels and bodies.
    checkout: Vec<(i64, &'static str, String)>,
    search_lines: usize,
    start: i64,
    end: i64,
}

impl Fixture {
    fn get(
        &self,
        tenant: &str,
        path: &str,
        pairs: &[(&str, String)],
    ) -> (u16, String, Option<String>) {
        let url = format!("{path}?{}", enc(pairs));
        let r = http(
            self.server.http,
            "GET",
            &url,
            &[("X-Scope-OrgID", tenant)],
            b"",
        )
        .unwrap();
        (
            r.status,
            r.text(),
            r.header("content-type").map(str::to_owned),
        )
    }

    fn get_json(&self, tenant: &str, path: &str, pairs: &[(&str, String)]) -> Value {
        let (status, body, _) = self.get(tenant, path, pairs);
        assert_eq!(status, 200, "{path} {pairs:?}: {body}");
        serde_json::from_str(&body).unwrap()
    }
}

fn attr(k: &str, v: &str) -> Value {
    json!({"key": k, "value": {"stringValue": v}})
}

fn post_logs(addr: std::net::SocketAddr, tenant: &str, body: &Value) {
    let r = http(
        addr,
        "POST",
        "/v1/logs",
        &[
            ("content-type", "application/json"),
            ("X-Scope-OrgID", tenant),
        ],
        body.to_string().as_bytes(),
    )
    .unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
}

fn start() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(&dir.path().join("data"), &[], dir.path().join("server.log"));
    let base = (now_ns() / (60 * NS) - 12) * 60 * NS; // 12 minutes ago, on a minute boundary
    let mut checkout = Vec::new();
    let mut records = Vec::new();
    for i in 0..60i64 {
        let t = base + i * 10 * NS + 1;
        let (level, sev) = if i % 4 == 0 {
            ("error", 17)
        } else {
            ("info", 9)
        };
        let text = if level == "error" { "timeout" } else { "ok" };
        let body = format!(
            "{{\"msg\":\"checkout {text} {i}\",\"status\":{},\"user\":\"u{}\"}}",
            if level == "error" { 504 } else { 200 },
            i % 3
        );
        checkout.push((t, level, body.clone()));
        records.push(json!({
            "timeUnixNano": t.to_string(),
            "severityNumber": sev,
            "severityText": level.to_uppercase(),
            "body": {"stringValue": body},
            "attributes": [attr("user.id", &format!("u{}", i % 3))],
            "traceId": if i == 7 { "5b8efff798038103d269b633813fc60c" } else { "" },
        }));
    }
    let search_lines = 20usize;
    let search_records: Vec<Value> = (0..search_lines as i64)
        .map(|i| {
            json!({
                "timeUnixNano": (base + i * 30 * NS + 5).to_string(),
                "severityNumber": 13,
                "severityText": "WARN",
                "body": {"stringValue": format!("slow retrieval {i}ms")},
            })
        })
        .collect();
    post_logs(
        server.http,
        "acme",
        &json!({"resourceLogs": [
            {"resource": {"attributes": [attr("service.name", "checkout"), attr("deployment.environment", "prod")]},
             "scopeLogs": [{"scope": {"name": "app"}, "logRecords": records}]},
            {"resource": {"attributes": [attr("service.name", "search")]},
             "scopeLogs": [{"logRecords": search_records}]},
        ]}),
    );
    post_logs(
        server.http,
        "other",
        &json!({"resourceLogs": [{"resource": {"attributes": [attr("service.name", "billing")]},
            "scopeLogs": [{"logRecords": [{"timeUnixNano": (base + NS).to_string(), "severityText": "INFO", "body": {"stringValue": "invoice sent"}}]}]}]}),
    );
    Fixture {
        server,
        _dir: dir,
        checkout,
        search_lines,
        start: base - 60 * NS,
        end: base + 11 * 60 * NS,
    }
}

#[test]
fn grafana_loki_datasource_requests() {
    let f = start();
    let (s, e) = (f.start.to_string(), f.end.to_string());

    // Health check (Save & test): instant query vector(1)+vector(1).
    let v = f.get_json(
        "acme",
        "/loki/api/v1/query",
        &[
            ("query", "vector(1)+vector(1)".into()),
            ("time", (f.end / NS).to_string()),
        ],
    );
    assert_eq!(v["status"], "success");
    assert_eq!(v["data"]["resultType"], "vector");
    assert_eq!(
        v["data"]["result"],
        json!([{"metric": {}, "value": [f.end / NS, "2"]}])
    );
    let v = f.get_json("acme", "/loki/api/v1/status/buildinfo", &[]);
    assert!(v["version"].as_str().unwrap().starts_with('3'));

    // Log panel: query_range, backward, limit 10.
    let v = f.get_json(
        "acme",
        "/loki/api/v1/query_range",
        &[
            ("direction", "backward".into()),
            ("limit", "10".into()),
            ("query", r#"{service_name="checkout"}"#.into()),
            ("start", s.clone()),
            ("end", e.clone()),
            ("step", "2000ms".into()),
        ],
    );
    assert_eq!(v["data"]["resultType"], "streams");
    let mut got: Vec<(i64, String, Value)> = Vec::new();
    for st in v["data"]["result"].as_array().unwrap() {
        let labels = &st["stream"];
        assert_eq!(labels["service_name"], "checkout");
        assert_eq!(labels["deployment_environment"], "prod");
        let vals = st["values"].as_array().unwrap();
        let times: Vec<i64> = vals
            .iter()
            .map(|x| x[0].as_str().unwrap().parse().unwrap())
            .collect();
        assert!(
            times.windows(2).all(|w| w[0] > w[1]),
            "each stream newest first"
        );
        for x in vals {
            got.push((
                x[0].as_str().unwrap().parse().unwrap(),
                x[1].as_str().unwrap().to_owned(),
                labels.clone(),
            ));
        }
    }
    got.sort_by_key(|g| std::cmp::Reverse(g.0));
    let want: Vec<&(i64, &str, String)> = f.checkout.iter().rev().take(10).collect();
    assert_eq!(got.len(), 10);
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g.0, w.0);
        assert_eq!(g.1, w.2);
        assert_eq!(g.2["level"], w.1);
        assert_eq!(
            g.2["user_id"].as_str().unwrap().len(),
            2,
            "structured metadata in labels"
        );
    }
    let summary = &v["data"]["stats"]["summary"];
    assert_eq!(summary["totalEntriesReturned"], 10);
    assert!(summary["execTime"].as_f64().is_some());

    // Forward: the oldest lines.
    let v = f.get_json(
        "acme",
        "/loki/api/v1/query_range",
        &[
            ("direction", "forward".into()),
            ("limit", "3".into()),
            ("query", r#"{service_name="checkout"} |= "checkout""#.into()),
            ("start", s.clone()),
            ("end", e.clone()),
        ],
    );
    let mut times: Vec<i64> = v["data"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|st| {
            st["values"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x[0].as_str().unwrap().parse::<i64>().unwrap())
                .collect::<Vec<_>>()
        })
        .collect();
    times.sort_unstable();
    assert_eq!(
        times,
        f.checkout.iter().take(3).map(|c| c.0).collect::<Vec<_>>()
    );

    // JSON parser and label filter: errors with status 504.
    let v = f.get_json(
        "acme",
        "/loki/api/v1/query_range",
        &[
            (
                "query",
                r#"{service_name="checkout"} | json | status >= 500 | __error__="""#.into(),
            ),
            ("start", s.clone()),
            ("end", e.clone()),
            ("limit", "1000".into()),
        ],
    );
    let n: usize = v["data"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|st| {
            assert_eq!(st["stream"]["status"], "504");
            st["values"].as_array().unwrap().len()
        })
        .sum();
    assert_eq!(n, f.checkout.iter().filter(|c| c.1 == "error").count());

    // Log volume (Explore's supplementary query), step 60s over [start, end].
    let v = f.get_json("acme", "/loki/api/v1/query_range", &[
        ("query", r#"sum by (level, detected_level) (count_over_time({service_name=~"checkout|search"} | drop __error__[1m]))"#.into()),
        ("start", s.clone()), ("end", e.clone()), ("step", "60".into()),
    ]);
    assert_eq!(v["data"]["resultType"], "matrix");
    let result = v["data"]["result"].as_array().unwrap();
    let mut by_level = std::collections::BTreeMap::new();
    for series in result {
        let level = series["metric"]["level"].as_str().unwrap().to_owned();
        assert_eq!(series["metric"].as_object().unwrap().len(), 1);
        let total: f64 = series["values"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                assert!(p[0].is_i64(), "step timestamps in whole seconds");
                p[1].as_str().unwrap().parse::<f64>().unwrap()
            })
            .sum();
        by_level.insert(level, total);
    }
    // Windows of 1m every 1m tile the range, so the sums are the line counts.
    let errors = f.checkout.iter().filter(|c| c.1 == "error").count() as f64;
    assert_eq!(by_level.get("error"), Some(&errors));
    assert_eq!(by_level.get("info"), Some(&(60.0 - errors)));
    assert_eq!(by_level.get("warn"), Some(&(f.search_lines as f64)));

    // Instant metric query with topk.
    let v = f.get_json(
        "acme",
        "/loki/api/v1/query",
        &[
            (
                "query",
                r#"topk(1, sum by (service_name) (count_over_time({service_name=~".+"}[1h])))"#
                    .into(),
            ),
            ("time", e.clone()),
        ],
    );
    assert_eq!(v["data"]["result"][0]["metric"]["service_name"], "checkout");
    assert_eq!(v["data"]["result"][0]["value"][1], "60");

    // Query builder: labels, label values, series.
    let v = f.get_json(
        "acme",
        "/loki/api/v1/labels",
        &[("start", s.clone()), ("end", e.clone())],
    );
    assert_eq!(
        v["data"],
        json!(["deployment_environment", "level", "service_name"])
    );
    let v = f.get_json(
        "acme",
        "/loki/api/v1/label/service_name/values",
        &[("start", s.clone()), ("end", e.clone())],
    );
    assert_eq!(v["data"], json!(["checkout", "search"]));
    let v = f.get_json(
        "acme",
        "/loki/api/v1/label/level/values",
        &[
            ("start", s.clone()),
            ("end", e.clone()),
            ("query", r#"{service_name="checkout"}"#.into()),
        ],
    );
    assert_eq!(v["data"], json!(["error", "info"]));
    let v = f.get_json(
        "acme",
        "/loki/api/v1/series",
        &[
            ("match[]", r#"{service_name="search"}"#.into()),
            ("start", s.clone()),
            ("end", e.clone()),
        ],
    );
    assert_eq!(
        v["data"],
        json!([{"level": "warn", "service_name": "search"}])
    );

    // Index stats and volume.
    let v = f.get_json(
        "acme",
        "/loki/api/v1/index/stats",
        &[
            ("query", r#"{service_name=~".+"}"#.into()),
            ("start", s.clone()),
            ("end", e.clone()),
        ],
    );
    assert_eq!(v["streams"], 3);
    assert_eq!(v["entries"], 60 + f.search_lines);
    let bytes: usize = f.checkout.iter().map(|c| c.2.len()).sum::<usize>()
        + (0..f.search_lines)
            .map(|i| format!("slow retrieval {i}ms").len())
            .sum::<usize>();
    assert_eq!(v["bytes"], bytes);
    assert!(v["chunks"].as_u64().unwrap() >= 1);
    let v = f.get_json(
        "acme",
        "/loki/api/v1/index/volume",
        &[
            ("query", r#"{service_name=~".+"}"#.into()),
            ("start", s.clone()),
            ("end", e.clone()),
        ],
    );
    assert_eq!(v["data"]["resultType"], "vector");
    assert_eq!(v["data"]["result"].as_array().unwrap().len(), 2);
    let v = f.get_json(
        "acme",
        "/loki/api/v1/detected_fields",
        &[
            ("query", r#"{service_name="checkout"}"#.into()),
            ("start", s.clone()),
            ("end", e.clone()),
        ],
    );
    let fields: Vec<&str> = v["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["label"].as_str().unwrap())
        .collect();
    assert!(
        fields.contains(&"user_id") && fields.contains(&"trace_id"),
        "{fields:?}"
    );
}

#[test]
fn tenants_errors_and_native_api() {
    let f = start();
    let (s, e) = (f.start.to_string(), f.end.to_string());

    // Tenant isolation.
    let v = f.get_json(
        "other",
        "/loki/api/v1/label/service_name/values",
        &[("start", s.clone()), ("end", e.clone())],
    );
    assert_eq!(v["data"], json!(["billing"]));
    let v = f.get_json(
        "other",
        "/loki/api/v1/query_range",
        &[
            ("query", r#"{service_name="checkout"}"#.into()),
            ("start", s.clone()),
            ("end", e.clone()),
        ],
    );
    assert_eq!(v["data"]["result"], json!([]));
    let v = f.get_json(
        "nobody",
        "/api/v1/logs/search",
        &[("start", s.clone()), ("end", e.clone())],
    );
    assert_eq!(v["data"]["lines"], json!([]));

    // Bad LogQL: 400, plain text, naming the problem.
    for (q, word) in [
        (r#"{service_name="checkout""#, "parse error"),
        (
            r#"{service_name="checkout"} | line_format "{{.msg}}""#,
            "line_format",
        ),
        (
            r#"quantile_over_time(0.99, {service_name="checkout"} | unwrap latency [5m])"#,
            "quantile_over_time",
        ),
        (r#"{service_name=~"("}"#, "regex"),
    ] {
        let (status, body, ct) = f.get(
            "acme",
            "/loki/api/v1/query_range",
            &[
                ("query", q.into()),
                ("start", s.clone()),
                ("end", e.clone()),
            ],
        );
        assert_eq!(status, 400, "{q}: {body}");
        assert!(body.contains(word), "{q}: {body}");
        assert!(ct.unwrap_or_default().starts_with("text/plain"));
    }
    let (status, body, _) = f.get(
        "acme",
        "/loki/api/v1/query",
        &[("query", r#"{service_name="checkout"}"#.into())],
    );
    assert_eq!(status, 400, "{body}");
    let (status, _, _) = f.get(
        "acme",
        "/loki/api/v1/query_range",
        &[
            ("query", r#"{a="b"}"#.into()),
            ("start", "yesterday".into()),
        ],
    );
    assert_eq!(status, 400);
    let (status, _, _) = f.get("acme", "/loki/api/v1/series", &[]);
    assert_eq!(status, 400);

    // Native search: full text + attribute filter, newest first, explain.
    let v = f.get_json(
        "acme",
        "/api/v1/logs/search",
        &[
            ("query", "timeout".into()),
            ("filter", r#"service.name="checkout""#.into()),
            ("filter", "user.id=~u0|u1".into()),
            ("start", s.clone()),
            ("end", e.clone()),
            ("limit", "5".into()),
            ("explain", "true".into()),
        ],
    );
    let want: Vec<&(i64, &str, String)> = f
        .checkout
        .iter()
        .rev()
        .filter(|c| c.1 == "error" && !c.2.contains("\"user\":\"u2\""))
        .collect();
    let lines = v["data"]["lines"].as_array().unwrap();
    assert_eq!(v["data"]["matched"], want.len());
    assert_eq!(lines.len(), 5.min(want.len()));
    for (l, w) in lines.iter().zip(&want) {
        assert_eq!(l["time_unix_nano"], w.0.to_string());
        assert_eq!(l["body"], w.2.as_str());
        assert_eq!(l["severity_text"], "ERROR");
    }
    assert!(v["data"]["explain"]["memtable_rows"].as_u64().is_some());

    // POST JSON: trace correlation and min severity.
    let r = http(
        f.server.http,
        "POST",
        "/api/v1/logs/search",
        &[
            ("content-type", "application/json"),
            ("X-Scope-OrgID", "acme"),
        ],
        json!({"trace_id": "5b8efff798038103d269b633813fc60c", "start": s, "end": e})
            .to_string()
            .as_bytes(),
    )
    .unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(v["data"]["lines"].as_array().unwrap().len(), 1);
    assert_eq!(
        v["data"]["lines"][0]["time_unix_nano"],
        f.checkout[7].0.to_string()
    );
    let r = http(f.server.http, "POST", "/api/v1/logs/search", &[("content-type", "application/json"), ("X-Scope-OrgID", "acme")],
        json!({"min_severity": "warn", "start": f.start, "end": f.end, "limit": 1000, "filter": [{"key": "service.name", "op": "!=", "value": "checkout"}]}).to_string().as_bytes()).unwrap();
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(v["data"]["matched"], f.search_lines);

    // Histogram grouped by severity: counts add up.
    let v = f.get_json(
        "acme",
        "/api/v1/logs/histogram",
        &[
            ("start", s.clone()),
            ("end", e.clone()),
            ("step", "1m".into()),
            ("group_by", "severity".into()),
        ],
    );
    let series = v["data"]["series"].as_array().unwrap();
    let total = |g: &str| {
        series
            .iter()
            .find(|x| x["group"] == g)
            .map(|x| x["total"].as_u64().unwrap())
    };
    let errors = f.checkout.iter().filter(|c| c.1 == "error").count() as u64;
    assert_eq!(total("error"), Some(errors));
    assert_eq!(total("info"), Some(60 - errors));
    assert_eq!(total("warn"), Some(f.search_lines as u64));
    assert_eq!(
        v["data"]["buckets"].as_array().unwrap().len(),
        series[0]["counts"].as_array().unwrap().len()
    );
    // Bad parameters: JSON error, 400.
    let (status, body, _) = f.get(
        "acme",
        "/api/v1/logs/search",
        &[("filter", "no-operator".into())],
    );
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("\"status\":\"error\""));
    let (status, _, _) = f.get(
        "acme",
        "/api/v1/logs/search",
        &[("query", "\"unclosed".into())],
    );
    assert_eq!(status, 400);
    f.server.stop();
}
