//! The Prometheus HTTP API as Grafana's built-in Prometheus datasource calls it, against a
//! real `sightline serve` holding data written over remote write and OTLP/HTTP: the health
//! check, buildinfo, panel range queries, variable queries, autocomplete (labels, label
//! values, series, metadata), error envelopes, auth and tenant isolation.

use crate::common::*;
use crate::prom_common::*;
use serde_json::{Value, json};

const STALE: u64 = 0x7ff0_0000_0000_0002;

/// Start of the data: 20 minutes ago, on a minute boundary; 41 samples 15 s apart.
fn base() -> i64 {
    (now_ms() / 60_000) * 60_000 - 20 * 60_000
}

fn counter(base: i64, start: f64) -> Vec<(i64, f64)> {
    (0..=40)
        .map(|i| (base + i * 15_000, start + 10.0 * i as f64))
        .collect()
}

fn seed(addr: std::net::SocketAddr, base: i64) {
    let ones: Vec<(i64, f64)> = (0..=40).map(|i| (base + i * 15_000, 1.0)).collect();
    let body = encode(
        vec![
            ts(
                &[
                    ("__name__", "http_requests_total"),
                    ("job", "api"),
                    ("instance", "a"),
                ],
                &counter(base, 1000.0),
            ),
            ts(
                &[
                    ("__name__", "http_requests_total"),
                    ("job", "api"),
                    ("instance", "b"),
                ],
                &counter(base, 2000.0),
            ),
            ts(
                &[("__name__", "up"), ("job", "api"), ("instance", "a")],
                &ones,
            ),
            ts(
                &[("__name__", "up"), ("job", "db"), ("instance", "c")],
                &ones,
            ),
        ],
        vec![meta("http_requests_total", 1, "Total HTTP requests.", "")],
    );
    let r = post_write(addr, &body, &[]);
    assert_eq!(r.status, 204, "{}", r.text());
    // Another tenant's data must stay invisible to the default tenant.
    let body = encode(
        vec![ts(
            &[("__name__", "secret_metric"), ("job", "hidden")],
            &[(base, 42.0)],
        )],
        vec![],
    );
    let r = post_write(addr, &body, &[("X-Scope-OrgID", "other")]);
    assert_eq!(r.status, 204, "{}", r.text());
    // An OTLP counter with description and unit, for metadata.
    let otlp = json!({"resourceMetrics": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "llm-gateway"}}]},
        "scopeMetrics": [{"metrics": [{
            "name": "llm.requests", "unit": "{request}", "description": "LLM requests",
            "sum": {"aggregationTemporality": 2, "isMonotonic": true, "dataPoints": [{
                "asInt": "5", "timeUnixNano": ((base + 600_000) * 1_000_000).to_string(),
                "attributes": [{"key": "model", "value": {"stringValue": "gpt"}}]
            }]}
        }]}]
    }]});
    let r = http(
        addr,
        "POST",
        "/v1/metrics",
        &[("Content-Type", "application/json")],
        otlp.to_string().as_bytes(),
    )
    .unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
}

fn assert_error(status: u16, v: &Value, want_status: u16, want_type: &str) {
    assert_eq!(status, want_status, "{v}");
    assert_eq!(v["status"], "error", "{v}");
    assert_eq!(v["errorType"], want_type, "{v}");
    assert!(!v["error"].as_str().unwrap_or("").is_empty(), "{v}");
}

#[test]
fn grafana_datasource_requests() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(
        &dir.path().join("data"),
        &["--fsync", "never"],
        dir.path().join("log"),
    );
    let addr = server.http;
    let base = base();
    seed(addr, base);

    // Health check: exactly what Grafana sends and expects.
    let r = http(
        addr,
        "POST",
        "/api/v1/query",
        &[("Content-Type", "application/x-www-form-urlencoded")],
        b"query=1%2B1&time=4",
    )
    .unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(
        r.text(),
        r#"{"status":"success","data":{"resultType":"scalar","result":[4,"2"]}}"#
    );
    // The same as GET.
    let (s, v) = get_json(
        addr,
        "/api/v1/query",
        &[("query", "1+1"), ("time", "4")],
        &[],
    );
    assert_eq!((s, &v["data"]["result"]), (200, &json!([4, "2"])));

    // Build info: Prometheus' shape without `features` (Grafana: plain Prometheus).
    let (s, v) = get_json(addr, "/api/v1/status/buildinfo", &[], &[]);
    assert_eq!(s, 200);
    assert_eq!(v["status"], "success");
    let version = v["data"]["version"].as_str().unwrap();
    let parts: Vec<u32> = version.split('.').map(|p| p.parse().unwrap()).collect();
    assert!(parts[0] == 2 && parts[1] >= 24, "{version}");
    assert!(v["data"].get("features").is_none());
    let (s, v) = get_json(addr, "/api/v1/status/runtimeinfo", &[], &[]);
    assert_eq!((s, &v["status"]), (200, &json!("success")));

    // A panel's range query, as Grafana POSTs it (fractional seconds, float step, timeout).
    let (start, end) = (base + 300_000, base + 600_000);
    let (s, v) = post_json(
        addr,
        "/api/v1/query_range",
        &[
            ("query", "http_requests_total"),
            ("start", &secs(start)),
            ("end", &secs(end)),
            ("step", "15"),
            ("timeout", "30s"),
        ],
        &[],
    );
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["data"]["resultType"], "matrix");
    let got = points(&v);
    assert_eq!(got.len(), 2);
    for (labels, pts) in &got {
        let (inst, first) = match labels["instance"].as_str().unwrap() {
            "a" => ("a", 1000.0),
            _ => ("b", 2000.0),
        };
        assert_eq!(
            labels,
            &json!({"__name__": "http_requests_total", "instance": inst, "job": "api"})
        );
        let want: Vec<(i64, String)> = (20..=40)
            .map(|i| (base + i * 15_000, format!("{}", first + 10.0 * i as f64)))
            .collect();
        assert_eq!(pts, &want);
    }
    // Rate: 10 per 15 s per instance, summed over two instances.
    let (s, v) = post_json(
        addr,
        "/api/v1/query_range",
        &[
            ("query", "sum by (job) (rate(http_requests_total[1m]))"),
            ("start", &secs(start)),
            ("end", &secs(end)),
            ("step", "1m"),
        ],
        &[],
    );
    assert_eq!(s, 200, "{v}");
    let got = points(&v);
    assert_eq!(got.len(), 1, "{v}");
    assert_eq!(got[0].0, json!({"job": "api"}));
    assert_eq!(got[0].1.len(), 6);
    for (_, val) in &got[0].1 {
        let x: f64 = val.parse().unwrap();
        assert!((x - 4.0 / 3.0).abs() < 1e-9, "{val}");
    }

    // Instant vector, special floats, strings.
    let (s, v) = get_json(
        addr,
        "/api/v1/query",
        &[("query", "up"), ("time", &secs(end))],
        &[],
    );
    assert_eq!(s, 200);
    assert_eq!(v["data"]["resultType"], "vector");
    let got = points(&v);
    assert_eq!(got.len(), 2);
    assert!(got.iter().all(|(_, p)| p == &vec![(end, "1".to_owned())]));
    for (q, want) in [("1/0", "+Inf"), ("-1/0", "-Inf"), ("0/0", "NaN")] {
        let (s, v) = get_json(
            addr,
            "/api/v1/query",
            &[("query", q), ("time", "10.5")],
            &[],
        );
        assert_eq!(s, 200, "{v}");
        assert_eq!(v["data"]["result"], json!([10.5, want]), "{q}");
    }
    let (_, v) = get_json(
        addr,
        "/api/v1/query",
        &[("query", "up{job=\"db\"} / 0"), ("time", &secs(end))],
        &[],
    );
    assert_eq!(v["data"]["result"][0]["value"][1], "+Inf", "{v}");
    let (_, v) = get_json(
        addr,
        "/api/v1/query",
        &[("query", "\"hello\""), ("time", "2015-07-01T20:10:51.781Z")],
        &[],
    );
    assert_eq!(
        v["data"],
        json!({"resultType": "string", "result": [1435781451.781, "hello"]})
    );
    // Exemplars: none kept, the call must still succeed.
    let (s, v) = post_json(
        addr,
        "/api/v1/query_exemplars",
        &[
            ("query", "http_requests_total"),
            ("start", &secs(start)),
            ("end", &secs(end)),
        ],
        &[],
    );
    assert_eq!((s, &v["data"]), (200, &json!([])));

    // Variable queries: label_values(job), label_values(up, job).
    let range = [("start", secs(base)), ("end", secs(end))];
    let with = |extra: &[(&'static str, &'static str)]| {
        let mut p: Vec<(&str, &str)> = range.iter().map(|(k, v)| (*k, v.as_str())).collect();
        p.extend_from_slice(extra);
        p
    };
    let (s, v) = get_json(addr, "/api/v1/label/job/values", &with(&[]), &[]);
    assert_eq!(s, 200, "{v}");
    assert_eq!(data_strings(&v), ["api", "db", "llm-gateway"]);
    let (_, v) = get_json(
        addr,
        "/api/v1/label/job/values",
        &with(&[("match[]", "up")]),
        &[],
    );
    assert_eq!(data_strings(&v), ["api", "db"]);
    let (_, v) = get_json(
        addr,
        "/api/v1/label/instance/values",
        &with(&[("match[]", "up"), ("match[]", "http_requests_total")]),
        &[],
    );
    assert_eq!(data_strings(&v), ["a", "b", "c"]);
    // Metric names (autocomplete), with Grafana's limit; and a limit that cuts.
    let (_, v) = get_json(
        addr,
        "/api/v1/label/__name__/values",
        &with(&[("limit", "40000")]),
        &[],
    );
    assert_eq!(
        data_strings(&v),
        ["http_requests_total", "llm_requests_total", "up"]
    );
    assert!(v.get("warnings").is_none());
    let (_, v) = get_json(
        addr,
        "/api/v1/label/__name__/values",
        &with(&[("limit", "1")]),
        &[],
    );
    assert_eq!(data_strings(&v).len(), 1);
    assert_eq!(v["warnings"], json!(["results truncated due to limit"]));
    // Outside the data's time range there is nothing.
    let (_, v) = get_json(
        addr,
        "/api/v1/label/job/values",
        &[("start", "1000"), ("end", "2000")],
        &[],
    );
    assert_eq!(data_strings(&v), Vec::<String>::new());

    // Labels (POST, as the query builder sends it).
    let (s, v) = post_json(addr, "/api/v1/labels", &with(&[]), &[]);
    assert_eq!(s, 200, "{v}");
    assert_eq!(data_strings(&v), ["__name__", "instance", "job", "model"]);
    let (_, v) = post_json(
        addr,
        "/api/v1/labels",
        &with(&[("match[]", "up{job=\"db\"}")]),
        &[],
    );
    assert_eq!(data_strings(&v), ["__name__", "instance", "job"]);

    // Series: the metrics browser's match-all selector and a narrow one.
    let (s, v) = get_json(
        addr,
        "/api/v1/series",
        &with(&[("match[]", "{__name__!=\"\"}"), ("limit", "40000")]),
        &[],
    );
    assert_eq!(s, 200, "{v}");
    let names: Vec<&str> = v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["__name__"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "http_requests_total",
            "http_requests_total",
            "llm_requests_total",
            "up",
            "up"
        ]
    );
    let (_, v) = get_json(
        addr,
        "/api/v1/series",
        &with(&[("match[]", "up{instance=~\"c|d\"}")]),
        &[],
    );
    assert_eq!(
        v["data"],
        json!([{"__name__": "up", "instance": "c", "job": "db"}])
    );

    // Metadata: from remote-write metadata, from OTLP, and a guess.
    let (s, v) = get_json(addr, "/api/v1/metadata", &[], &[]);
    assert_eq!(s, 200, "{v}");
    assert_eq!(
        v["data"]["http_requests_total"],
        json!([{"type": "counter", "help": "Total HTTP requests.", "unit": ""}])
    );
    assert_eq!(
        v["data"]["llm_requests_total"],
        json!([{"type": "counter", "help": "LLM requests", "unit": ""}])
    );
    assert_eq!(v["data"]["up"][0]["type"], "unknown");
    let (_, v) = get_json(addr, "/api/v1/metadata", &[("metric", "up")], &[]);
    assert_eq!(v["data"].as_object().unwrap().len(), 1);
    let (_, v) = get_json(addr, "/api/v1/metadata", &[("limit", "2")], &[]);
    assert_eq!(v["data"].as_object().unwrap().len(), 2);

    // Rules and alerts: empty, not 404 (Grafana's alerting UI asks).
    let (s, v) = get_json(addr, "/api/v1/rules", &[], &[]);
    assert_eq!((s, &v["data"]), (200, &json!({"groups": []})));

    // Errors.
    let (s, v) = post_json(addr, "/api/v1/query", &[("query", "sum(")], &[]);
    assert_error(s, &v, 400, "bad_data");
    assert!(v["error"].as_str().unwrap().contains("query"), "{v}");
    let (s, v) = get_json(
        addr,
        "/api/v1/query",
        &[("query", "up"), ("time", "yesterday")],
        &[],
    );
    assert_error(s, &v, 400, "bad_data");
    assert!(v["error"].as_str().unwrap().contains("\"time\""), "{v}");
    for params in [
        vec![("query", "up"), ("start", "1"), ("end", "100")],
        vec![
            ("query", "up"),
            ("start", "1"),
            ("end", "100"),
            ("step", "0"),
        ],
        vec![("query", "up"), ("end", "100"), ("step", "1")],
        vec![
            ("query", "up"),
            ("start", "100"),
            ("end", "1"),
            ("step", "1"),
        ],
        vec![
            ("query", "up"),
            ("start", "0"),
            ("end", "1000000"),
            ("step", "1"),
        ],
        vec![
            ("query", "up"),
            ("start", "1"),
            ("end", "9"),
            ("step", "1x"),
        ],
    ] {
        let (s, v) = get_json(addr, "/api/v1/query_range", &params, &[]);
        assert_error(s, &v, 400, "bad_data");
    }
    let (s, v) = get_json(addr, "/api/v1/series", &with(&[]), &[]);
    assert_error(s, &v, 400, "bad_data");
    let (s, v) = get_json(addr, "/api/v1/series", &[("match[]", "rate(up[1m])")], &[]);
    assert_error(s, &v, 400, "bad_data");
    let (s, v) = get_json(addr, "/api/v1/label/bad-name/values", &[], &[]);
    assert_error(s, &v, 400, "bad_data");
    let (s, v) = get_json(
        addr,
        "/api/v1/query",
        &[("query", "up"), ("timeout", "soon")],
        &[],
    );
    assert_error(s, &v, 400, "bad_data");
    // Many-to-one without group_left: Prometheus' execution error.
    let (s, v) = get_json(
        addr,
        "/api/v1/query",
        &[
            ("query", "up + on(job) http_requests_total"),
            ("time", &secs(end)),
        ],
        &[],
    );
    assert_error(s, &v, 422, "execution");
    // `rate` drops `__name__`, and `up` and `http_requests_total` share {job="api",
    // instance="a"}: Prometheus refuses the duplicate label set instead of answering it twice,
    // and so must an enclosing `sum by (__name__)` (it would add the two metrics together).
    for q in [
        r#"rate({__name__=~"up|http_requests_total"}[5m])"#,
        r#"sum by (__name__) (rate({__name__=~"up|http_requests_total"}[5m]))"#,
    ] {
        let (s, v) = get_json(
            addr,
            "/api/v1/query",
            &[("query", q), ("time", &secs(end))],
            &[],
        );
        assert_error(s, &v, 422, "execution");
        assert_eq!(
            v["error"],
            r#"vector cannot contain metrics with the same labelset {instance="a", job="api"}"#,
            "{q}"
        );
        let (s, v) = get_json(
            addr,
            "/api/v1/query_range",
            &[
                ("query", q),
                ("start", &secs(base + 300_000)),
                ("end", &secs(end)),
                ("step", "60"),
            ],
            &[],
        );
        assert_error(s, &v, 422, "execution");
    }
    // Where the other labels still tell the metrics apart, the same query answers.
    let (s, v) = get_json(
        addr,
        "/api/v1/query",
        &[
            (
                "query",
                r#"rate({__name__=~"up|http_requests_total", instance!="a"}[5m])"#,
            ),
            ("time", &secs(end)),
        ],
        &[],
    );
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["data"]["result"].as_array().map(Vec::len), Some(2), "{v}");

    // Tenants: the other tenant's series are invisible here and visible there.
    let (_, v) = get_json(
        addr,
        "/api/v1/query",
        &[("query", "secret_metric"), ("time", &secs(base))],
        &[],
    );
    assert_eq!(v["data"]["result"], json!([]));
    let other = [("X-Scope-OrgID", "other")];
    let (_, v) = get_json(
        addr,
        "/api/v1/query",
        &[("query", "secret_metric"), ("time", &secs(base))],
        &other,
    );
    assert_eq!(v["data"]["result"][0]["value"], json!([base / 1000, "42"]));
    let (_, v) = get_json(addr, "/api/v1/label/__name__/values", &[], &other);
    assert_eq!(data_strings(&v), ["secret_metric"]);
    let (_, v) = get_json(addr, "/api/v1/labels", &[], &other);
    assert_eq!(data_strings(&v), ["__name__", "job"]);
    let (s, v) = get_json(
        addr,
        "/api/v1/query",
        &[("query", "up")],
        &[("X-Scope-OrgID", "bad tenant!")],
    );
    assert_error(s, &v, 400, "bad_data");

    server.stop();
}

#[test]
fn staleness_marker_ends_a_series() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(
        &dir.path().join("data"),
        &["--fsync", "never"],
        dir.path().join("log"),
    );
    let addr = server.http;
    let t0 = (now_ms() / 1000) * 1000 - 120_000;
    let body = encode(
        vec![ts(
            &[("__name__", "gone"), ("job", "x")],
            &[
                (t0, 1.0),
                (t0 + 10_000, 2.0),
                (t0 + 20_000, f64::from_bits(STALE)),
            ],
        )],
        vec![],
    );
    assert_eq!(post_write(addr, &body, &[]).status, 204);
    let at = |t: i64| {
        let (s, v) = get_json(
            addr,
            "/api/v1/query",
            &[("query", "gone"), ("time", &secs(t))],
            &[],
        );
        assert_eq!(s, 200, "{v}");
        points(&v)
    };
    assert_eq!(at(t0 + 15_000)[0].1, vec![(t0 + 15_000, "2".to_owned())]);
    assert!(at(t0 + 25_000).is_empty());
    // The marker itself is kept bit for bit.
    let (_, v) = get_json(
        addr,
        "/api/v1/query",
        &[
            ("query", "count_over_time(gone[1m])"),
            ("time", &secs(t0 + 30_000)),
        ],
        &[],
    );
    assert_eq!(v["data"]["result"][0]["value"][1], "2", "{v}");
    server.stop();
    let store = open_store(&dir.path().join("data"));
    let samples = all_samples(&store, &tenant("default"));
    assert_eq!(samples.len(), 3);
    assert!(samples.iter().any(|(_, _, v)| v.to_bits() == STALE));
}

#[test]
fn bearer_tokens_pick_the_tenant() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, "tok-a alpha\ntok-b beta\n").unwrap();
    let server = ServerProcess::start(
        &dir.path().join("data"),
        &[
            "--fsync",
            "never",
            "--auth-tokens-file",
            tokens.to_str().unwrap(),
        ],
        dir.path().join("log"),
    );
    let addr = server.http;
    let t = now_ms() - 60_000;
    let body = encode(vec![ts(&[("__name__", "alpha_only")], &[(t, 7.0)])], vec![]);
    let r = post_write(addr, &body, &[("Authorization", "Bearer nope")]);
    assert_eq!(r.status, 401, "{}", r.text());
    let r = post_write(addr, &body, &[("Authorization", "Bearer tok-a")]);
    assert_eq!(r.status, 204, "{}", r.text());

    let q = [("query", "alpha_only"), ("time", &secs(t))];
    for headers in [
        vec![],
        vec![("Authorization", "Bearer wrong")],
        vec![("X-Scope-OrgID", "alpha")],
    ] {
        let (s, v) = get_json(addr, "/api/v1/query", &q, &headers);
        assert_error(s, &v, 401, "unauthorized");
        let (s, v) = get_json(addr, "/api/v1/labels", &[], &headers);
        assert_error(s, &v, 401, "unauthorized");
    }
    let (s, v) = get_json(
        addr,
        "/api/v1/query",
        &q,
        &[("Authorization", "Bearer tok-a")],
    );
    assert_eq!(s, 200);
    assert_eq!(v["data"]["result"][0]["value"][1], "7");
    let (s, v) = get_json(
        addr,
        "/api/v1/query",
        &q,
        &[("Authorization", "Bearer tok-b")],
    );
    assert_eq!((s, &v["data"]["result"]), (200, &json!([])));
    let (_, v) = get_json(
        addr,
        "/api/v1/label/__name__/values",
        &[],
        &[("Authorization", "Bearer tok-b")],
    );
    assert_eq!(data_strings(&v), Vec::<String>::new());
    server.stop();
}

/// A counter of `sightline_query_cache_*` on `/metrics`.
fn cache_counter(addr: std::net::SocketAddr, name: &str) -> u64 {
    let text = http(addr, "GET", "/metrics", &[], b"").unwrap().text();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .unwrap_or_else(|| panic!("{name} missing from /metrics"))
        .parse()
        .unwrap()
}

/// A dashboard panel refreshing: the moved window is answered from the query cache, a late
/// sample inside the cached steps shows in the next answer, and `nocache=1` bypasses the cache.
#[test]
fn dashboard_refresh_is_cached_and_sees_late_samples() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(
        &dir.path().join("data"),
        &["--fsync", "never"],
        dir.path().join("log"),
    );
    let addr = server.http;
    let t0 = (now_ms() / 60_000) * 60_000 - 3 * 3_600_000;
    let series = |job: &str| {
        let pts: Vec<(i64, f64)> = (0..720)
            .map(|i| (t0 + i * 10_000, 5.0 * i as f64))
            .collect();
        ts(&[("__name__", "reqs_total"), ("job", job)], &pts)
    };
    let body = encode(vec![series("a"), series("b")], vec![]);
    assert_eq!(post_write(addr, &body, &[]).status, 204);
    let q = "sum by (job) (rate(reqs_total[5m]))";
    let range = |shift: i64, extra: &[(&str, &str)]| {
        let (start, end) = (secs(t0 + 1_800_000 + shift), secs(t0 + 5_400_000 + shift));
        let mut p = vec![
            ("query", q),
            ("start", &start),
            ("end", &end),
            ("step", "60"),
        ];
        p.extend_from_slice(extra);
        let (s, v) = get_json(addr, "/api/v1/query_range", &p, &[]);
        assert_eq!(s, 200, "{v}");
        points(&v)
    };
    let first = range(0, &[]);
    assert_eq!(first.len(), 2);
    assert_eq!(first[0].1.len(), 61);
    let served = cache_counter(addr, "sightline_query_cache_steps_served_total");
    let moved = range(60_000, &[]);
    assert_eq!(moved, range(60_000, &[("nocache", "1")]));
    assert_eq!(cache_counter(addr, "sightline_query_cache_hits_total"), 1);
    assert_eq!(
        cache_counter(addr, "sightline_query_cache_steps_served_total") - served,
        60
    );
    // A late sample resets job a's counter an hour into the data: cached steps after it go.
    let late = encode(
        vec![ts(
            &[("__name__", "reqs_total"), ("job", "a")],
            &[(t0 + 3_600_000 + 5_000, 0.0)],
        )],
        vec![],
    );
    assert_eq!(post_write(addr, &late, &[]).status, 204);
    assert!(cache_counter(addr, "sightline_query_cache_invalidations_total") >= 1);
    let after = range(60_000, &[]);
    assert_ne!(after, moved);
    assert_eq!(after, range(60_000, &[("nocache", "1")]));
    server.stop();
}
