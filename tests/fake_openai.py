"""A stdlib OpenAI-compatible /chat/completions server on 127.0.0.1 that answers from a Python function.

For fast, exact tests of code that talks HTTP (the judge client, the fact-checker CLI); the real
llama.cpp server is exercised by the slow tests.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeChatServer:
    """``respond(messages, model) -> reply``; every request body and Authorization header is kept."""

    def __init__(self, respond: Callable[[list[dict], str], str]):
        self.respond = respond
        self.requests: list[dict] = []
        self.authorizations: list[str | None] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server naming)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                server.authorizations.append(self.headers.get("Authorization"))
                text = server.respond(body["messages"], body["model"])
                payload = json.dumps({"choices": [{"message": {"role": "assistant", "content": text}}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
