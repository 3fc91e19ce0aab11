"""Real OpenTelemetry Python SDK client for sightline's end-to-end ingest tests.

Sends LLM-shaped traces (GenAI attributes, logprobs, nested retrieval and tool spans, an
event, a link, an error status), metrics (counter, up-down counter, histogram, gauge) and
logs correlated to spans, over OTLP/HTTP or OTLP/gRPC, and writes a JSON manifest of exactly
what the exporters sent (captured at the exporter, so timestamps and ids are the real ones)
and whether each export succeeded.

Usage: otlp_client.py --transport http|grpc --endpoint HOST:PORT --run RUN_ID
                      [--token TOKEN] [--manifest PATH]
"""

import argparse
import json
import sys
import time

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    MetricExportResult,
    PeriodicExportingMetricReader,
    NumberDataPoint,
    HistogramDataPoint,
    Sum,
    Gauge,
    Histogram,
)
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.trace import Link, SpanKind, Status, StatusCode
from opentelemetry.metrics import Observation
from opentelemetry._logs import SeverityNumber


def exporters(transport, endpoint, headers):
    if transport == "http":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter

        base = f"http://{endpoint}"
        return (
            OTLPSpanExporter(endpoint=f"{base}/v1/traces", headers=headers),
            OTLPMetricExporter(endpoint=f"{base}/v1/metrics", headers=headers),
            OTLPLogExporter(endpoint=f"{base}/v1/logs", headers=headers),
        )
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter
    from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter

    return (
        OTLPSpanExporter(endpoint=endpoint, insecure=True, headers=headers),
        OTLPMetricExporter(endpoint=endpoint, insecure=True, headers=headers),
        OTLPLogExporter(endpoint=endpoint, insecure=True, headers=headers),
    )


def attr_json(value):
    """Typed attribute value, as the Rust test renders storage values."""
    if isinstance(value, bool):
        return {"bool": value}
    if isinstance(value, int):
        return {"int": value}
    if isinstance(value, float):
        return {"double": value}
    if isinstance(value, str):
        return {"str": value}
    if isinstance(value, (list, tuple)):
        return {"array": [attr_json(v) for v in value]}
    if isinstance(value, dict):
        return {"kvlist": [[k, attr_json(v)] for k, v in value.items()]}
    if value is None:
        return {"empty": None}
    raise TypeError(f"unexpected attribute value {value!r}")


def attrs_json(attrs):
    return [[k, attr_json(v)] for k, v in (attrs or {}).items()]


def hex_trace(i):
    return f"{i:032x}"


def hex_span(i):
    return f"{i:016x}"


LOGPROBS = {
    "content": [
        {"token": "The", "logprob": -0.01, "bytes": [84, 104, 101],
         "top_logprobs": [{"token": "The", "logprob": -0.01}, {"token": "A", "logprob": -4.8}]},
        {"token": " tower", "logprob": -0.9,
         "top_logprobs": [{"token": " tower", "logprob": -0.9}, {"token": " Eiffel", "logprob": -0.6}]},
        {"token": " is", "logprob": -1.6,
         "top_logprobs": [{"token": " was", "logprob": -0.4}, {"token": " is", "logprob": -1.6}]},
        {"token": " 330m", "logprob": -0.05, "top_logprobs": None},
    ]
}
DOCS = [
    {"id": "doc-1", "text": "The Eiffel Tower in Paris is 330 metres tall."},
    {"id": "doc-2", "text": "It was completed in 1889 for the World's Fair."},
]
OUTPUT = [{"role": "assistant", "parts": [{"type": "text", "content": "The tower is 330 metres tall."}],
           "finish_reason": "stop"}]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--transport", choices=["http", "grpc"], required=True)
    ap.add_argument("--endpoint", required=True)
    ap.add_argument("--run", required=True)
    ap.add_argument("--token")
    ap.add_argument("--manifest")
    args = ap.parse_args()
    headers = {"authorization": f"Bearer {args.token}"} if args.token else {}
    span_exp, metric_exp, log_exp = exporters(args.transport, args.endpoint, headers)

    manifest = {"run": args.run, "transport": args.transport, "spans": [], "metrics": [],
                "logs": [], "results": []}

    # Capture at the exporter: what was sent, and the export result.
    orig_span_export = span_exp.export

    def span_export(spans):
        r = orig_span_export(spans)
        manifest["results"].append(["spans", r == SpanExportResult.SUCCESS])
        for s in spans:
            ctx = s.context
            manifest["spans"].append({
                "trace_id": hex_trace(ctx.trace_id),
                "span_id": hex_span(ctx.span_id),
                "parent_span_id": hex_span(s.parent.span_id) if s.parent else None,
                "name": s.name,
                "kind": s.kind.value + 1,  # SDK enum is 0-based, OTLP is 1-based
                "start": s.start_time,
                "end": s.end_time,
                "status_code": {StatusCode.UNSET: 0, StatusCode.OK: 1, StatusCode.ERROR: 2}[s.status.status_code],
                "status_message": s.status.description or "",
                "service_name": s.resource.attributes.get("service.name"),
                "resource_attributes": attrs_json({k: v for k, v in s.resource.attributes.items() if k != "service.name"}),
                "scope_name": s.instrumentation_scope.name,
                "scope_version": s.instrumentation_scope.version or "",
                "attributes": attrs_json(s.attributes),
                "events": [{"name": e.name, "time": e.timestamp, "attributes": attrs_json(e.attributes)} for e in s.events],
                "links": [{"trace_id": hex_trace(l.context.trace_id), "span_id": hex_span(l.context.span_id),
                           "attributes": attrs_json(l.attributes)} for l in s.links],
            })
        return r

    span_exp.export = span_export

    orig_metric_export = metric_exp.export

    def metric_export(metrics_data, timeout_millis=10_000, **kw):
        r = orig_metric_export(metrics_data, timeout_millis=timeout_millis, **kw)
        manifest["results"].append(["metrics", r == MetricExportResult.SUCCESS])
        for rm in metrics_data.resource_metrics:
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    d = m.data
                    entry = {"name": m.name, "unit": m.unit, "points": [],
                             "scope_name": sm.scope.name, "scope_version": sm.scope.version or "",
                             "resource": attrs_json(rm.resource.attributes)}
                    if isinstance(d, Sum):
                        entry["type"] = "sum"
                        entry["monotonic"] = d.is_monotonic
                        entry["temporality"] = int(d.aggregation_temporality)
                    elif isinstance(d, Gauge):
                        entry["type"] = "gauge"
                    elif isinstance(d, Histogram):
                        entry["type"] = "histogram"
                        entry["temporality"] = int(d.aggregation_temporality)
                    else:
                        entry["type"] = type(d).__name__
                    for p in d.data_points:
                        pt = {"attributes": attrs_json(p.attributes), "time": p.time_unix_nano}
                        if isinstance(p, NumberDataPoint):
                            pt["value"] = float(p.value)
                        elif isinstance(p, HistogramDataPoint):
                            pt.update(count=p.count, sum=float(p.sum), bounds=list(p.explicit_bounds),
                                      bucket_counts=list(p.bucket_counts))
                        entry["points"].append(pt)
                    manifest["metrics"].append(entry)
        return r

    metric_exp.export = metric_export

    orig_log_export = log_exp.export

    def log_export(batch):
        r = orig_log_export(batch)
        manifest["results"].append(["logs", r.name == "SUCCESS"])
        for rec in batch:
            lr = rec.log_record
            body = lr.body
            manifest["logs"].append({
                "time": lr.timestamp,
                "observed_time": lr.observed_timestamp,
                "severity_number": lr.severity_number.value if lr.severity_number else 0,
                "severity_text": lr.severity_text or "",
                "body": attr_json(body),
                "trace_id": hex_trace(lr.trace_id) if lr.trace_id else None,
                "span_id": hex_span(lr.span_id) if lr.span_id else None,
                "attributes": attrs_json(lr.attributes),
                "service_name": rec.resource.attributes.get("service.name"),
                "scope_name": rec.instrumentation_scope.name if rec.instrumentation_scope else "",
                "event_name": lr.event_name or "",
            })
        return r

    log_exp.export = log_export

    resource = Resource.create({
        "service.name": f"llm-app-{args.run}",
        "service.instance.id": "instance-1",
        "deployment.environment.name": "test",
    })
    tp = TracerProvider(resource=resource)
    tp.add_span_processor(SimpleSpanProcessor(span_exp))
    tracer = tp.get_tracer("sightline.e2e", "1.2.3")
    lp = LoggerProvider(resource=resource)
    lp.add_log_record_processor(SimpleLogRecordProcessor(log_exp))
    logger = lp.get_logger("sightline.e2e.logs")

    with tracer.start_as_current_span("rag-pipeline", kind=SpanKind.SERVER,
                                      attributes={"http.route": "/ask", "run": args.run}) as root:
        with tracer.start_as_current_span("retrieve", attributes={
            "gen_ai.operation.name": "retrieval",
            "gen_ai.data_source.id": "wiki",
            "gen_ai.retrieval.documents": json.dumps(DOCS),
            "retrieval.top_k": 2,
        }) as retrieve:
            logger.emit(body="retrieved 2 documents", severity_number=SeverityNumber.INFO,
                        severity_text="INFO", attributes={"docs": 2})
        retrieve_ctx = retrieve.get_span_context()
        with tracer.start_as_current_span("chat gpt-4o", kind=SpanKind.CLIENT,
                                          links=[Link(retrieve_ctx, {"link.kind": "context"})],
                                          attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.response.model": "gpt-4o-2024-08-06",
            "gen_ai.usage.input_tokens": 812,
            "gen_ai.usage.output_tokens": 9,
            "gen_ai.request.temperature": 0.2,
            "gen_ai.response.finish_reasons": ["stop"],
            "gen_ai.conversation.id": "conv-42",
            "gen_ai.usage.cost": 0.0123,
            "gen_ai.retrieval.documents": json.dumps(DOCS),
            "gen_ai.output.messages": json.dumps(OUTPUT),
            "gen_ai.response.logprobs": json.dumps(LOGPROBS),
            "llm.token_count.total": 821,
        }) as chat:
            chat.add_event("gen_ai.content.chunk", {"index": 0, "final": False})
            logger.emit(body={"answer_len": 29, "cached": False, "tags": ["a", "b"]},
                        severity_number=SeverityNumber.DEBUG, severity_text="DEBUG",
                        event_name="llm.answer", attributes={"model": "gpt-4o"})
        with tracer.start_as_current_span("legacy completion", kind=SpanKind.CLIENT, attributes={
            "gen_ai.system": "anthropic",
            "gen_ai.request.model": "claude-3-5-sonnet",
            "gen_ai.usage.prompt_tokens": 100,
            "gen_ai.usage.completion_tokens": 20,
            "llm.model_name": "claude-3-5-sonnet-20241022",
        }) as legacy:
            legacy.add_event("gen_ai.choice", {"index": 0, "gen_ai.response.logprobs": json.dumps(LOGPROBS)})
        with tracer.start_as_current_span("execute_tool get_weather", kind=SpanKind.INTERNAL, attributes={
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "get_weather",
            "gen_ai.tool.call.id": "call-1",
        }) as tool:
            tool.set_status(Status(StatusCode.ERROR, "weather service timed out"))
            logger.emit(body="tool failed", severity_number=SeverityNumber.ERROR, severity_text="ERROR")
        root.set_attribute("answer.ok", True)
    logger.emit(body="uncorrelated line", severity_number=SeverityNumber.WARN, severity_text="WARN",
                attributes={"n": 1.5})

    reader = PeriodicExportingMetricReader(metric_exp, export_interval_millis=3_600_000)
    mp = MeterProvider(resource=resource, metric_readers=[reader])
    meter = mp.get_meter("sightline.e2e.metrics", "0.1")
    requests = meter.create_counter("llm.requests", unit="{request}", description="LLM calls")
    requests.add(3, {"model": "gpt-4o"})
    requests.add(2, {"model": "gpt-4o"})
    requests.add(1, {"model": "claude"})
    depth = meter.create_up_down_counter("queue.depth", unit="{item}")
    depth.add(5)
    depth.add(-2)
    usage = meter.create_histogram("gen_ai.client.token.usage", unit="{token}",
                                   explicit_bucket_boundaries_advisory=[1, 10, 100, 1000])
    for v in (5, 50, 500, 5000, 800):
        usage.record(v, {"gen_ai.token.type": "input"})
    latency = meter.create_histogram("llm.latency", unit="s")
    latency.record(0.25)
    meter.create_observable_gauge("gpu.utilization", callbacks=[lambda _o: [Observation(0.75, {"gpu": "0"})]],
                                  unit="1")
    mp.force_flush()

    tp.shutdown()
    lp.shutdown()
    mp.shutdown()

    out = json.dumps(manifest)
    if args.manifest:
        with open(args.manifest, "w") as f:
            f.write(out)
    else:
        print(out)
    ok = all(r for _, r in manifest["results"]) and manifest["results"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
