"""A deterministic OpenAI-compatible server on loopback, for tests with the real `openai` SDK.

`POST /v1/chat/completions` answers with `usage`, and with `logprobs` (`top_logprobs`) when the
request asks for them. The answer is chosen by the last user message: one containing
"contradict" gets an answer that contradicts the test's documents, anything else the grounded
answer. Each answer's tokens and logprobs are fixed (see `ANSWERS`), so a test can compute the
expected entropy from what was sent. Streaming is not supported (the tests do not stream).

Run: `python fake_openai.py PORT_FILE` binds a free port and writes it to PORT_FILE.
"""

import json
import math
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

GROUNDED = "The Eiffel Tower is 330 metres tall. It stands in Paris."
CONTRADICTING = "The Eiffel Tower is 912 metres tall. Napoleon built it in Berlin."


def tokens_of(text):
    """Whitespace-preserving word tokens, as a tokenizer would split them."""
    out, cur = [], ""
    for ch in text:
        if ch == " " and cur:
            out.append(cur)
            cur = ch
        else:
            cur += ch
    if cur:
        out.append(cur)
    return out


def logprobs_for(text, k):
    """Deterministic logprobs: token i has probability 0.5 + 0.45 * cos(i) (clamped), and k-1
    alternatives share the rest."""
    content = []
    for i, tok in enumerate(tokens_of(text)):
        p = min(0.97, max(0.05, 0.5 + 0.45 * math.cos(i)))
        rest = (1.0 - p) / max(1, k - 1)
        top = [{"token": tok, "logprob": math.log(p), "bytes": list(tok.encode())}]
        for j in range(1, k):
            alt = f"alt{j}"
            top.append({"token": alt, "logprob": math.log(rest), "bytes": list(alt.encode())})
        content.append(
            {"token": tok, "logprob": math.log(p), "bytes": list(tok.encode()), "top_logprobs": top}
        )
    return {"content": content, "refusal": None}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        req = json.loads(self.rfile.read(n) or b"{}")
        if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            self.send_response(404)
            self.end_headers()
            return
        last = ""
        for m in req.get("messages", []):
            if m.get("role") == "user" and isinstance(m.get("content"), str):
                last = m["content"]
        text = CONTRADICTING if "contradict" in last else GROUNDED
        choice = {
            "index": 0,
            "message": {"role": "assistant", "content": text, "refusal": None},
            "finish_reason": "stop",
            "logprobs": None,
        }
        if req.get("logprobs"):
            choice["logprobs"] = logprobs_for(text, int(req.get("top_logprobs") or 1))
        model = req.get("model", "gpt-4o")
        body = {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 1_764_000_000,
            "model": f"{model}-2024-08-06",
            "system_fingerprint": "fp_fake",
            "choices": [choice],
            "usage": {
                "prompt_tokens": 42,
                "completion_tokens": len(tokens_of(text)),
                "total_tokens": 42 + len(tokens_of(text)),
            },
        }
        raw = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(sys.argv[1], "w") as f:
        f.write(str(server.server_address[1]))
    server.serve_forever()


if __name__ == "__main__":
    main()
