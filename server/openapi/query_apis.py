"""Paths of the trace, log, Tempo and Loki APIs for the OpenAPI document (see generate.py)."""
import json
paths = {}
def add(path, methods, tag, summary, desc, params=None, responses=None):
    for m in methods:
        op = {"tags": [tag], "summary": summary, "description": desc,
              "responses": responses or {"200": {"description": "OK", "content": {"application/json": {"schema": {"type": "object"}}}},
                                         "400": {"description": "Malformed request"}, "401": {"description": "Unauthorized"}}}
        if params: op["parameters"] = params
        paths.setdefault(path, {})[m] = op
def q(name, desc, required=False, typ="string"):
    return {"name": name, "in": "query", "required": required, "description": desc, "schema": {"type": typ}}
def pp(name): return {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
T = "See docs/traces.md."
add("/api/v1/traces/{trace_id}", ["get"], "native", "Trace by id: every span with parent links, events and links, the root, orphans and the critical path", T, [pp("trace_id"), q("explain", "include scan statistics", typ="boolean")],
    {"200": {"description": "The trace"}, "400": {"description": "Bad id"}, "401": {"description": "Unauthorized"}, "404": {"description": "No such trace in this tenant"}})
common = [q("start", "Unix seconds (fractions allowed)"), q("end", "Unix seconds"), q("service", "service.name equals"), q("name", "span name equals"), q("status", "unset, ok or error"),
          q("kind", "server, client, internal, producer, consumer, unspecified"),
          q("min_duration", "inclusive; 250ms, 1.5s, 1m30s or integer nanoseconds"), q("max_duration", "inclusive"), q("model", "gen_ai.request.model or gen_ai.response.model equals"), q("provider", "gen_ai.provider.name equals"), q("operation", "gen_ai.operation.name equals")]
for b in ["input_tokens", "output_tokens", "entropy_mean", "entropy_max", "hallucination"]:
    common += [q("min_" + b, "inclusive bound", typ="number"), q("max_" + b, "inclusive bound", typ="number")]
common += [q("attr", "key=value, key!=value, key=~regex, key!~regex (repeatable)"), q("span_attr", "as attr, span attributes only"), q("resource_attr", "as attr, resource attributes only"),
           q("q", "TraceQL filter (subset), ANDed with the rest"), q("explain", "true adds scan statistics", typ="boolean")]
search = common + [q("group", "traces (default) or spans"), q("sort", "start (newest first) or duration"), q("limit", "1..10000 (default 20)", typ="integer"), q("spans_per_trace", "matched spans listed per trace", typ="integer"), q("cursor", "trace search: the previous page's next_cursor")]
add("/api/v1/traces/search", ["get", "post"], "native", "Trace and span search (service, name, status, duration, attributes, GenAI fields, TraceQL)", T, search)
add("/api/v1/traces/red", ["get", "post"], "native", "RED aggregates (rate, error ratio, p50/p90/p99) per service, model, operation or name over time buckets", T, common + [q("group_by", "service (default), model, operation or name"), q("step", "bucket width (default 1m)")])
Q = "See docs/quality.md."
qrange = [q("start", "RFC 3339, Unix seconds or nanoseconds (default: an hour before end)"), q("end", "RFC 3339, Unix seconds or nanoseconds (default: now)")]
add("/api/v1/quality", ["get"], "native", "LLM quality over time per group: token entropy, hallucination index, low-confidence tokens, context expansion, cache hit ratio", Q,
    [q("metric", "token_entropy_mean, hallucination_index, low_confidence_tokens, context_expansion or cache_hit_ratio", required=True),
     q("by", "model (default), provider, operation, service, route (span attribute app.route) or attr.<key>")] + qrange +
    [q("step", "bucket width (default 60s)"), q("service", "service.name equals"), q("model", "gen_ai.request.model or gen_ai.response.model equals"), q("provider", "gen_ai.provider.name equals")])
add("/api/v1/quality/tokens", ["get"], "native", "Token-level view of one response: each token's logprob, entropy and alternatives from its stored gen_ai.response.logprobs", Q,
    [q("trace_id", "32 hex digits", required=True), q("span_id", "16 hex digits", required=True)],
    {"200": {"description": "The tokens"}, "400": {"description": "Bad ids"}, "401": {"description": "Unauthorized"}, "404": {"description": "No such span or no logprobs"}, "422": {"description": "Stored logprobs cannot be scored"}})
add("/api/v1/quality/values", ["get"], "native", "Distinct values of model, provider, operation, service or route among stored spans (template variables)", Q,
    [q("field", "model, provider, operation, service or route", required=True)] + qrange)
pfilters = qrange + [q("service", "service.name equals"), q("model", "gen_ai.request.model or gen_ai.response.model equals"), q("provider", "gen_ai.provider.name equals"), q("limit", "1..10000 (default 100)", typ="integer")]
pselect = [q("document", "only answers whose context held this document id"), q("unsupported", "true: only answers with unsupported sentences", typ="boolean"),
           q("route", "only answers served on this route (app.route / http.route of the answer or its nearest ancestor)"), q("prompt_template", "only answers made from this prompt template (its name as the evaluation records it)")]
add("/api/v1/quality/provenance", ["get"], "native", "RAG provenance: the scored answers (newest first) whose context held a document, or that have unsupported sentences, with their supporting documents and, per sentence, the supporting passage (document id, character span, coverage, retriever score) or none", Q,
    pselect + pfilters)
add("/api/v1/quality/provenance/groups", ["get"], "native", "Scored answers, answers with unsupported sentences and their share, and mean hallucination index per model, route, prompt template, service or provider", Q,
    [q("by", "model (default), route, prompt_template, service or provider")] + pselect + pfilters)
add("/api/v1/quality/documents", ["get"], "native", "Usage per retrieved document (answers it was context of, answers and sentences it supports) and per-retrieval measures (chunks per retrieval, chunks used, retriever score distribution of all, used and unused chunks)", Q, pselect[2:] + pfilters)
L = "See docs/logs.md."
lcommon = [q("start", "RFC 3339, Unix seconds or nanoseconds"), q("end", "RFC 3339, Unix seconds or nanoseconds"), q("query", "full-text query (words ANDed, \"phrase\", OR, -excluded, prefix*; docs/logs.md); alias q"), q("service", "service.name"),
           q("severity", "exact severity text"), q("min_severity", "minimum severity number or name"), q("trace_id", "hex"), q("span_id", "hex"),
           q("filter", "key=value, key!=value, key=~re, key!~re (repeatable)"), q("explain", "true adds scan statistics", typ="boolean")]
add("/api/v1/logs/search", ["get", "post"], "native", "Log search: full text with attribute, severity, trace and time filters, newest first", L,
    lcommon + [q("limit", "most lines (default 100, at most 5000)", typ="integer"), q("direction", "backward (newest first, default) or forward"), q("cursor", "the previous page's next_cursor")])
add("/api/v1/logs/histogram", ["get", "post"], "native", "Count of matching log lines over time, optionally by severity or an attribute", L, lcommon + [q("step", "bucket width"), q("group_by", "severity (or level) or an attribute key")])
TE = "Tempo HTTP API subset (https://grafana.com/docs/tempo/latest/api_docs/); see docs/traces.md."
add("/api/echo", ["get"], "tempo", "Tempo health check (answers echo)", TE, responses={"200": {"description": "echo"}})
add("/api/status/buildinfo", ["get"], "tempo", "Tempo build information", TE)
add("/api/traces/{id}", ["get"], "tempo", "Trace by id (Tempo Trace: protobuf with Accept: application/protobuf, JSON otherwise)", TE, [pp("id")],
    {"200": {"description": "The trace"}, "400": {"description": "Bad id"}, "404": {"description": "Not found"}})
add("/api/v2/traces/{id}", ["get"], "tempo", "Trace by id (TraceByIDResponse: protobuf with Accept: application/protobuf, JSON otherwise)", TE, [pp("id")],
    {"200": {"description": "The trace"}, "400": {"description": "Bad id"}, "404": {"description": "Not found"}})
add("/api/search", ["get"], "tempo", "Tempo search (q: TraceQL subset, tags, minDuration, maxDuration, limit, spss, start, end)", TE)
add("/api/search/tags", ["get"], "tempo", "Tag names", TE)
add("/api/search/tag/{tag}/values", ["get"], "tempo", "Values of one tag", TE, [pp("tag")])
add("/api/v2/search/tags", ["get"], "tempo", "Tag names by scope", TE)
add("/api/v2/search/tag/{tag}/values", ["get"], "tempo", "Typed values of one tag", TE, [pp("tag")])
LO = "Loki HTTP API subset (https://grafana.com/docs/loki/latest/reference/loki-http-api/); see docs/logs.md. Errors are plain text."
for path, methods, summary in [
    ("/loki/api/v1/query_range", ["get", "post"], "LogQL range query: log streams or a matrix"),
    ("/loki/api/v1/query", ["get", "post"], "LogQL instant query (metric queries)"),
    ("/loki/api/v1/labels", ["get", "post"], "Stream label names"),
    ("/loki/api/v1/label/{name}/values", ["get", "post"], "Values of one stream label"),
    ("/loki/api/v1/series", ["get", "post"], "Streams matching match[] selectors"),
    ("/loki/api/v1/index/stats", ["get", "post"], "Streams, chunks, entries and bytes of a selector"),
    ("/loki/api/v1/index/volume", ["get", "post"], "Log volume by label"),
    ("/loki/api/v1/index/volume_range", ["get", "post"], "Log volume by label over time"),
    ("/loki/api/v1/detected_labels", ["get"], "Detected labels"),
    ("/loki/api/v1/detected_fields", ["get"], "Detected fields"),
    ("/loki/api/v1/patterns", ["get"], "Patterns (always empty)"),
    ("/loki/api/v1/status/buildinfo", ["get"], "Loki build information")]:
    ps = [pp("name")] if "{name}" in path else None
    add(path, methods, "loki", summary, LO, ps)
