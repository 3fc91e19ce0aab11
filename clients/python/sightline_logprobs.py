"""Token logprobs on the OpenTelemetry span of an `openai` SDK call, for instrumentation
libraries that do not record them (opentelemetry-instrumentation-openai-v2, OpenLIT), so that
Sightline computes token entropy and low-confidence tokens for those spans too.

    import openai
    import sightline_logprobs

    client = openai.OpenAI(http_client=sightline_logprobs.http_client())
    client.chat.completions.create(model=..., messages=..., logprobs=True, top_logprobs=5)

An HTTP response hook runs inside the SDK call, while the instrumentation library's chat span
is the current span, and sets `gen_ai.response.logprobs` on it to the first choice's
`logprobs` (OpenAI's shape, JSON text). Only non-streaming JSON answers of `/chat/completions`
are read; anything else, or a span that is not recording, is left alone. Values over
`MAX_BYTES` are not recorded. Works with `openai` 3 (httpx2) and 1.x-2.x (httpx); needs
`opentelemetry-api`.
"""

import json

from opentelemetry import trace

#: The span attribute Sightline reads logprobs from.
KEY = "gen_ai.response.logprobs"
#: Largest logprobs text recorded (Sightline keeps attribute values up to its
#: `max_attribute_value_bytes`).
MAX_BYTES = 4 << 20


def record(response):
    """httpx response hook: records the first choice's logprobs on the current span."""
    request = response.request
    if request.method != "POST" or not request.url.path.endswith("/chat/completions"):
        return
    if "json" not in response.headers.get("content-type", ""):
        return
    span = trace.get_current_span()
    if not span.is_recording():
        return
    response.read()
    try:
        body = json.loads(response.content)
    except ValueError:
        return
    choices = body.get("choices") if isinstance(body, dict) else None
    if not choices or not isinstance(choices[0], dict):
        return
    logprobs = choices[0].get("logprobs")
    if not logprobs:
        return
    text = json.dumps(logprobs)
    if len(text) <= MAX_BYTES:
        span.set_attribute(KEY, text)


def http_client(**kwargs):
    """The `openai` SDK's default HTTP client with [`record`] added to its response hooks;
    keyword arguments go to `openai.DefaultHttpx2Client` (openai 3) or
    `openai.DefaultHttpxClient` (openai 1.x-2.x)."""
    import openai

    major = int(openai.__version__.split(".")[0])
    client = openai.DefaultHttpx2Client if major >= 3 else openai.DefaultHttpxClient
    hooks = dict(kwargs.pop("event_hooks", None) or {})
    hooks["response"] = list(hooks.get("response", [])) + [record]
    return client(event_hooks=hooks, **kwargs)
