"""WebSocket conversations on the tape: recorded once, replayed to siblings that say the same.

A WebSocket is not one exchange: after the upgrade, client and server trade messages. Relayed
as passthrough, every branch gets its own live stream, so tools that talk over WebSocket get no
common random numbers. Here a conversation is stored at the address of its upgrade request
(a read, so fingerprints apply as to any read): its status-101 head, and as body the sequence
of messages — each client message (index, kind, content) followed by the server messages that
came after it — and how it closed. A sibling asking the same address is answered `101` by the
proxy itself (its own `Sec-WebSocket-Accept`), is sent the server messages the recording opened
with, and for each client message equal to the recorded one at that index, the server
messages that followed it: no connection reaches the world.

Not yet: a sibling whose client message differs from the recording is closed (code 1011, the
reason naming the index) rather than given a live connection of its own; a recorded
server-initiated close is not replayed (the replayed connection stays open until the client
closes it). A conversation over the body limit is reported as passthrough, as a large stream is.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mitmproxy import ctx, http
from wsproto.utilities import generate_accept_token

from groundhog.protocol.wire import WireResponse
from proxy.live import RESOLVER_ERRORS
from proxy.passthrough import Kind
from proxy.resolver_client import ResolverClient
from proxy.websocket_played import CLOSE_CLIENT, PLAYING
from proxy.wire import response_payload

log = logging.getLogger(__name__)

RECORDING = "groundhog.websocket.recording"
CONVERSATION_MEDIA = "application/vnd.groundhog.websocket-conversation+json"
# A sibling that leaves the recording: "internal error" (the server side cannot go on).
DIVERGED_CODE = 1011


def is_upgrade(request: http.Request) -> bool:
    return request.headers.get("upgrade", "").lower() == "websocket"


def _message(from_client: bool, is_text: bool, content: bytes) -> dict[str, Any]:
    return {
        "from": "client" if from_client else "server",
        "type": "text" if is_text else "binary",
        "content": content.decode("utf-8") if is_text else base64.b64encode(content).decode(),
    }


def _content(message: dict[str, Any]) -> bytes:
    if message["type"] == "text":
        return str(message["content"]).encode("utf-8")
    return base64.b64decode(message["content"])


@dataclass
class ConversationRecorder:
    """The messages of one live conversation, in order, within the body limit."""

    ticket: str
    limit: int
    messages: list[dict[str, Any]] = field(default_factory=list)
    size: int = 0
    over_limit: bool = False

    def add(self, from_client: bool, is_text: bool, content: bytes) -> None:
        self.size += len(content)
        if self.size > self.limit:
            self.over_limit = True
            self.messages.clear()
            return
        if not self.over_limit:
            self.messages.append(_message(from_client, is_text, content))

    def body(self, close_code: int | None, closed_by_client: bool | None) -> bytes:
        document = {
            "messages": self.messages,
            "close": {"code": close_code, "by": "client" if closed_by_client else "server"},
        }
        return json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode()


@dataclass
class ConversationPlayer:
    """A recorded conversation served to a sibling, one client message at a time."""

    messages: list[dict[str, Any]]
    position: int = 0
    client_index: int = 0

    @classmethod
    def from_body(cls, body: bytes) -> ConversationPlayer:
        return cls(list(json.loads(body)["messages"]))

    def server_messages(self) -> list[tuple[bool, bytes]]:
        """The server messages from here to the next client message: (is_text, content)."""
        found = []
        while self.position < len(self.messages):
            message = self.messages[self.position]
            if message["from"] == "client":
                break
            found.append((message["type"] == "text", _content(message)))
            self.position += 1
        return found

    def matches(self, is_text: bool, content: bytes) -> bool:
        """Whether the client's next message is the recorded one (and, if so, step past it)."""
        if self.position >= len(self.messages):
            return False
        expected = self.messages[self.position]
        same = expected["from"] == "client" and (expected["type"] == "text") == is_text
        if not same or _content(expected) != content:
            return False
        self.position += 1
        self.client_index += 1
        return True


def served_upgrade(request: http.Request, recorded: http.Response) -> ConversationPlayer | None:
    """Make a recorded `101` the asker's own (its accept token, no body); the player of the
    conversation the body holds, or None when the recording is no conversation."""
    key = request.headers.get("sec-websocket-key")
    if recorded.status_code != 101 or not is_upgrade(request) or not key:
        return None
    try:
        player = ConversationPlayer.from_body(recorded.raw_content or b"")
    except (ValueError, KeyError, TypeError):
        return None
    recorded.headers["Sec-WebSocket-Accept"] = generate_accept_token(key.encode()).decode()
    recorded.headers.pop("content-length", None)
    recorded.headers.pop("content-type", None)
    recorded.content = b""
    return player


def _inject(flow: http.HTTPFlow, messages: list[tuple[bool, bytes]]) -> None:
    for is_text, content in messages:
        ctx.master.commands.call("inject.websocket", flow, True, content, is_text)


class WebSocketTape:
    """The mitmproxy hooks that record a live conversation and play a recorded one."""

    def __init__(self, resolver: Callable[[], ResolverClient]) -> None:
        self.resolver = resolver

    def websocket_start(self, flow: http.HTTPFlow) -> None:
        player = flow.metadata.get(PLAYING)
        if isinstance(player, ConversationPlayer):
            _inject(flow, player.server_messages())

    def websocket_message(self, flow: http.HTTPFlow) -> None:
        assert flow.websocket is not None
        message = flow.websocket.messages[-1]
        if message.injected:
            return
        is_text = message.is_text
        player = flow.metadata.get(PLAYING)
        if isinstance(player, ConversationPlayer):
            message.drop()  # never relayed: there is no server connection
            if not message.from_client:
                return
            if not player.matches(is_text, message.content):
                index = player.client_index
                log.warning("%s: client message %d left the recording", flow.request.url, index)
                reason = f"groundhog: client message {index} differs from the recording"
                flow.metadata[CLOSE_CLIENT] = (DIVERGED_CODE, reason)
                return
            _inject(flow, player.server_messages())
            return
        recorder = flow.metadata.get(RECORDING)
        if isinstance(recorder, ConversationRecorder):
            recorder.add(message.from_client, is_text, message.content)

    async def websocket_end(self, flow: http.HTTPFlow) -> None:
        recorder = flow.metadata.pop(RECORDING, None)
        if not isinstance(recorder, ConversationRecorder):
            return
        assert flow.response is not None and flow.websocket is not None
        record: dict[str, Any]
        if recorder.over_limit:
            record = {"ticket": recorder.ticket, "passthrough": str(Kind.TOO_LARGE)}
        else:
            body = recorder.body(flow.websocket.close_code, flow.websocket.closed_by_client)
            head = [
                (name, value)
                for name, value in flow.response.headers.fields
                if name.lower() not in (b"content-length", b"content-type")
            ]
            head.append((b"Content-Type", CONVERSATION_MEDIA.encode()))
            payload: WireResponse = response_payload(101, head, body)
            record = {"ticket": recorder.ticket, "response": payload}
        try:
            await self.resolver().record(record)
        except RESOLVER_ERRORS as error:
            log.error("could not record the conversation of %s: %s", flow.request.url, error)
