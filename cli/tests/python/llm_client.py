"""The real `openai` SDK, instrumented by a real OpenTelemetry instrumentation library,
exporting OTLP/HTTP to a running Sightline, against the loopback fake in `fake_openai.py`.

    python llm_client.py LIBRARY OTLP_ENDPOINT

LIBRARY is `openinference` (openinference-instrumentation-openai), `openai-v2`
(opentelemetry-instrumentation-openai-v2, content captured on spans with the latest GenAI
conventions) or `openinference-rag` (a RAG pipeline: a LangChain in-memory retriever with a
fake embedding, instrumented by openinference-instrumentation-langchain, then the openai SDK
instrumented by openinference-instrumentation-openai, both under one request span, as a web
framework's instrumentation would make it; the retriever and the chat span are separate spans),
`openai-v2-logprobs` (openai-v2 with the SDK's HTTP client from
`clients/python/sightline_logprobs.py`, which records the logprobs the library does not),
`openlit` (`openlit.init`, which reuses the application's tracer provider; its events go to
the same OTLP endpoint as log records) or `openlit-logprobs` (OpenLIT with that HTTP client;
OpenLIT needs openai < 3, so these two run in the venv of `requirements-openlit.txt`),
`openai-v2-events-rag` (the RAG pipeline with openai-v2 instead of OpenInference for the chat
call, content captured as log records only: `EVENT_ONLY`, exported over OTLP/HTTP logs) or
`openai-v2-tools` (openai-v2 with content on spans; the conversation holds a tool call and its
result, and no retriever runs), `openllmetry` (OpenLLMetry's opentelemetry-instrumentation-openai),
`openllmetry-logprobs` (with the logprobs hook) or `openllmetry-tools` (with the tool call). Two chat completions are made with `logprobs=True, top_logprobs=3`: one whose
answer is grounded in the test's documents, one that contradicts them. The RAG pipelines run
under a request span with `http.route` `/ask`, and `openinference-rag` makes its call inside
OpenInference's `using_prompt_template` (template `RAG_TEMPLATE`, version `v1`). Prints one JSON line:
`{"calls": [{"trace_id", "span_id", "answer", "logprobs": [{"token", "logprob", "top": [..]}]}]}`
with the ids of the LLM span each call produced (read from an in-memory exporter next to the
OTLP one) and the logprobs the SDK received.
"""

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time

LIBRARY, ENDPOINT = sys.argv[1], sys.argv[2]
RAG_TEMPLATE = "Answer from the retrieved context.\n{context}"
if LIBRARY.startswith("openai-v2"):
    os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = (
        "EVENT_ONLY" if LIBRARY == "openai-v2-events-rag" else "SPAN_ONLY"
    )

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

retriever = None
if LIBRARY in ("openinference", "openinference-rag"):
    from openinference.instrumentation.openai import OpenAIInstrumentor

    OpenAIInstrumentor().instrument(tracer_provider=provider)
if LIBRARY in ("openinference-rag", "openai-v2-events-rag"):
    from langchain_core.documents import Document
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.vectorstores import InMemoryVectorStore
    from openinference.instrumentation.langchain import LangChainInstrumentor

    LangChainInstrumentor().instrument(tracer_provider=provider)
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=64))
    store.add_documents(
        [
            Document(id="eiffel", page_content="The Eiffel Tower is 330 metres tall and stands in Paris."),
            Document(id="louvre", page_content="The Louvre is the most visited museum in the world."),
        ]
    )
    retriever = store.as_retriever(search_kwargs={"k": 2})
log_provider = None
if LIBRARY.startswith("openlit") or LIBRARY == "openai-v2-events-rag":
    from opentelemetry._logs import set_logger_provider
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor

    # As a user configures it: GenAI events are log records correlated to the chat span,
    # exported to the same OTLP endpoint.
    log_provider = LoggerProvider(resource=provider.resource)
    log_provider.add_log_record_processor(
        SimpleLogRecordProcessor(OTLPLogExporter(endpoint=f"{ENDPOINT}/v1/logs"))
    )
    set_logger_provider(log_provider)
if LIBRARY.startswith("openai-v2"):
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    OpenAIInstrumentor().instrument(tracer_provider=provider, logger_provider=log_provider)
if LIBRARY.startswith("openllmetry"):
    from opentelemetry.instrumentation.openai import OpenAIInstrumentor

    OpenAIInstrumentor().instrument(tracer_provider=provider)
if LIBRARY.startswith("openlit"):
    import openlit

    # No network here: a local (empty) price list instead of OpenLIT's download.
    no_pricing = os.path.join(tempfile.mkdtemp(), "pricing.json")
    with open(no_pricing, "w") as f:
        f.write("{}")
    # As a user configures it: OpenLIT reuses the application's tracer and logger providers
    # and sends its metrics to the same OTLP endpoint.
    openlit.init(
        otlp_endpoint=ENDPOINT,
        application_name=f"rag-{LIBRARY}",
        disable_batch=True,
        pricing_json=no_pricing,
    )
KNOWN = (
    "openinference",
    "openinference-rag",
    "openai-v2",
    "openai-v2-logprobs",
    "openai-v2-events-rag",
    "openai-v2-tools",
    "openllmetry",
    "openllmetry-logprobs",
    "openllmetry-tools",
    "openlit",
    "openlit-logprobs",
)
if LIBRARY not in KNOWN:
    sys.exit(f"unknown library {LIBRARY}")

import openai  # noqa: E402

here = os.path.dirname(os.path.abspath(__file__))
port_file = os.path.join(tempfile.mkdtemp(), "port")
fake = subprocess.Popen(
    [sys.executable, os.path.join(here, "fake_openai.py"), port_file], stdout=subprocess.DEVNULL
)
try:
    deadline = time.time() + 30
    while not (os.path.exists(port_file) and open(port_file).read()):
        if time.time() > deadline:
            sys.exit("the fake OpenAI server did not start")
        time.sleep(0.05)
    port = open(port_file).read()
    extra = {}
    if LIBRARY.endswith("-logprobs"):
        sys.path.insert(0, os.path.join(here, "..", "..", "..", "clients", "python"))
        import sightline_logprobs

        extra["http_client"] = sightline_logprobs.http_client()
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="test-key", **extra)
    calls = []
    for question in ["How tall is the Eiffel Tower?", "Please contradict: how tall is it?"]:
        seen.clear()
        with trace.get_tracer("web").start_as_current_span(
            "POST /ask", attributes={"http.route": "/ask", "http.request.method": "POST"}
        ):
            context = "Answer from the retrieved context."
            messages = [{"role": "user", "content": question}]
            if retriever is not None:
                docs = retriever.invoke(question)
                context = RAG_TEMPLATE.format(context="\n".join(d.page_content for d in docs))
            if LIBRARY.endswith("-tools"):
                context = "Answer from the tool results."
                call = {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "landmark_facts", "arguments": '{"name": "Eiffel Tower"}'},
                }
                messages += [
                    {"role": "assistant", "content": None, "tool_calls": [call]},
                    {
                        "role": "tool",
                        "tool_call_id": "call_1",
                        "content": "The Eiffel Tower is 330 metres tall and stands in Paris.",
                    },
                ]
            messages.insert(0, {"role": "system", "content": context})
            template = contextlib.nullcontext()
            if LIBRARY == "openinference-rag":
                from openinference.instrumentation import using_prompt_template

                template = using_prompt_template(
                    template=RAG_TEMPLATE, variables={"context": "..."}, version="v1"
                )
            with template:
                r = client.chat.completions.create(
                    model="gpt-4o", messages=messages, logprobs=True, top_logprobs=3
                )
        llm = [s for s in seen.get_finished_spans() if s.attributes.get("gen_ai.request.model") == "gpt-4o" or s.attributes.get("openinference.span.kind") == "LLM"]
        if len(llm) != 1:
            sys.exit(f"expected one LLM span per call, got {len(llm)}")
        ctx = llm[0].get_span_context()
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
    if log_provider is not None:
        log_provider.shutdown()
    print(json.dumps({"calls": calls}))
finally:
    fake.kill()
