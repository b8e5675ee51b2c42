"""A stdlib OpenAI-compatible /chat/completions server on 127.0.0.1 that answers from a Python function.

For fast, exact tests of code that talks HTTP (the judge client, the fact-checker CLI); the real
llama.cpp server is exercised by the slow tests. The function may also misbehave on purpose by
returning a :class:`FakeReply` (a 429 with ``Retry-After``, a 503, a malformed 200, non-text
content, an error body that echoes the key, a body dripped a byte at a time, a huge or gzipped
body), or block to hold requests in flight.

Request parameters are checked as OpenAI checks them: a reasoning model (``o1``, ``o3-mini``,
``gpt-5``, ...) refuses ``max_tokens`` and a ``temperature`` other than 1 and accepts
``max_completion_tokens`` and ``reasoning_effort``; other models refuse ``reasoning_effort``; no
model takes both token limits. A text answer carries ``usage`` counted in words: prompt tokens
are the words of all messages, completion tokens the answer's words plus the reasoning tokens
(:data:`REASONING_TOKENS` by effort, reasoning models only).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

REASONING_MODEL = re.compile(r"^(o\d|gpt-5)")
REASONING_TOKENS = {"minimal": 0, "low": 16, "medium": 64, "high": 256}


@dataclass(frozen=True)
class FakeReply:
    """Any HTTP reply: status, raw body (text or bytes, sent as is) and headers; ``drip`` seconds between
    the body's bytes (and the headers' too, with ``drip_headers``)."""

    status: int = 200
    body: str | bytes = ""
    headers: dict[str, str] = field(default_factory=dict)
    drip: float = 0.0
    drip_headers: bool = False  # drip the status line and headers too

    @classmethod
    def chat(cls, content, finish_reason: str | None = "stop", usage: dict | None = None) -> FakeReply:
        """A 200 chat completion whose message ``content`` is any JSON value (null, a number, a list, text)."""
        choice = {"message": {"role": "assistant", "content": content}, "finish_reason": finish_reason}
        return cls(200, json.dumps({"choices": [choice], **({"usage": usage} if usage is not None else {})}))


def _openai_error(message: str, param: str, code: str) -> FakeReply:
    error = {"message": message, "type": "invalid_request_error", "param": param, "code": code}
    return FakeReply(400, json.dumps({"error": error}))


def refusal(body: dict) -> FakeReply | None:
    """OpenAI's 400 for parameters the model does not take, or None when it takes them all."""
    reasoning = bool(REASONING_MODEL.match(body["model"]))
    if "max_tokens" in body and "max_completion_tokens" in body:
        return _openai_error(
            "max_tokens and max_completion_tokens cannot both be set", "max_tokens", "invalid_request_error"
        )
    if reasoning and "max_tokens" in body:
        return _openai_error(
            "Unsupported parameter: 'max_tokens' is not supported with this model. "
            "Use 'max_completion_tokens' instead.",
            "max_tokens",
            "unsupported_parameter",
        )
    if reasoning and body.get("temperature", 1) != 1:
        return _openai_error(
            f"Unsupported value: 'temperature' does not support {body['temperature']} with this model. "
            "Only the default (1) value is supported.",
            "temperature",
            "unsupported_value",
        )
    if not reasoning and "reasoning_effort" in body:
        return _openai_error(
            "Unsupported parameter: 'reasoning_effort' is not supported with this model.",
            "reasoning_effort",
            "unsupported_parameter",
        )
    if reasoning and body.get("reasoning_effort", "medium") not in REASONING_TOKENS:
        return _openai_error(
            f"Invalid value: '{body['reasoning_effort']}'. Supported values are: 'minimal', 'low', 'medium', 'high'.",
            "reasoning_effort",
            "invalid_value",
        )
    return None


def word_usage(body: dict, answer: str) -> dict:
    """The usage a text answer reports (words as tokens; reasoning tokens by effort for reasoning models)."""
    reasoning = REASONING_TOKENS[body.get("reasoning_effort", "medium")] if REASONING_MODEL.match(body["model"]) else 0
    prompt = sum(len(str(m.get("content", "")).split()) for m in body["messages"])
    completion = len(answer.split()) + reasoning
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "completion_tokens_details": {"reasoning_tokens": reasoning},
    }


class _Server(ThreadingHTTPServer):
    """Serves ``handler`` on a free port of 127.0.0.1 from a daemon thread, at ``url``, until :meth:`close`."""

    daemon_threads = True

    def __init__(self, handler: type[BaseHTTPRequestHandler]):
        super().__init__(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def handle_error(self, request, client_address):
        pass  # a client that went away (killed on purpose by a test) is not a server failure

    def close(self) -> None:
        self.shutdown()
        self.server_close()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real servers: the client's connection pool is used

    def log_message(self, *args):
        pass


class FakeChatServer:
    """``respond(messages, model) -> text | FakeReply``; every request body, path (with its query),
    Authorization header and client port (one per connection) is kept, and how many body bytes each reply
    got out before the client left."""

    def __init__(self, respond: Callable[[list[dict], str], str | FakeReply]):
        self.respond = respond
        self.requests: list[dict] = []
        self.paths: list[str] = []
        self.authorizations: list[str | None] = []
        self.api_keys: list[str | None] = []  # the api-key header (Azure OpenAI's)
        self.ports: list[int] = []  # the client's port: requests on one kept-alive connection share it
        self.bytes_sent: list[int] = []
        self._lock = threading.Lock()
        server = self

        class Handler(_Handler):
            def do_POST(self):  # noqa: N802 (http.server naming)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server._lock:
                    server.requests.append(body)
                    server.paths.append(self.path)
                    server.authorizations.append(self.headers.get("Authorization"))
                    server.api_keys.append(self.headers.get("api-key"))
                    server.ports.append(self.client_address[1])
                reply = refusal(body)
                if reply is None:
                    reply = server.respond(body["messages"], body["model"])
                if not isinstance(reply, FakeReply):
                    reply = FakeReply.chat(reply, usage=word_usage(body, reply))
                payload = reply.body.encode() if isinstance(reply.body, str) else reply.body
                headers = {"Content-Type": "application/json", **reply.headers, "Content-Length": str(len(payload))}
                if reply.drip_headers:
                    payload = (
                        f"HTTP/1.1 {reply.status} Whatever\r\n"
                        + "".join(f"{name}: {value}\r\n" for name, value in headers.items())
                        + "\r\n"
                    ).encode() + payload
                else:
                    self.send_response(reply.status)
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                sent = 0
                try:
                    if reply.drip:
                        for sent in range(len(payload)):
                            self.wfile.write(payload[sent : sent + 1])
                            self.wfile.flush()
                            time.sleep(reply.drip)
                    else:
                        for sent in range(0, len(payload), 1 << 16):
                            self.wfile.write(payload[sent : sent + (1 << 16)])
                        sent = len(payload)
                finally:
                    with server._lock:
                        server.bytes_sent.append(sent)

        self._httpd = _Server(Handler)
        self.base_url = f"{self._httpd.url}/v1"

    @property
    def calls(self) -> int:
        """Requests received so far (answered or not)."""
        with self._lock:
            return len(self.requests)

    def prompts(self) -> list[str]:
        """The last message of each request received, in arrival order."""
        with self._lock:
            return [body["messages"][-1]["content"] for body in self.requests]

    def close(self) -> None:
        self._httpd.close()


class ForwardProxy:
    """A plain-HTTP forward proxy on 127.0.0.1 that relays POSTs and keeps every URL it was asked for; it keeps
    the ``host:port`` of each CONNECT (an https request's tunnel) too, and refuses it with a 403."""

    def __init__(self):
        import http.client
        from urllib.parse import urlsplit

        self.urls: list[str] = []
        self.tunnels: list[str] = []
        proxy = self

        class Handler(_Handler):
            def do_CONNECT(self):  # noqa: N802 (http.server naming)
                proxy.tunnels.append(self.path)
                self.send_error(403)

            def do_POST(self):  # noqa: N802 (http.server naming)
                proxy.urls.append(self.path)  # a proxy is sent the absolute URL
                target = urlsplit(self.path)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                upstream = http.client.HTTPConnection(target.hostname, target.port, timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("proxy-connection", "host")}
                upstream.request("POST", target.path + (f"?{target.query}" if target.query else ""), body, headers)
                reply = upstream.getresponse()
                payload = reply.read()
                self.send_response(reply.status)
                for name, value in reply.getheaders():
                    if name.lower() not in ("content-length", "connection", "transfer-encoding"):
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
                upstream.close()

        self._httpd = _Server(Handler)
        self.url = self._httpd.url

    def close(self) -> None:
        self._httpd.close()
