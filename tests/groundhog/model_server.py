"""A mock OpenAI-compatible chat-completions server on loopback, for the framework tests.

An integration test must drive the model turn the way the framework does — through the real
openai SDK — or it proves nothing about a rollout that talks to a model and to the world. The
server answers `POST /v1/chat/completions` with a `chat.completion` whose text is a fresh
random token on every call (a sampled model: no two rollouts answer alike), and keeps the
requests it was sent, so a test can show that the model turn never went through Groundhog.
A request with `"stream": true` (verifiers' interception relays the harness's turn that way) is
answered as server-sent `chat.completion.chunk` events ending in `data: [DONE]`.
"""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.groundhog.upstream import send_json
from tests.support.threaded_server import ThreadedServer


@dataclass
class ModelServer:
    url: str  # the OpenAI base URL, ending in /v1
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)  # names lowercased
    lock: threading.Lock = field(default_factory=threading.Lock)


def _handler(state: ModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            if self.path != "/v1/chat/completions":
                self.send_error(404)
                return
            asked = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with state.lock:
                state.requests.append(asked)
                state.headers.append({k.lower(): v for k, v in self.headers.items()})
            message = {"role": "assistant", "content": f"answer {secrets.token_hex(8)}"}
            if asked.get("stream"):
                self._stream(asked["model"], message["content"])
                return
            send_json(
                self,
                {
                    "id": f"chatcmpl-{secrets.token_hex(6)}",
                    "object": "chat.completion",
                    "created": 0,
                    "model": asked["model"],
                    "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
                },
            )

        def _stream(self, model: str, content: str) -> None:
            base = {"id": f"chatcmpl-{secrets.token_hex(6)}", "object": "chat.completion.chunk",
                    "created": 0, "model": model}  # fmt: skip
            chunks = [
                {**base, "choices": [{"index": 0, "delta": {"role": "assistant",
                                                            "content": content}}]},
                {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                 "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}},
            ]  # fmt: skip
            body = b"".join(f"data: {json.dumps(chunk)}\n\n".encode() for chunk in chunks)
            body += b"data: [DONE]\n\n"
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return

    return Handler


@contextmanager
def serving_model() -> Iterator[ModelServer]:
    """The mock model on an ephemeral 127.0.0.1 port, for the duration of the block."""
    state = ModelServer(url="")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    state.url = f"http://127.0.0.1:{server.server_port}/v1"
    with ThreadedServer(server):
        yield state
