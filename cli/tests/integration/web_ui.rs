//! The built-in web UI in a real browser: headless Chromium ([`super::browser`]) on the pages
//! `sightline demo` and `sightline serve` answer at `/`. What the page shows is compared with
//! what the JSON APIs answer for the same trace: one waterfall row per span with its nesting,
//! the critical path marked, tokens coloured by their stored entropy; and with auth on, the
//! token prompt, a wrong token refused, and another tenant's data never shown.
//!
//! Screenshots of each view go to `$SIGHTLINE_SCREENSHOTS` (default
//! `target/tmp/ui-screenshots`). Skipped when Chromium or its driver is missing, unless
//! `SIGHTLINE_REQUIRE_BROWSER=1` (the test command sets it and installs both).

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::browser::{Browser, installed};
use super::common::{ServerProcess, http};
use super::demo::Demo;
use super::llm_clients::{chat_span, retriever_span};

fn browser_or_skip() -> Option<(PathBuf, PathBuf)> {
    let found = installed();
    if found.is_none() {
        assert!(
            std::env::var("SIGHTLINE_REQUIRE_BROWSER").as_deref() != Ok("1"),
            "SIGHTLINE_REQUIRE_BROWSER=1 but chromium or chromedriver is missing"
        );
        eprintln!("\n*** SKIPPED: the web UI tests need chromium and chromium-driver ***\n");
    }
    found
}

fn shots() -> PathBuf {
    std::env::var_os("SIGHTLINE_SCREENSHOTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("ui-screenshots"))
}

fn get(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> Value {
    let r = http(addr, "GET", path, headers, b"").unwrap();
    assert_eq!(
        r.status,
        200,
        "GET {path}: {}",
        String::from_utf8_lossy(&r.body)
    );
    serde_json::from_slice(&r.body).unwrap()
}

/// Exports an OTLP/JSON trace request (with a bearer token when given); it must be accepted.
fn export(addr: SocketAddr, token: Option<&str>, body: &[u8]) {
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![("content-type", "application/json")];
    if let Some(a) = &auth {
        headers.push(("authorization", a.as_str()));
    }
    let r = http(addr, "POST", "/v1/traces", &headers, body).unwrap();
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
}

/// Nesting depth of every span (roots, and spans whose parent is absent, at 0).
fn depths(spans: &[Value]) -> HashMap<String, u64> {
    let parent: HashMap<String, String> = spans
        .iter()
        .filter_map(|s| {
            Some((
                s["span_id"].as_str()?.to_owned(),
                s["parent_span_id"].as_str().unwrap_or("").to_owned(),
            ))
        })
        .collect();
    parent
        .keys()
        .map(|id| {
            let (mut d, mut cur) = (0, id.clone());
            while let Some(p) = parent.get(&cur).filter(|p| parent.contains_key(*p)) {
                d += 1;
                cur = p.clone();
                assert!(d <= spans.len() as u64, "parent cycle");
            }
            (id.clone(), d)
        })
        .collect()
}

/// How far a CSS colour is from white, weighted by its alpha (0: white or transparent).
fn intensity(css: &str) -> f64 {
    let nums: Vec<f64> = css
        .trim_start_matches("rgba(")
        .trim_start_matches("rgb(")
        .trim_end_matches(')')
        .split(',')
        .filter_map(|x| x.trim().parse().ok())
        .collect();
    match nums.as_slice() {
        [r, g, b] => (765.0 - r - g - b) / 765.0,
        [r, g, b, a] => a * (765.0 - r - g - b) / 765.0,
        _ => panic!("unexpected colour {css:?}"),
    }
}

#[test]
fn trace_view_shows_the_stored_trace_with_its_tokens() {
    let Some((chromium, driver)) = browser_or_skip() else {
        return;
    };
    let mut demo = Demo::start(&["--days", "0.25", "--seed", "11"]);
    demo.wait_for_analysis();
    let base = format!("http://{}/", demo.http_addr);
    let b = Browser::start(&chromium, &driver, &shots());

    // The trace list.
    b.open(&format!("{base}#/traces?since=6h&model=gpt-4o"));
    // The demo keeps sending live traffic: the newest traces may not be evaluated yet when
    // the list is drawn, so take a trace whose row already shows an index.
    let ids = b.wait_for(
        "trace rows with a hallucination index",
        "const r = [...document.querySelectorAll('[data-testid=trace-row]')].filter(r => r.dataset.hallucination !== '');
         return r.length ? r.map(r => r.dataset.traceId) : null",
    );
    b.screenshot("traces");
    let trace_id = ids[0].as_str().unwrap().to_owned();
    assert_eq!(trace_id.len(), 32, "{ids}");

    // The waterfall against the API's answer for the same trace.
    let api = get(demo.http_addr, &format!("/api/v1/traces/{trace_id}"), &[]);
    let spans = api["data"]["spans"].as_array().unwrap().clone();

    // The list's totals are the whole trace's: tokens summed, the worst hallucination index.
    let sum = |k: &str| -> i64 { spans.iter().filter_map(|s| s["gen_ai"][k].as_i64()).sum() };
    let worst = spans
        .iter()
        .filter_map(|s| s["quality"]["hallucination_index"].as_f64())
        .fold(f64::NAN, f64::max);
    let row = b.eval(&format!(
        "const r = document.querySelector(\"[data-testid=trace-row][data-trace-id='{trace_id}']\");
         return [r.dataset.hallucination, r.querySelector('[data-testid=trace-tokens]').innerText]"
    ));
    let shown_worst: f64 = row[0].as_str().unwrap().parse().unwrap();
    assert!((shown_worst - worst).abs() < 1e-9, "{row} vs {worst}");
    assert_eq!(
        row[1].as_str().unwrap().replace(',', ""),
        format!("{} / {}", sum("input_tokens"), sum("output_tokens")),
        "{row}"
    );
    let critical: HashSet<String> = api["data"]["critical_path"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["span_id"].as_str().unwrap().to_owned())
        .collect();
    assert!(!critical.is_empty());
    b.click(&format!("[data-trace-id='{trace_id}']"));
    let rows = b.wait_for(
        "waterfall rows",
        &format!(
            "const r = [...document.querySelectorAll('[data-testid=span-row]')];
             if (r.length < {}) return null;
             return r.map(e => [e.dataset.spanId, Number(e.dataset.depth), e.dataset.critical === 'true'])",
            spans.len()
        ),
    );
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), spans.len(), "one row per span");
    let want_depth = depths(&spans);
    for r in rows {
        let id = r[0].as_str().unwrap();
        assert_eq!(r[1].as_u64(), want_depth.get(id).copied(), "depth of {id}");
        assert_eq!(
            r[2].as_bool(),
            Some(critical.contains(id)),
            "critical-path mark of {id}"
        );
    }
    // Children follow their parent: each row's parent is an earlier row.
    let position: HashMap<&str, usize> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| (r[0].as_str().unwrap(), i))
        .collect();
    for s in &spans {
        let (id, parent) = (
            s["span_id"].as_str().unwrap(),
            s["parent_span_id"].as_str().unwrap_or(""),
        );
        if let Some(p) = position.get(parent) {
            assert!(p < &position[id], "{id} drawn before its parent {parent}");
        }
    }
    b.screenshot("trace");

    // The LLM call's tokens, coloured by the entropy the API reports.
    let chat = spans
        .iter()
        .find(|s| s["gen_ai"]["operation_name"] == "chat" && s["quality"]["entropy_mean"].is_f64())
        .expect("a chat span with logprobs in the trace");
    let span_id = chat["span_id"].as_str().unwrap();
    let tokens = get(
        demo.http_addr,
        &format!("/api/v1/quality/tokens?trace_id={trace_id}&span_id={span_id}"),
        &[],
    );
    let want: Vec<f64> = tokens["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["entropy"].as_f64().unwrap())
        .collect();
    assert!(want.len() > 3);
    b.click(&format!("[data-testid=span-row][data-span-id='{span_id}']"));
    let shown = b.wait_for(
        "tokens",
        "const t = [...document.querySelectorAll('[data-testid=token]')];
         return t.length ? t.map(e => [Number(e.dataset.entropy), getComputedStyle(e).backgroundColor]) : null",
    );
    let shown = shown.as_array().unwrap();
    assert_eq!(
        shown.len(),
        want.len(),
        "one coloured token per stored token"
    );
    for (s, w) in shown.iter().zip(&want) {
        assert!((s[0].as_f64().unwrap() - w).abs() < 1e-9, "{s} vs {w}");
    }
    let mut by_entropy: Vec<(f64, f64)> = shown
        .iter()
        .map(|s| (s[0].as_f64().unwrap(), intensity(s[1].as_str().unwrap())))
        .collect();
    by_entropy.sort_by(|a, b| a.0.total_cmp(&b.0));
    for w in by_entropy.windows(2) {
        assert!(
            w[1].1 + 1e-6 >= w[0].1,
            "a token of entropy {} is paler than one of {}",
            w[1].0,
            w[0].0
        );
    }
    let (low, high) = (by_entropy[0], by_entropy[by_entropy.len() - 1]);
    assert!(
        high.1 > low.1,
        "colours do not vary with entropy: {by_entropy:?}"
    );
    b.eval(
        "document.querySelector('[data-testid=tokens]').scrollIntoView({block: 'center'}); return true",
    );
    b.screenshot("tokens");
    drop(b);
    demo.stop();
}

#[test]
fn quality_anomalies_evidence_and_logs_views_show_what_the_apis_answer() {
    let Some((chromium, driver)) = browser_or_skip() else {
        return;
    };
    let mut demo = Demo::start(&["--days", "0.25", "--seed", "11"]);
    demo.wait_for_analysis();
    let (addr, base) = (demo.http_addr, format!("http://{}/", demo.http_addr));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let b = Browser::start(&chromium, &driver, &shots());

    // Overview: its tiles load.
    b.open(&base);
    b.wait_for(
        "the overview's hallucination table",
        "return document.querySelectorAll('[data-testid=overview-model]').length",
    );
    // What is stored, as the API counts it (the demo has stopped sending: counts are stable).
    let stored = get(addr, "/api/v1/overview", &[]);
    let spans_rows = stored["data"]["signals"][0]["rows"].as_u64().unwrap();
    assert!(spans_rows > 10_000, "{stored}");
    let shown = b.wait_for(
        "the stored tile",
        "const e = document.querySelector('[data-testid=stored-spans]');
         return e && e.dataset.rows ? Number(e.dataset.rows) : null",
    );
    assert_eq!(shown.as_u64(), Some(spans_rows));
    b.screenshot("overview");

    let (start, end) = (now - 6 * 3600, now);

    // Traces page through results: 20 first, then "More" appends the next 50 by cursor; the
    // 70 rows are the API's first 70 in order, each once.
    let api = get(
        addr,
        &format!("/api/v1/traces/search?service=chat-gateway&start={start}&end={end}&limit=70"),
        &[],
    );
    let want: Vec<&str> = api["data"]["traces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["trace_id"].as_str().unwrap())
        .collect();
    assert_eq!(want.len(), 70, "the demo has more than 70 traces");
    b.open(&format!(
        "{base}#/traces?service=chat-gateway&start={start}&end={end}&limit=20"
    ));
    let rows = "return [...document.querySelectorAll('[data-testid=trace-row]')].map(r => r.dataset.traceId)";
    let first = b.wait_for(
        "the first page",
        &format!("const r = (() => {{ {rows} }})(); return r.length === 20 ? r : null"),
    );
    assert_eq!(first, json!(want[..20]));
    b.eval("document.querySelector('[data-testid=trace-more]').click(); return true");
    let both = b.wait_for(
        "the second page",
        &format!("const r = (() => {{ {rows} }})(); return r.length === 70 ? r : null"),
    );
    assert_eq!(
        both,
        json!(want),
        "pages in the API's order, no trace twice"
    );

    // Quality: one line per group the API answers.
    let api = get(
        addr,
        &format!(
            "/api/v1/quality?metric=hallucination_index&by=model&start={start}&end={end}&step=3m"
        ),
        &[],
    );
    let mut want: Vec<String> = api["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["group"].as_str().unwrap().to_owned())
        .collect();
    want.sort();
    assert!(want.len() >= 4, "{api}");
    b.open(&format!(
        "{base}#/quality?metric=hallucination_index&by=model&start={start}&end={end}"
    ));
    let shown = b.wait_for(
        "quality lines",
        "const s = [...document.querySelectorAll('[data-testid=quality-series]')];
         return s.length ? s.map(e => e.dataset.group).sort() : null",
    );
    assert_eq!(shown, json!(want), "one line per model");
    b.screenshot("quality");

    // Anomalies: a detector's band and the event the API lists for it.
    let events = get(addr, "/api/v1/anomalies?detector=demo_model_rollout_0", &[]);
    let n_events = events["anomalies"].as_array().unwrap().len();
    assert!(n_events >= 1, "{events}");
    b.open(&format!(
        "{base}#/anomalies?detector=demo_model_rollout_0&since=6h"
    ));
    let drawn = b.wait_for(
        "the band and its events",
        "const band = document.querySelector('[data-testid=band]');
         const ev = document.querySelectorAll('[data-testid=anomaly-event]').length;
         const rows = document.querySelectorAll('[data-testid=anomaly-row]').length;
         return band && band.getAttribute('d').length > 10 && ev ? [ev, rows] : null",
    );
    assert_eq!(
        drawn,
        json!([n_events, n_events]),
        "every event drawn and listed"
    );
    b.screenshot("anomalies");

    // Evidence: a RAG answer whose retriever and chat call are separate spans, evaluated by
    // the server; its invented sentence is marked unsupported and names no document.
    let trace_id = "0000000000000000000000000000e1ff";
    let span_id = "00000000000000a2";
    for body in [retriever_span(trace_id), chat_span(trace_id)] {
        export(addr, None, &body);
    }
    let t0 = Instant::now();
    while !get(addr, &format!("/api/v1/traces/{trace_id}"), &[])["data"]["spans"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["name"] == "sightline.evaluation" && s["parent_span_id"] == span_id)
    {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the answer was not evaluated"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    b.open(&format!("{base}#/trace/{trace_id}?span={span_id}"));
    let sentences = b.wait_for(
        "answer sentences",
        "const s = [...document.querySelectorAll('[data-testid=sentence]')];
         return s.length ? s.map(e => [e.dataset.supported, e.dataset.document || null,
           (e.nextElementSibling && e.nextElementSibling.dataset.testid === 'sentence-source' ? e.nextElementSibling.innerText : '')]) : null",
    );
    let sentences = sentences.as_array().unwrap();
    let unsupported: Vec<&Value> = sentences.iter().filter(|s| s[0] == "false").collect();
    assert!(
        !unsupported.is_empty(),
        "no sentence marked unsupported: {sentences:?}"
    );
    for s in &unsupported {
        assert_eq!(
            s[1],
            Value::Null,
            "an unsupported sentence names a document: {s}"
        );
        assert!(s[2].as_str().unwrap().contains("unsupported"), "{s}");
    }
    for s in sentences.iter().filter(|s| s[0] == "true") {
        let doc = s[1].as_str().unwrap_or_default();
        assert_eq!(
            doc, "eiffel",
            "a supported sentence names its document: {s}"
        );
        assert!(s[2].as_str().unwrap().contains(doc), "{s}");
    }
    b.eval(
        "document.querySelector('[data-testid=sentences]').scrollIntoView({block: 'center'}); return true",
    );
    b.screenshot("evidence");

    // Evidence stored at ingest: a demo answer that carries its own documents shows the
    // sentences the provenance API lists (stored, not recomputed), each supported one with
    // the chunk that supports it quoted.
    let p = get(
        addr,
        &format!("/api/v1/quality/provenance?unsupported=true&limit=1&start={start}&end={end}"),
        &[],
    );
    let a = &p["answers"][0];
    let want = a["sentences"].as_array().unwrap();
    b.open(&format!(
        "{base}#/trace/{}?span={}",
        a["trace_id"].as_str().unwrap(),
        a["span_id"].as_str().unwrap()
    ));
    let shown = b.wait_for(
        "the stored evidence",
        "const e = document.querySelector('[data-testid=sentences]');
         const rows = [...document.querySelectorAll('[data-testid=sentence-support]')];
         return e && rows.length ? [e.dataset.source, rows.map(r => [r.dataset.supported,
           r.dataset.document || null, r.querySelector('.ev-s-text').innerText,
           (r.querySelector('[data-testid=support-passage]') || {}).innerText || null])] : null",
    );
    assert_eq!(shown[0], "evaluation", "stored evidence, not recomputed");
    let rows = shown[1].as_array().unwrap();
    assert_eq!(rows.len(), want.len(), "{rows:?} vs {want:?}");
    for (row, w) in rows.iter().zip(want) {
        assert_eq!(row[0], json!(w["supported"].as_bool().unwrap().to_string()));
        assert_eq!(row[2].as_str().unwrap(), w["text"].as_str().unwrap().trim());
        if w["supported"] == true {
            assert_eq!(row[1], w["best"]["document_id"]);
            let passage = w["best"]["text"].as_str().unwrap();
            assert!(
                row[3].as_str().unwrap().contains(passage.trim()),
                "{row} quotes {passage}"
            );
        } else {
            assert_eq!(
                row[1],
                Value::Null,
                "an unsupported sentence names a document"
            );
        }
    }
    assert!(rows.iter().any(|r| r[0] == "false"));
    b.eval(
        "document.querySelector('[data-testid=sentence-supports]').scrollIntoView({block: 'center'}); return true",
    );
    b.screenshot("evidence-stored");

    // Logs: the lines the API finds, each linked to its trace, and the histogram; 10 lines
    // first, then "More" appends the next 100 by cursor: the rows are the API's first 110 in
    // order (all of them when the demo has fewer: its traffic follows the time of day), each
    // once.
    let logs = get(
        addr,
        &format!(
            "/api/v1/logs/search?query=failed&service=llm-router&start={start}&end={end}&limit=110"
        ),
        &[],
    );
    let want: Vec<Value> = logs["data"]["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            json!([
                l["time_unix_nano"],
                l["trace_id"].as_str().unwrap_or_default()
            ])
        })
        .collect();
    assert!(
        want.len() > 20,
        "too few failed calls for two pages: {}",
        want.len()
    );
    b.open(&format!(
        "{base}#/logs?q=failed&service=llm-router&start={start}&end={end}&limit=10"
    ));
    let (rows, bars) = {
        let v = b.wait_for(
            "log lines and bars",
            "const r = document.querySelectorAll('[data-testid=log-row]').length;
             const b = document.querySelectorAll('[data-testid=log-bar]').length;
             return r && b ? [r, b] : null",
        );
        (v[0].as_u64().unwrap(), v[1].as_u64().unwrap())
    };
    assert_eq!(rows, 10, "one row per line the API returns");
    assert!(bars > 0);
    b.eval("document.querySelector('[data-testid=log-more]').click(); return true");
    let shown = b.wait_for(
        "the second page of lines",
        &format!(
            "const r = [...document.querySelectorAll('[data-testid=log-row]')];
             return r.length === {} ? r.map((e) => [e.dataset.time, e.dataset.traceId]) : null",
            want.len()
        ),
    );
    assert_eq!(
        shown,
        json!(want),
        "pages in the API's order, no line twice"
    );
    b.screenshot("logs");

    // Causality: the demo's quality -> conversion edge over a range that starts two hours
    // before the demo's data, so it has steps without values: the view tests the longest
    // stretch where both series have values, names it, and shows the API's answer for exactly
    // that stretch.
    let start = now - 8 * 3600;
    let cause = "sightline_quality_hallucination_index{operation=\"chat\"}";
    let enc = |s: &str| -> String {
        s.bytes()
            .map(|c| match c {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'.' => (c as char).to_string(),
                _ => format!("%{c:02X}"),
            })
            .collect()
    };
    b.open(&format!(
        "{base}#/causality?cause={}&effect=shop_conversion_rate&max_lag=10&step=60s&start={start}&end={end}",
        enc(cause)
    ));
    let shown = b.wait_for(
        "the Granger result",
        "const r = document.querySelector('[data-testid=granger-range]');
         const rows = [...document.querySelectorAll('[data-testid=granger-row]')];
         const chosen = rows.find((x) => x.dataset.chosen === 'true');
         return r && rows.length && chosen ? [Number(r.dataset.start), Number(r.dataset.end),
           Number(r.dataset.dropped), Number(chosen.dataset.lag), rows.length] : null",
    );
    let (from, to, dropped) = (
        shown[0].as_f64().unwrap(),
        shown[1].as_f64().unwrap(),
        shown[2].as_u64().unwrap(),
    );
    assert!(dropped > 0, "the demo's range has gaps: {shown}");
    let post = |body: Value| {
        let r = http(
            addr,
            "POST",
            "/api/v1/detect/granger",
            &[("content-type", "application/json")],
            body.to_string().as_bytes(),
        )
        .unwrap();
        (r.status, serde_json::from_slice::<Value>(&r.body).unwrap())
    };
    let (st, refused) = post(
        json!({"cause_query": cause, "effect_query": "shop_conversion_rate",
        "start": start, "end": end, "step": 60, "max_lag": 10}),
    );
    assert_eq!(st, 400, "gaps are refused unless asked for: {refused}");
    let (st, api) = post(
        json!({"cause_query": cause, "effect_query": "shop_conversion_rate",
        "start": from, "end": to, "step": 60, "max_lag": 10, "gaps": "refuse"}),
    );
    assert_eq!(st, 200, "{api}");
    assert_eq!(api["range"]["dropped"], 0, "{api}");
    assert_eq!(shown[3], api["selected_lag"]["bic"], "{api}");
    assert_eq!(
        shown[4].as_u64().unwrap() as usize,
        api["lags"].as_array().unwrap().len()
    );
    b.screenshot("causality");
    drop(b);
    demo.stop();
}

fn spans_of(service: &str, trace_hex: &str) -> Value {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        - 60_000_000_000;
    json!({"resourceSpans": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": service}}]},
        "scopeSpans": [{"scope": {"name": "test"}, "spans": [
            {"traceId": trace_hex, "spanId": "0102030405060708",
             "name": format!("{service} root <img id=injected src=x>"),
             "startTimeUnixNano": now.to_string(), "endTimeUnixNano": (now + 2_000_000_000).to_string()},
            {"traceId": trace_hex, "spanId": "1102030405060708", "parentSpanId": "0102030405060708",
             "name": format!("{service} child"),
             "startTimeUnixNano": (now + 1_000_000).to_string(), "endTimeUnixNano": (now + 500_000_000).to_string()}
        ]}]
    }]})
}

#[test]
fn auth_prompt_refuses_a_wrong_token_and_shows_only_the_tokens_tenant() {
    let Some((chromium, driver)) = browser_or_skip() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let tokens = tmp.path().join("tokens");
    std::fs::write(&tokens, "tok-a tenant-a\ntok-b tenant-b\n").unwrap();
    let server = ServerProcess::start(
        &tmp.path().join("data"),
        &["--auth-tokens-file", tokens.to_str().unwrap()],
        tmp.path().join("server.log"),
    );
    let (trace_a, trace_b) = (
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
    );
    for (token, service, trace) in [("tok-a", "svc-a", trace_a), ("tok-b", "svc-b", trace_b)] {
        export(
            server.http,
            Some(token),
            spans_of(service, trace).to_string().as_bytes(),
        );
    }
    // The API itself: the tenants a token may see.
    let t = get(
        server.http,
        "/api/v1/tenants",
        &[("authorization", "Bearer tok-a")],
    );
    assert_eq!(t, json!({"auth": true, "tenants": ["tenant-a"]}));
    assert_eq!(
        http(server.http, "GET", "/api/v1/tenants", &[], b"")
            .unwrap()
            .status,
        401
    );

    let b = Browser::start(&chromium, &driver, &shots());
    b.open(&format!("http://{}/#/traces?since=1h", server.http));
    b.wait_for(
        "the token prompt",
        "return !!document.querySelector('[data-testid=auth-prompt]')",
    );
    b.screenshot("auth-prompt");
    b.type_into("[data-testid=auth-token]", "not-a-token");
    b.click("[data-testid=auth-submit]");
    let err = b.wait_for(
        "the refusal",
        "const e = document.querySelector('[data-testid=auth-error]'); return e && e.innerText",
    );
    assert!(
        err.as_str().unwrap().contains("unknown bearer token"),
        "{err}"
    );
    b.type_into("[data-testid=auth-token]", "tok-a");
    b.click("[data-testid=auth-submit]");
    let t0 = Instant::now();
    let ids = loop {
        let ids = b.eval(
            "return [...document.querySelectorAll('[data-testid=trace-row]')].map(r => r.dataset.traceId)",
        );
        if ids.as_array().is_some_and(|a| !a.is_empty()) {
            break ids;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "no trace rows after the token"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(ids, json!([trace_a]), "tenant-a's trace only");
    let text = b.eval("return document.body.innerText");
    let text = text.as_str().unwrap();
    assert!(!text.contains("svc-b"), "another tenant's data shown");
    // Telemetry is untrusted: markup in a span name shows as text.
    assert!(
        text.contains("svc-a root <img id=injected src=x>"),
        "{text}"
    );
    assert_eq!(
        b.eval("return document.getElementById('injected') === null"),
        json!(true),
        "markup from a span name became an element"
    );
    // Opening tenant-b's trace by URL with tenant-a's token finds nothing.
    b.open(&format!("http://{}/#/trace/{trace_b}", server.http));
    b.wait_for(
        "the not-found message",
        "const t = document.body.innerText; return /not found|no trace/i.test(t) ? t : null",
    );
    assert_eq!(
        b.eval("return document.querySelectorAll('[data-testid=span-row]').length"),
        json!(0)
    );
    b.screenshot("auth-tenant-a");
}

#[test]
fn under_a_base_path_the_ui_and_every_api_answer_below_it() {
    let Some((chromium, driver)) = browser_or_skip() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(
        &tmp.path().join("data"),
        &["--http-base-path", "/obs/sightline/"],
        tmp.path().join("server.log"),
    );
    let trace = "cccccccccccccccccccccccccccccccc";
    let body = spans_of("svc-c", trace).to_string();
    let post = |path: &str| {
        http(
            server.http,
            "POST",
            path,
            &[("content-type", "application/json")],
            body.as_bytes(),
        )
        .unwrap()
        .status
    };
    // OTLP and the APIs answer under the prefix only.
    assert_eq!(post("/v1/traces"), 404);
    assert_eq!(post("/obs/sightline/v1/traces"), 200);
    let t = get(server.http, "/obs/sightline/api/v1/tenants", &[]);
    assert_eq!(t["auth"], false, "{t}");
    assert_eq!(
        http(server.http, "GET", "/api/v1/tenants", &[], b"")
            .unwrap()
            .status,
        404
    );
    // The prefix without its slash redirects to the UI's page, query kept.
    let r = http(server.http, "GET", "/obs/sightline?x=1", &[], b"").unwrap();
    assert_eq!(r.status, 308);
    assert_eq!(r.header("location"), Some("/obs/sightline/?x=1"));

    // The UI, opened at the prefix without its slash, follows the redirect and lists the
    // trace: its scripts and API calls all resolve under the prefix.
    let b = Browser::start(&chromium, &driver, &shots());
    b.open(&format!(
        "http://{}/obs/sightline#/traces?since=1h",
        server.http
    ));
    let ids = b.wait_for(
        "the trace list under the base path",
        "const r = [...document.querySelectorAll('[data-testid=trace-row]')].map(r => r.dataset.traceId);
         return r.length ? [location.pathname, r] : null",
    );
    assert_eq!(ids, json!(["/obs/sightline/", [trace]]));
    b.open(&format!(
        "http://{}/obs/sightline/#/trace/{trace}",
        server.http
    ));
    let rows = b.wait_for(
        "the waterfall under the base path",
        "const n = document.querySelectorAll('[data-testid=span-row]').length; return n ? n : null",
    );
    assert_eq!(rows, json!(2));
    drop(b);
    server.stop();
}

#[test]
fn answers_are_compressed_for_clients_that_accept_gzip() {
    let tmp = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(&tmp.path().join("data"), &[], tmp.path().join("s.log"));
    let trace = "cccccccccccccccccccccccccccccccc";
    let sent = spans_of("svc-c", trace);
    export(server.http, None, sent.to_string().as_bytes());
    // What the overview counts: the two spans, their time range, nothing else.
    let o = get(server.http, "/api/v1/overview", &[]);
    let spans = &o["data"]["signals"][0];
    assert_eq!(spans["signal"], "spans", "{o}");
    assert_eq!(spans["rows"], 2, "{o}");
    let first = &sent["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
    assert_eq!(spans["start_unix_nano"], first["startTimeUnixNano"], "{o}");
    assert_eq!(o["data"]["signals"][1]["rows"], 0, "{o}");
    assert_eq!(
        o["data"]["signals"][1]["start_unix_nano"],
        Value::Null,
        "{o}"
    );
    let path = format!("/api/v1/traces/{trace}");
    let plain = http(server.http, "GET", &path, &[], b"").unwrap();
    assert_eq!(plain.status, 200);
    assert_eq!(plain.header("content-encoding"), None);
    let zipped = http(
        server.http,
        "GET",
        &path,
        &[("accept-encoding", "gzip")],
        b"",
    )
    .unwrap();
    assert_eq!(zipped.status, 200);
    assert_eq!(zipped.header("content-encoding"), Some("gzip"));
    let mut body = Vec::new();
    std::io::Read::read_to_end(
        &mut flate2::read::GzDecoder::new(&zipped.body[..]),
        &mut body,
    )
    .unwrap();
    assert_eq!(body, plain.body, "the same answer, compressed");
    assert!(zipped.body.len() < plain.body.len());
    // The UI's files too.
    let page = http(
        server.http,
        "GET",
        "/ui/app.js",
        &[("accept-encoding", "gzip")],
        b"",
    )
    .unwrap();
    assert_eq!(page.status, 200);
    assert_eq!(page.header("content-encoding"), Some("gzip"));
    server.stop();
}

#[test]
fn a_ten_thousand_span_trace_renders_in_under_a_second() {
    let Some((chromium, driver)) = browser_or_skip() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(&tmp.path().join("data"), &[], tmp.path().join("s.log"));
    let trace = "dddddddddddddddddddddddddddddddd";
    let t0 = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        - 600_000_000_000;
    const N: u64 = 10_000;
    // A 4-ary tree: span i's parent is (i - 1) / 4; sent in batches of 1,000.
    for chunk in (0..N).collect::<Vec<_>>().chunks(1000) {
        let spans: Vec<Value> = chunk
            .iter()
            .map(|&i| {
                let mut s = json!({
                    "traceId": trace, "spanId": format!("{:016x}", i + 1),
                    "name": format!("op-{}", i % 37),
                    "startTimeUnixNano": (t0 + i * 1_000_000).to_string(),
                    "endTimeUnixNano": (t0 + i * 1_000_000 + 5_000_000).to_string()
                });
                if i > 0 {
                    s["parentSpanId"] = json!(format!("{:016x}", (i - 1) / 4 + 1));
                }
                s
            })
            .collect();
        let body = json!({"resourceSpans": [{
            "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "big"}}]},
            "scopeSpans": [{"spans": spans}]
        }]});
        export(server.http, None, body.to_string().as_bytes());
    }
    let b = Browser::start(&chromium, &driver, &shots());
    let started = Instant::now();
    b.open(&format!("http://{}/#/trace/{trace}", server.http));
    let rendered = b.wait_for(
        "10,000 waterfall rows",
        "const w = document.querySelector('[data-testid=waterfall]');
         const n = document.querySelectorAll('[data-testid=span-row]').length;
         return n === 10000 && w && w.dataset.renderMs ? Number(w.dataset.renderMs) : null",
    );
    let whole = started.elapsed();
    let render_ms = rendered.as_f64().unwrap();
    eprintln!(
        "10,000-span trace: waterfall rendered in {render_ms:.0} ms; page opened to rows shown in {} ms",
        whole.as_millis()
    );
    assert!(render_ms < 1000.0, "rendering took {render_ms} ms");
    b.screenshot("trace-10000-spans");
    drop(b);
    server.stop();
}
