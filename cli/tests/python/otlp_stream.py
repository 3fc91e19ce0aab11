"""A long-running OpenTelemetry Python SDK client for sightline's restart-under-load test.

Creates traces of five LLM-shaped spans with the real SDK tracer, and exports each trace as
one batch through the real OTLP exporter (HTTP or gRPC, the SDK's own retry policy
included). After every export it appends one JSON line to the manifest, flushed at once:

    {"batch": i, "ok": true|false, "spans": [[trace_id_hex, span_id_hex], ...]}

so the test, which SIGKILLs and restarts the server while this runs, knows exactly which
spans were acknowledged.

Usage: otlp_stream.py --transport http|grpc --endpoint HOST:PORT --batches N --manifest PATH
                      [--pause-ms MS]
"""

import argparse
import json
import time

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.trace import SpanKind


class Collect(SpanProcessor):
    """Keeps ended spans until the caller exports them as one batch."""

    def __init__(self):
        self.spans = []

    def on_end(self, span):
        self.spans.append(span)

    def take(self):
        out, self.spans = self.spans, []
        return out


def exporter(transport, endpoint):
    if transport == "http":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter(endpoint=f"http://{endpoint}/v1/traces", timeout=10)
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter(endpoint=endpoint, insecure=True, timeout=10)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--transport", choices=["http", "grpc"], required=True)
    ap.add_argument("--endpoint", required=True)
    ap.add_argument("--batches", type=int, required=True)
    ap.add_argument("--manifest", required=True)
    ap.add_argument("--pause-ms", type=int, default=5)
    args = ap.parse_args()

    collect = Collect()
    provider = TracerProvider(resource=Resource.create({"service.name": "restart-client"}))
    provider.add_span_processor(collect)
    tracer = provider.get_tracer("sightline.e2e.restart")
    exp = exporter(args.transport, args.endpoint)

    with open(args.manifest, "w", encoding="utf-8") as out:
        for i in range(args.batches):
            with tracer.start_as_current_span("chat", kind=SpanKind.SERVER) as root:
                root.set_attribute("batch", i)
                with tracer.start_as_current_span("retrieve") as s:
                    s.set_attribute("retrieval.documents", 3)
                with tracer.start_as_current_span("chat gpt-4o", kind=SpanKind.CLIENT) as s:
                    s.set_attribute("gen_ai.operation.name", "chat")
                    s.set_attribute("gen_ai.request.model", "gpt-4o")
                    s.set_attribute("gen_ai.usage.input_tokens", 100 + i)
                    s.set_attribute("gen_ai.usage.output_tokens", 20 + i % 7)
                with tracer.start_as_current_span("execute_tool search"):
                    pass
                with tracer.start_as_current_span("guardrail"):
                    pass
            spans = collect.take()
            ok = exp.export(spans) == SpanExportResult.SUCCESS
            ids = [
                [format(s.context.trace_id, "032x"), format(s.context.span_id, "016x")]
                for s in spans
            ]
            out.write(json.dumps({"batch": i, "ok": ok, "spans": ids}) + "\n")
            out.flush()
            time.sleep(args.pause_ms / 1000.0)
    exp.shutdown()


if __name__ == "__main__":
    main()
