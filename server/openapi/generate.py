"""Writes server/openapi.json: python3 server/openapi/generate.py > server/openapi.json"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import query_apis  # noqa: E402
import detector_apis  # noqa: E402
def ref(n): return {"$ref": f"#/components/schemas/{n}"}
def jbody(schema, example=None):
    c = {"schema": schema}
    if example is not None: c["example"] = example
    return {"required": True, "content": {"application/json": c}}
def ok(desc, schema=None, ctype="application/json"):
    r = {"description": desc}
    if schema is not None: r["content"] = {ctype: {"schema": schema}}
    return r
ERR = {"400": {"description": "Malformed request", "content": {"application/json": {"schema": ref("Error")}}},
       "401": {"description": "Missing or unknown bearer token", "content": {"application/json": {"schema": ref("Error")}}}}
paths = {}
def add(path, method, op): paths.setdefault(path, {})[method] = op
# OTLP
for sig in ["traces", "metrics", "logs"]:
    add(f"/v1/{sig}", "post", {"tags": ["otlp"], "summary": f"OTLP/HTTP export of {sig}",
        "description": "ExportServiceRequest as application/x-protobuf or application/json (OTLP JSON), optionally gzip (Content-Encoding: gzip). Answers the ExportServiceResponse in the request's encoding, with partial_success for rejected items. See server/README-ingest.md.",
        "requestBody": {"required": True, "content": {"application/x-protobuf": {"schema": {"type": "string", "format": "binary"}}, "application/json": {"schema": {"type": "object"}}}},
        "responses": {"200": ok("Accepted (possibly partially)"), "400": ok("Malformed"), "401": ok("Unauthorized"), "413": ok("Too large"), "415": ok("Unsupported media type"), "429": ok("Too many requests in flight (Retry-After)"), "503": ok("Memory budget exhausted (Retry-After)")}})
add("/health", "get", {"tags": ["ops"], "summary": "Liveness", "responses": {"200": ok("Alive")}})
add("/ready", "get", {"tags": ["ops"], "summary": "Readiness (503 while shutting down)", "responses": {"200": ok("Ready"), "503": ok("Shutting down")}})
add("/metrics", "get", {"tags": ["ops"], "summary": "The server's own metrics, Prometheus text format", "responses": {"200": ok("Metrics", {"type": "string"}, "text/plain")}})
add("/api/v1/tenants", "get", {"tags": ["ops"], "summary": "Whether auth is on, and the tenants the caller may pick: its token's with auth on, every tenant with data (and default) with auth off",
    "responses": {"200": ok("Auth and tenants", {"type": "object", "required": ["auth", "tenants"], "properties": {"auth": {"type": "boolean"}, "tenants": {"type": "array", "items": {"type": "string"}}}}), "401": ERR["401"]}})
add("/api/v1/overview", "get", {"tags": ["native"], "summary": "What the tenant has stored per signal (rows, unflushed rows, segments, time range as nanosecond strings) and its metric series count; from metadata, no scan",
    "responses": {"200": ok("The overview", {"type": "object", "properties": {"status": {"const": "success"}, "data": {"type": "object", "properties": {"tenant": {"type": "string"}, "series": {"type": "integer"}, "signals": {"type": "array", "items": {"type": "object", "properties": {"signal": {"type": "string", "enum": ["spans", "logs", "samples"]}, "rows": {"type": "integer"}, "unflushed_rows": {"type": "integer"}, "segments": {"type": "integer"}, "start_unix_nano": {"type": ["string", "null"]}, "end_unix_nano": {"type": ["string", "null"]}}}}}}}}), **ERR}})
add("/", "get", {"tags": ["ui"], "summary": "The built-in web UI (index.html; its files under /ui/)", "responses": {"200": ok("The page", {"type": "string"}, "text/html")}})
add("/ui/{path}", "get", {"tags": ["ui"], "summary": "A file of the built-in web UI", "parameters": [{"name": "path", "in": "path", "required": True, "schema": {"type": "string"}}],
    "responses": {"200": ok("The file", {"type": "string"}), "404": ok("No such file")}})
add("/api/v1/openapi.json", "get", {"tags": ["ops"], "summary": "This document", "responses": {"200": ok("OpenAPI 3.1 document", {"type": "object"})}})
# detect
add("/api/v1/detect/entropy", "post", {"tags": ["detect"], "summary": "Token entropy of one response from its logprobs (OpenAI shape)",
    "requestBody": jbody({"type": "object", "required": ["logprobs"], "properties": {"logprobs": {"type": "object", "description": "{\"content\": [{\"token\", \"logprob\", \"bytes\", \"top_logprobs\": [...]}]}"}, "options": {"type": "object"}}}),
    "responses": {"200": ok("Uncertainty summary", {"type": "object"}), **ERR}})
add("/api/v1/detect/hallucination", "post", {"tags": ["detect"], "summary": "Hallucination index of an answer against retrieved documents, with per-sentence evidence",
    "requestBody": jbody({"type": "object", "required": ["answer", "documents"], "properties": {"answer": {"type": "string"}, "documents": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "string"}, "text": {"type": "string"}}}}, "logprobs": {"type": "object"}, "options": {"type": "object"}}}),
    "responses": {"200": ok("Hallucination report", {"type": "object"}), **ERR}})
add("/api/v1/detect/granger", "post", {"tags": ["detect"], "summary": "Granger causality: inline series or PromQL over stored metrics",
    "requestBody": jbody({"oneOf": [
        {"type": "object", "required": ["cause", "effect", "max_lag"], "properties": {"cause": {"type": "array", "items": {"type": "number"}}, "effect": {"type": "array", "items": {"type": "number"}}, "max_lag": {"type": "integer"}, "difference": {"type": "string", "enum": ["none", "auto", "always"]}, "alpha": {"type": "number"}}},
        {"type": "object", "required": ["cause_query", "effect_query", "start", "end", "step", "max_lag"], "properties": {"cause_query": {"type": "string"}, "effect_query": {"type": "string"}, "start": {"type": "number"}, "end": {"type": "number"}, "step": {"type": "number"}, "max_lag": {"type": "integer"}, "difference": {"type": "string", "enum": ["none", "auto", "always"]}, "alpha": {"type": "number"}, "gaps": {"type": "string", "enum": ["refuse", "longest_run"], "description": "steps where a series has no value: refuse (400), or test the longest run of steps where both have one (named in the answer's range)"}}}]}),
    "responses": {"200": ok("statsmodels-compatible test statistics per lag", {"type": "object"}), **ERR}})
# aggregate
add("/api/v1/aggregate", "post", {"tags": ["native"], "summary": "Aggregate spans or logs (group by keys and time buckets) or list top rows",
    "description": "See docs/aggregate.md.",
    "requestBody": jbody(ref("PlanRequest"), {"signal": "spans", "start": "2026-06-01T10:00:00Z", "end": "2026-06-01T11:00:00Z", "matchers": [{"key": "gen_ai.operation.name", "op": "=", "value": "chat"}], "group_by": ["gen_ai.request.model"], "bucket": "1m", "aggregates": [{"func": "count"}, {"func": {"quantile": 0.99}, "field": "duration"}]}),
    "responses": {"200": ok("A table with its explain", {"type": "object", "properties": {"status": {"const": "success"}, "data": ref("Table")}}), **ERR, "422": {"description": "Too many groups", "content": {"application/json": {"schema": ref("Error")}}}}})
add("/api/v1/aggregate/fields", "get", {"tags": ["native"], "summary": "Numeric fields and promoted keys plans can name", "responses": {"200": ok("Fields per signal", {"type": "object"}), "401": ERR["401"]}})
# prometheus
P = "Prometheus HTTP API (https://prometheus.io/docs/prometheus/latest/querying/api/); see docs/prom-api.md"
for path, methods, summary in [
    ("/api/v1/query", ["get", "post"], "PromQL instant query (query, time, timeout)"),
    ("/api/v1/query_range", ["get", "post"], "PromQL range query (query, start, end, step, timeout, nocache)"),
    ("/api/v1/query_exemplars", ["get", "post"], "Exemplars (always empty)"),
    ("/api/v1/format_query", ["get", "post"], "Pretty-printed PromQL"),
    ("/api/v1/series", ["get", "post"], "Series matching match[] selectors"),
    ("/api/v1/labels", ["get", "post"], "Label names"),
    ("/api/v1/label/{name}/values", ["get"], "Values of one label"),
    ("/api/v1/metadata", ["get"], "Metric metadata (type, help, unit)"),
    ("/api/v1/status/buildinfo", ["get"], "Build information"),
    ("/api/v1/status/runtimeinfo", ["get"], "Runtime information"),
    ("/api/v1/rules", ["get"], "Rules (always empty)"),
    ("/api/v1/alerts", ["get"], "Alerts (always empty)"),
    ("/api/v1/write", ["post"], "Prometheus remote write 1.0 (snappy-compressed protobuf WriteRequest)")]:
    for m in methods:
        op = {"tags": ["prometheus"], "summary": summary, "description": P, "responses": {"200": ok("Prometheus JSON envelope", {"type": "object"}), "400": ok("bad_data"), "422": ok("execution"), "503": ok("timeout")}}
        if "{name}" in path:
            op["parameters"] = [{"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}]
        if path == "/api/v1/write":
            op["responses"] = {"204": ok("Stored"), "400": ok("Malformed"), "413": ok("Too large"), "415": ok("Unsupported"), "429": ok("Backpressure")}
        add(path, m, op)
for path, ops in query_apis.paths.items():
    for m, op in ops.items(): add(path, m, op)
for path, ops in detector_apis.paths.items():
    for m, op in ops.items(): add(path, m, op)
schemas = {
    "Error": {"type": "object", "required": ["status", "error"], "properties": {"status": {"const": "error"}, "error": {"type": "string"}}},
    "Matcher": {"type": "object", "required": ["key", "value"], "properties": {"key": {"type": "string"}, "op": {"type": "string", "enum": ["=", "!=", "=~", "!~"], "default": "="}, "value": {"type": "string"}}},
    "FieldFilter": {"type": "object", "required": ["field", "op", "value"], "properties": {"field": {"type": "string"}, "op": {"type": "string", "enum": ["<", "<=", ">", ">=", "=", "!="]}, "value": {"type": "number"}}},
    "Aggregate": {"type": "object", "required": ["func"], "properties": {"func": {"oneOf": [{"type": "string", "enum": ["count", "sum", "avg", "min", "max", "error_ratio", "rate"]}, {"type": "object", "required": ["quantile"], "properties": {"quantile": {"type": "number", "minimum": 0, "maximum": 1}}}]}, "field": {"type": "string"}}},
    "PlanRequest": {"type": "object", "required": ["signal"], "additionalProperties": False, "properties": {
        "signal": {"type": "string", "enum": ["spans", "traces", "logs"]},
        "start": {"type": ["string", "number"], "description": "RFC 3339, or Unix seconds as a number or a string"}, "end": {"type": ["string", "number"]},
        "matchers": {"type": "array", "items": ref("Matcher")}, "text": {"type": "string"}, "trace_id": {"type": "string"},
        "filters": {"type": "array", "items": ref("FieldFilter")}, "group_by": {"type": "array", "items": {"type": "string"}},
        "bucket": {"type": ["string", "number"], "description": "duration, e.g. 1m, or seconds"}, "aggregates": {"type": "array", "items": ref("Aggregate")},
        "columns": {"type": "array", "items": {"type": "string"}},
        "order_by": {"type": "object", "properties": {"by": {"oneOf": [{"type": "object", "properties": {"aggregate": {"type": "integer"}}}, {"type": "object", "properties": {"field": {"type": "string"}}}]}, "descending": {"type": "boolean"}}},
        "limit": {"type": "integer", "minimum": 0, "maximum": 100000}}},
    "Table": {"type": "object", "properties": {"columns": {"type": "array", "items": {"type": "string"}}, "rows": {"type": "array", "items": {"type": "array"}}, "explain": {"type": "object"}}},
}
schemas.update(detector_apis.schemas)
doc = {"openapi": "3.1.0", "info": {"title": "Sightline HTTP API", "version": "0.1.0",
       "description": "OTLP ingest, the native query and detect APIs, and the Prometheus, Tempo and Loki API subsets Grafana's datasources call. Auth: `Authorization: Bearer <token>` when the server runs with --auth-tokens-file, else `X-Scope-OrgID: <tenant>` (default tenant when absent)."},
       "servers": [{"url": "http://127.0.0.1:4318"}],
       "components": {"schemas": schemas, "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}, "orgId": {"type": "apiKey", "in": "header", "name": "X-Scope-OrgID"}}},
       "security": [{"bearer": []}, {"orgId": []}],
       "paths": dict(sorted(paths.items()))}
print(json.dumps(doc, indent=1))
