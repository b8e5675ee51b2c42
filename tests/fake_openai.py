"""A stdlib OpenAI-compatible /chat/completions server on 127.0.0.1 that answers from a Python function.

For fast, exact tests of code that talks HTTP (the judge client, the fact-checker CLI); the real
llama.cpp server is exercised by the slow tests. The function may also misbehave on purpose by
returning a :class:`FakeReply` (a 429 with ``Retry-After``, a 503, a malformed 200, non-text
content, an error body that echoes the key), or block to hold requests in flight.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class FakeReply:
    """Any HTTP reply: status, raw body and headers."""

    status: int = 200
    body: str = ""
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def chat(cls, content, finish_reason: str | None = "stop") -> FakeReply:
        """A 200 chat completion whose message ``content`` is any JSON value (null, a number, a list, text)."""
        choice = {"message": {"role": "assistant", "content": content}, "finish_reason": finish_reason}
        return cls(200, json.dumps({"choices": [choice]}))


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # a client that went away (killed on purpose by a test) is not a server failure


class FakeChatServer:
    """``respond(messages, model) -> text | FakeReply``; every request body and Authorization header is kept."""

    def __init__(self, respond: Callable[[list[dict], str], str | FakeReply]):
        self.respond = respond
        self.requests: list[dict] = []
        self.authorizations: list[str | None] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as real servers: the client's connection pool is used

            def do_POST(self):  # noqa: N802 (http.server naming)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server._lock:
                    server.requests.append(body)
                    server.authorizations.append(self.headers.get("Authorization"))
                reply = server.respond(body["messages"], body["model"])
                if not isinstance(reply, FakeReply):
                    reply = FakeReply.chat(reply)
                payload = reply.body.encode()
                self.send_response(reply.status)
                for name, value in {"Content-Type": "application/json", **reply.headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        self._httpd = _Server(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

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
        self._httpd.shutdown()
        self._httpd.server_close()
