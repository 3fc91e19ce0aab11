"""The real `openai` SDK, instrumented by a real OpenTelemetry instrumentation library,
exporting OTLP/HTTP to a running Sightline, against the loopback fake in `fake_openai.py`.

    python llm_client.py LIBRARY OTLP_ENDPOINT

LIBRARY is `openinference` (openinference-instrumentation-openai) or `openai-v2`
(opentelemetry-instrumentation-openai-v2, content captured on spans with the latest GenAI
conventions). Two chat completions are made with `logprobs=True, top_logprobs=3`: one whose
answer is grounded in the test's documents, one that contradicts them. Prints one JSON line:
`{"calls": [{"trace_id", "span_id", "answer", "logprobs": [{"token", "logprob", "top": [..]}]}]}`
with the ids of the LLM span each call produced (read from an in-memory exporter next to the
OTLP one) and the logprobs the SDK received.
"""

import json
import os
import subprocess
import sys
import tempfile
import time

LIBRARY, ENDPOINT = sys.argv[1], sys.argv[2]
if LIBRARY == "openai-v2":
    os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "SPAN_ONLY"

from opentelemetry import trace  # noqa: E402
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)

provider = TracerProvider(resource=Resource.create({"service.name": f"rag-{LIBRARY}"}))
provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{ENDPOINT}/v1/traces")))
seen = InMemorySpanExporter()
provider.add_span_processor(SimpleSpanProcessor(seen))
trace.set_tracer_provider(provider)

if LIBRARY == "openinference":
    from openinference.instrumentation.openai import OpenAIInstrumentor

    OpenAIInstrumentor().instrument(tracer_provider=provider)
elif LIBRARY == "openai-v2":
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    OpenAIInstrumentor().instrument(tracer_provider=provider)
else:
    sys.exit(f"unknown library {LIBRARY}")

import openai  # noqa: E402

here = os.path.dirname(os.path.abspath(__file__))
port_file = os.path.join(tempfile.mkdtemp(), "port")
fake = subprocess.Popen([sys.executable, os.path.join(here, "fake_openai.py"), port_file])
try:
    deadline = time.time() + 30
    while not (os.path.exists(port_file) and open(port_file).read()):
        if time.time() > deadline:
            sys.exit("the fake OpenAI server did not start")
        time.sleep(0.05)
    port = open(port_file).read()
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="test-key")
    calls = []
    for question in ["How tall is the Eiffel Tower?", "Please contradict: how tall is it?"]:
        seen.clear()
        r = client.chat.completions.create(
            model="gpt-4o",
            messages=[
                {"role": "system", "content": "Answer from the retrieved context."},
                {"role": "user", "content": question},
            ],
            logprobs=True,
            top_logprobs=3,
        )
        spans = seen.get_finished_spans()
        if len(spans) != 1:
            sys.exit(f"expected one LLM span per call, got {len(spans)}")
        ctx = spans[0].get_span_context()
        calls.append(
            {
                "trace_id": format(ctx.trace_id, "032x"),
                "span_id": format(ctx.span_id, "016x"),
                "answer": r.choices[0].message.content,
                "logprobs": [
                    {
                        "token": t.token,
                        "logprob": t.logprob,
                        "top": [a.logprob for a in t.top_logprobs],
                    }
                    for t in r.choices[0].logprobs.content
                ],
            }
        )
    provider.shutdown()
    print(json.dumps({"calls": calls}))
finally:
    fake.kill()
