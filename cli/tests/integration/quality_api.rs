//! The LLM quality API (`/api/v1/quality`, `/api/v1/quality/tokens`, `/api/v1/quality/values`)
//! through the real `sightline` binary: LLM spans with logprobs, documents, conversations and
//! cache reads sent as OTLP/HTTP JSON; every expected value computed here from what was sent
//! (entropy from the logprobs, context expansion and cache hit ratio from the token counts;
//! the hallucination index per span as the trace API returns it, averaged here); bad
//! parameters refused with 4xx; `model=` matching the request or the response model here and in
//! the trace search API.

use std::collections::BTreeMap;

use crate::common::*;
use serde_json::{Value, json};

const T0: i64 = 1_780_272_000_000_000_000; // 2026-06-01T00:00:00Z
const MIN: i64 = 60_000_000_000;

/// One sent call.
#[derive(Clone, Debug)]
struct Call {
    trace: String,
    span: String,
    model: &'static str,
    provider: &'static str,
    route: &'static str,
    conv: String,
    start: i64,
    input: i64,
    output: i64,
    cached: Option<i64>,
    /// Per token: sampled probability and the alternatives' probabilities (sampled first).
    tokens: Vec<(String, f64, Vec<f64>)>,
}

/// Entropy with the residual mass as one bucket: `-sum p ln p - r ln r`.
fn entropy(top: &[f64]) -> f64 {
    let r = 1.0 - top.iter().sum::<f64>();
    let mut h: f64 = top.iter().map(|p| -p * p.ln()).sum();
    if r > 1e-9 {
        h -= r * r.ln();
    }
    h
}

fn calls() -> Vec<Call> {
    let models = [
        ("gpt-4o", "openai", "/chat/support"),
        ("claude-sonnet-4", "anthropic", "/chat/sales"),
    ];
    let mut out = Vec::new();
    let mut id = 0;
    // 3 minutes; per model 2 conversations of 3 turns each, one turn per minute.
    for (m, (model, provider, route)) in models.iter().enumerate() {
        for c in 0..2 {
            let conv = format!("conv-{m}-{c}");
            let mut input = 100 + 10 * c as i64;
            for turn in 0..3i64 {
                id += 1;
                let output = 20 + 5 * turn + m as i64;
                let start = T0 + turn * MIN + (10 + c as i64 * 7 + m as i64) * 1_000_000_000;
                let tokens = (0..4)
                    .map(|k| {
                        let p = 0.3 + 0.15 * ((k + turn as usize + c + m) % 4) as f64;
                        let alt = (1.0 - p) * 0.5;
                        (format!(" t{k}"), p, vec![p, alt, alt * 0.5])
                    })
                    .collect();
                out.push(Call {
                    trace: format!("{:032x}", 0xabc000 + id),
                    span: format!("{:016x}", 0x5000 + id),
                    model,
                    provider,
                    route,
                    conv: conv.clone(),
                    start,
                    input,
                    output,
                    cached: (m == 0).then_some(input / (2 + turn)),
                    tokens,
                });
                input += output + 7 + 30 * m as i64;
            }
        }
    }
    out
}

fn span_json(c: &Call) -> Value {
    let content: Vec<Value> = c
        .tokens
        .iter()
        .map(|(t, p, top)| {
            let tops: Vec<Value> = top
                .iter()
                .enumerate()
                .map(|(i, q)| {
                    let tok = if i == 0 {
                        t.clone()
                    } else {
                        format!(" alt{i}")
                    };
                    json!({"token": tok, "logprob": q.ln()})
                })
                .collect();
            json!({"token": t, "logprob": p.ln(), "top_logprobs": tops})
        })
        .collect();
    let mut attrs = vec![
        json!({"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}),
        json!({"key": "gen_ai.request.model", "value": {"stringValue": c.model}}),
        json!({"key": "gen_ai.provider.name", "value": {"stringValue": c.provider}}),
        json!({"key": "app.route", "value": {"stringValue": c.route}}),
        json!({"key": "gen_ai.conversation.id", "value": {"stringValue": c.conv}}),
        json!({"key": "gen_ai.usage.input_tokens", "value": {"intValue": c.input.to_string()}}),
        json!({"key": "gen_ai.usage.output_tokens", "value": {"intValue": c.output.to_string()}}),
        json!({"key": "gen_ai.response.logprobs", "value": {"stringValue": json!({"content": content}).to_string()}}),
        json!({"key": "gen_ai.output.messages", "value": {"stringValue": json!([{"role": "assistant", "parts": [{"type": "text", "content": "The Team plan costs 49 dollars per month."}]}]).to_string()}}),
        json!({"key": "gen_ai.retrieval.documents", "value": {"stringValue": json!([{"id": "d1", "text": "The Team plan costs 49 dollars per month and includes 5 seats."}]).to_string()}}),
    ];
    if let Some(k) = c.cached {
        attrs.push(json!({"key": "gen_ai.usage.cache_read.input_tokens", "value": {"intValue": k.to_string()}}));
    }
    json!({
        "traceId": c.trace,
        "spanId": c.span,
        "name": format!("chat {}", c.model),
        "kind": 3,
        "startTimeUnixNano": c.start.to_string(),
        "endTimeUnixNano": (c.start + 500_000_000).to_string(),
        "attributes": attrs,
    })
}

fn get(addr: std::net::SocketAddr, path: &str) -> (u16, Value) {
    let r = http(addr, "GET", path, &[], b"").unwrap();
    (
        r.status,
        serde_json::from_slice(&r.body).unwrap_or(Value::Null),
    )
}

/// `{group: [(t_ms, value)]}` of a `/api/v1/quality` answer, nulls dropped.
fn series(v: &Value) -> BTreeMap<String, Vec<(i64, f64)>> {
    v["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let pts = s["points"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|p| Some((p[0].as_i64().unwrap(), p[1].as_f64()?)))
                .collect();
            (s["group"].as_str().unwrap().to_owned(), pts)
        })
        .collect()
}

fn close(got: &BTreeMap<String, Vec<(i64, f64)>>, want: &BTreeMap<String, Vec<(i64, f64)>>) {
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>()
    );
    for (g, w) in want {
        let gv = &got[g];
        assert_eq!(gv.len(), w.len(), "{g}: {gv:?} vs {w:?}");
        for ((t1, v1), (t2, v2)) in gv.iter().zip(w) {
            assert_eq!(t1, t2, "{g}");
            assert!((v1 - v2).abs() < 1e-9, "{g} at {t1}: got {v1}, want {v2}");
        }
    }
}

/// Mean per (group, minute) of `f(call)`.
fn by_minute(
    calls: &[Call],
    group: impl Fn(&Call) -> String,
    f: impl Fn(&Call) -> Option<f64>,
) -> BTreeMap<String, Vec<(i64, f64)>> {
    let mut acc: BTreeMap<String, BTreeMap<i64, Vec<f64>>> = BTreeMap::new();
    for c in calls {
        if let Some(v) = f(c) {
            let t = (c.start - c.start % MIN) / 1_000_000;
            acc.entry(group(c))
                .or_default()
                .entry(t)
                .or_default()
                .push(v);
        }
    }
    acc.into_iter()
        .map(|(g, m)| {
            let pts = m
                .into_iter()
                .map(|(t, v)| (t, v.iter().sum::<f64>() / v.len() as f64))
                .collect();
            (g, pts)
        })
        .collect()
}

#[test]
fn quality_api_answers_match_what_was_sent() {
    let tmp = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(&tmp.path().join("data"), &[], tmp.path().join("server.log"));
    let calls = calls();
    let body = json!({"resourceSpans": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "llm-router"}}]},
        "scopeSpans": [{"scope": {"name": "test"}, "spans": calls.iter().map(span_json).collect::<Vec<_>>()}]
    }]});
    let r = http(
        server.http,
        "POST",
        "/v1/traces",
        &[("content-type", "application/json")],
        body.to_string().as_bytes(),
    )
    .unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    let range = format!(
        "start={}&end={}&step=60s",
        T0 / 1_000_000_000,
        T0 / 1_000_000_000 + 180
    );

    // token entropy: mean over tokens of the tail-bucket entropy, then over spans
    let (st, v) = get(
        server.http,
        &format!("/api/v1/quality?metric=token_entropy_mean&by=model&{range}"),
    );
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["metric"], "token_entropy_mean");
    assert_eq!(v["by"], "model");
    assert_eq!(v["step_ms"], 60_000);
    for s in v["series"].as_array().unwrap() {
        assert_eq!(
            s["points"].as_array().unwrap().len(),
            3,
            "one point per bucket"
        );
    }
    let want = by_minute(
        &calls,
        |c| c.model.to_owned(),
        |c| {
            Some(
                c.tokens.iter().map(|(_, _, top)| entropy(top)).sum::<f64>()
                    / c.tokens.len() as f64,
            )
        },
    );
    close(&series(&v), &want);

    // low-confidence tokens (p < 0.5) per span, by route
    let (st, v) = get(
        server.http,
        &format!("/api/v1/quality?metric=low_confidence_tokens&by=route&{range}"),
    );
    assert_eq!(st, 200, "{v}");
    let want = by_minute(
        &calls,
        |c| c.route.to_owned(),
        |c| Some(c.tokens.iter().filter(|(_, p, _)| *p < 0.5).count() as f64),
    );
    close(&series(&v), &want);

    // hallucination index: per span as stored (trace API), averaged per bucket here
    let mut index = BTreeMap::new();
    for c in &calls {
        let (st, t) = get(server.http, &format!("/api/v1/traces/{}", c.trace));
        assert_eq!(st, 200, "{t}");
        let h = t["data"]["spans"][0]["quality"]["hallucination_index"]
            .as_f64()
            .or_else(|| t["data"]["spans"][0]["hallucination_index"].as_f64());
        index.insert(c.span.clone(), h.expect("hallucination index stored"));
    }
    let (st, v) = get(
        server.http,
        &format!("/api/v1/quality?metric=hallucination_index&by=provider&{range}"),
    );
    assert_eq!(st, 200, "{v}");
    close(
        &series(&v),
        &by_minute(&calls, |c| c.provider.to_owned(), |c| Some(index[&c.span])),
    );

    // cache hit ratio: sum(cached) / sum(input) over spans that report cache reads
    let (st, v) = get(
        server.http,
        &format!("/api/v1/quality?metric=cache_hit_ratio&by=model&{range}"),
    );
    assert_eq!(st, 200, "{v}");
    let mut want: BTreeMap<String, Vec<(i64, f64)>> = BTreeMap::new();
    for t in 0..3 {
        let (mut num, mut den) = (0.0, 0.0);
        for c in calls
            .iter()
            .filter(|c| c.cached.is_some() && (c.start - T0) / MIN == t)
        {
            num += c.cached.unwrap() as f64;
            den += c.input as f64;
        }
        want.entry("gpt-4o".into())
            .or_default()
            .push(((T0 + t * MIN) / 1_000_000, num / den));
    }
    close(&series(&v), &want);

    // context expansion: consecutive turns of a conversation, pooled per bucket of the later
    // turn: sum(input growth) / sum(previous output)
    let (st, v) = get(
        server.http,
        &format!("/api/v1/quality?metric=context_expansion&by=model&{range}"),
    );
    assert_eq!(st, 200, "{v}");
    let mut acc: BTreeMap<(String, i64), (f64, f64)> = BTreeMap::new();
    for w in calls.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        if a.conv == b.conv {
            let e = acc
                .entry((b.model.to_owned(), (b.start - T0) / MIN))
                .or_default();
            e.0 += (b.input - a.input) as f64;
            e.1 += a.output as f64;
        }
    }
    let mut want: BTreeMap<String, Vec<(i64, f64)>> = BTreeMap::new();
    for ((g, t), (growth, prior)) in acc {
        want.entry(g)
            .or_default()
            .push(((T0 + t * MIN) / 1_000_000, growth / prior));
    }
    assert!(
        want.values().all(|v| v.len() == 2),
        "turn pairs end in minutes 1 and 2"
    );
    close(&series(&v), &want);

    // filters: only claude's spans
    let (st, v) = get(
        server.http,
        &format!(
            "/api/v1/quality?metric=token_entropy_mean&by=route&model=claude-sonnet-4&{range}"
        ),
    );
    assert_eq!(st, 200, "{v}");
    assert_eq!(series(&v).keys().collect::<Vec<_>>(), vec!["/chat/sales"]);

    // tokens of one response
    let c = &calls[4];
    let (st, v) = get(
        server.http,
        &format!(
            "/api/v1/quality/tokens?trace_id={}&span_id={}",
            c.trace, c.span
        ),
    );
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["trace_id"], c.trace);
    assert_eq!(v["span_id"], c.span);
    assert_eq!(v["model"], c.model);
    let toks = v["tokens"].as_array().unwrap();
    assert_eq!(toks.len(), c.tokens.len());
    for (got, (t, p, top)) in toks.iter().zip(&c.tokens) {
        assert_eq!(got["token"], t.as_str());
        assert!((got["logprob"].as_f64().unwrap() - p.ln()).abs() < 1e-12);
        assert!((got["entropy"].as_f64().unwrap() - entropy(top)).abs() < 1e-9);
        assert_eq!(got["top"].as_array().unwrap().len(), top.len());
    }
    let mean = c.tokens.iter().map(|(_, _, top)| entropy(top)).sum::<f64>() / c.tokens.len() as f64;
    assert!((v["entropy_mean"].as_f64().unwrap() - mean).abs() < 1e-9);
    assert!((v["hallucination_index"].as_f64().unwrap() - index[&c.span]).abs() < 1e-12);

    // values for template variables
    for (field, want) in [
        ("model", json!(["claude-sonnet-4", "gpt-4o"])),
        ("provider", json!(["anthropic", "openai"])),
        ("route", json!(["/chat/sales", "/chat/support"])),
        ("service", json!(["llm-router"])),
        ("operation", json!(["chat"])),
    ] {
        let (st, v) = get(
            server.http,
            &format!("/api/v1/quality/values?field={field}"),
        );
        assert_eq!(st, 200, "{v}");
        assert_eq!(v["values"], want, "{field}");
    }

    // bad input: clear 4xx
    for (path, status) in [
        (format!("/api/v1/quality?metric=nope&{range}"), 400),
        (format!("/api/v1/quality?{range}"), 400),
        (
            format!("/api/v1/quality?metric=token_entropy_mean&by=colour&{range}"),
            400,
        ),
        (
            "/api/v1/quality?metric=token_entropy_mean&step=0".to_owned(),
            400,
        ),
        (
            "/api/v1/quality?metric=token_entropy_mean&start=100&end=50".to_owned(),
            400,
        ),
        (
            "/api/v1/quality?metric=token_entropy_mean&start=0&end=1000000000&step=1s".to_owned(),
            400,
        ),
        (
            "/api/v1/quality/tokens?trace_id=xyz&span_id=0000000000000001".to_owned(),
            400,
        ),
        (
            format!(
                "/api/v1/quality/tokens?trace_id={:032x}&span_id=0000000000000001",
                7
            ),
            404,
        ),
        (
            format!(
                "/api/v1/quality/tokens?trace_id={}&span_id=00000000000000ff",
                c.trace
            ),
            404,
        ),
        ("/api/v1/quality/values?field=colour".to_owned(), 400),
        ("/api/v1/quality/values".to_owned(), 400),
    ] {
        let (st, v) = get(server.http, &path);
        assert_eq!(st, status, "{path}: {v}");
        assert_eq!(v["status"], "error", "{path}");
    }
    server.stop();
}

/// `model=` matches the request or the response model, in the trace search API and the quality
/// API alike: a request for gpt-4o answered by gpt-4o-2024-08-06 is found by either name, and a
/// gpt-4o-mini call by neither.
#[test]
fn model_filter_matches_the_request_or_the_response_model() {
    let tmp = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(&tmp.path().join("data"), &[], tmp.path().join("server.log"));
    let tokens: Vec<(String, f64, Vec<f64>)> = (0..3)
        .map(|k| (format!(" t{k}"), 0.6, vec![0.6, 0.3, 0.1]))
        .collect();
    let sent = [
        ("gpt-4o", "gpt-4o-2024-08-06"),
        ("gpt-4o-mini", "gpt-4o-mini-2024-07-18"),
    ];
    let calls: Vec<Call> = sent
        .iter()
        .enumerate()
        .map(|(i, &(model, _))| Call {
            trace: format!("{:032x}", 0xdef000 + i),
            span: format!("{:016x}", 0x7000 + i),
            model,
            provider: "openai",
            route: "/chat",
            conv: format!("conv-{i}"),
            start: T0 + (10 + i as i64) * 1_000_000_000,
            input: 100,
            output: 20,
            cached: None,
            tokens: tokens.clone(),
        })
        .collect();
    let spans: Vec<Value> = calls
        .iter()
        .zip(sent)
        .map(|(c, (_, response))| {
            let mut s = span_json(c);
            s["attributes"]
                .as_array_mut()
                .unwrap()
                .push(json!({"key": "gen_ai.response.model", "value": {"stringValue": response}}));
            s
        })
        .collect();
    let body = json!({"resourceSpans": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "llm-router"}}]},
        "scopeSpans": [{"scope": {"name": "test"}, "spans": spans}]
    }]});
    let r = http(
        server.http,
        "POST",
        "/v1/traces",
        &[("content-type", "application/json")],
        body.to_string().as_bytes(),
    )
    .unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    let (start, end) = (T0 / 1_000_000_000, T0 / 1_000_000_000 + 180);

    for (model, want) in [
        ("gpt-4o-2024-08-06", 0),
        ("gpt-4o", 0),
        ("gpt-4o-mini", 1),
        ("gpt-4o-mini-2024-07-18", 1),
    ] {
        let c = &calls[want];
        // Span search and trace search.
        let (st, v) = get(
            server.http,
            &format!("/api/v1/traces/search?group=spans&model={model}&start={start}&end={end}"),
        );
        assert_eq!(st, 200, "{v}");
        let found: Vec<&str> = v["data"]["spans"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["span_id"].as_str().unwrap())
            .collect();
        assert_eq!(found, [c.span.as_str()], "model={model}: {v}");
        assert_eq!(v["data"]["total_matched"], 1, "model={model}");
        let (st, v) = get(
            server.http,
            &format!("/api/v1/traces/search?model={model}&start={start}&end={end}"),
        );
        assert_eq!(st, 200, "{v}");
        assert_eq!(v["data"]["total_traces"], 1, "model={model}: {v}");
        assert_eq!(v["data"]["traces"][0]["trace_id"], c.trace, "model={model}");

        // Quality series: only that span's group (its request model), with its entropy.
        let (st, v) = get(
            server.http,
            &format!(
                "/api/v1/quality?metric=token_entropy_mean&by=model&model={model}&start={start}&end={end}&step=60s"
            ),
        );
        assert_eq!(st, 200, "{v}");
        let got = series(&v);
        let want_entropy = entropy(&[0.6, 0.3, 0.1]);
        assert_eq!(
            got.keys().collect::<Vec<_>>(),
            [c.model],
            "model={model}: {v}"
        );
        let points = &got[c.model];
        assert_eq!(points.len(), 1, "model={model}: {v}");
        assert_eq!(points[0].0, T0 / 1_000_000, "model={model}");
        assert!(
            (points[0].1 - want_entropy).abs() < 1e-9,
            "model={model}: {v}"
        );
    }

    // Neither model: nothing, in either API.
    let (st, v) = get(
        server.http,
        &format!("/api/v1/traces/search?group=spans&model=gpt-4&start={start}&end={end}"),
    );
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["data"]["total_matched"], 0, "{v}");
    let (st, v) = get(
        server.http,
        &format!(
            "/api/v1/quality?metric=token_entropy_mean&model=gpt-4&start={start}&end={end}&step=60s"
        ),
    );
    assert_eq!(st, 200, "{v}");
    assert!(series(&v).is_empty(), "{v}");
    server.stop();
}
