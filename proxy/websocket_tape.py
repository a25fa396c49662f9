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

A recording the server closed is closed the same way once its last server messages are
played. A sibling whose client message differs from the recording goes live on a connection of
its own (proxy/websocket_live.py) where the resolver allows it (a passthrough, so the branch's
events say so); a sealed tape refuses it, and the sibling is closed (code 1011, the reason
naming the index). A conversation over the body limit is reported as passthrough, as a large
stream is.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from mitmproxy import ctx, http
from wsproto.utilities import generate_accept_token

from groundhog.protocol.decisions import Action
from groundhog.protocol.wire import ResolveAsk, WireResponse
from proxy.egress import upstream_proxy_url
from proxy.fail_closed import fail_closed_hooks
from proxy.live import META, RESOLVER_ERRORS
from proxy.options import host_map, seconds
from proxy.passthrough import Kind
from proxy.resolver_client import ResolverClient
from proxy.websocket_live import LiveConnectFailed, LiveConversation, Upstream
from proxy.websocket_played import CLOSE_CLIENT, PLAYING, close_client_later
from proxy.wire import response_payload

log = logging.getLogger(__name__)

RECORDING = "groundhog.websocket.recording"
# The flow's LiveConversation once its client left the recording.
LIVE = "groundhog.websocket.live"
CONNECT_TIMEOUT = "groundhog_upstream_connect_timeout"
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
    # The recording's close: (code, "server" or "client"); None when it names none.
    close: tuple[int | None, str] | None = None

    @classmethod
    def from_body(cls, body: bytes) -> ConversationPlayer:
        document = json.loads(body)
        close = document.get("close")
        recorded_close = None
        if isinstance(close, dict):
            recorded_close = (close.get("code"), str(close.get("by", "client")))
        return cls(list(document["messages"]), close=recorded_close)

    def closed_by_server(self) -> int | None:
        """The server's close code once everything recorded was played, else None."""
        if self.position < len(self.messages) or self.close is None:
            return None
        code, by = self.close
        return (code or 1000) if by == "server" else None

    def played_client_messages(self) -> list[tuple[bool, bytes]]:
        """The client messages the sibling sent so far, as recorded: (is_text, content)."""
        return [
            (message["type"] == "text", _content(message))
            for message in self.messages[: self.position]
            if message["from"] == "client"
        ]

    def played_server_messages(self, *, before_first_client: bool = False) -> int:
        """How many server messages were played: all so far, or those the server opened with."""
        count = 0
        for message in self.messages[: self.position]:
            if message["from"] == "client":
                if before_first_client:
                    break
                continue
            count += 1
        return count

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


def _play_on(flow: http.HTTPFlow, player: ConversationPlayer) -> None:
    """The server messages up to the next client message, and the server's close if that was
    the end of the recording."""
    _inject(flow, player.server_messages())
    code = player.closed_by_server()
    if code is not None:
        close_client_later(flow, code, "")


@fail_closed_hooks
class WebSocketTape:
    """The mitmproxy hooks that record a live conversation and play a recorded one."""

    def __init__(self, resolver: Callable[[], ResolverClient]) -> None:
        self.resolver = resolver
        self._relays: set[asyncio.Task[None]] = set()

    def websocket_start(self, flow: http.HTTPFlow) -> None:
        player = flow.metadata.get(PLAYING)
        if isinstance(player, ConversationPlayer):
            _play_on(flow, player)

    async def websocket_message(self, flow: http.HTTPFlow) -> None:
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
            live = flow.metadata.get(LIVE)
            if isinstance(live, LiveConversation):
                await live.send(is_text, message.content)
            elif player.matches(is_text, message.content):
                _play_on(flow, player)
            else:
                await self._go_live(flow, player, is_text, message.content)
            return
        recorder = flow.metadata.get(RECORDING)
        if isinstance(recorder, ConversationRecorder):
            recorder.add(message.from_client, is_text, message.content)

    async def _go_live(
        self, flow: http.HTTPFlow, player: ConversationPlayer, is_text: bool, content: bytes
    ) -> None:
        """The sibling left the recording: its own live connection where the resolver allows
        one (a passthrough of the upgrade), else its client is closed saying why."""
        index = player.client_index
        log.warning("%s: client message %d left the recording", flow.request.url, index)
        refused = f"groundhog: client message {index} differs from the recording"
        if upstream_proxy_url(ctx.options.mode) is not None:
            # The continuation would not go through the egress proxy: never silently around it.
            log.warning("%s: no live continuation through an egress proxy", flow.request.url)
            flow.metadata[CLOSE_CLIENT] = (DIVERGED_CODE, f"{refused}; egress proxy set")
            return
        replay = await self._passthrough(flow)
        if replay is None:
            flow.metadata[CLOSE_CLIENT] = (DIVERGED_CODE, refused)
            return
        upstream = Upstream(
            trusted_ca=ctx.options.ssl_verify_upstream_trusted_ca,
            insecure=bool(ctx.options.ssl_insecure),
            host_map=host_map(ctx.options),
        )
        try:
            live = await LiveConversation.open(
                flow.request, upstream, timeout=seconds(ctx.options, CONNECT_TIMEOUT)
            )
        except LiveConnectFailed as error:
            log.warning("%s: no live conversation: %s", flow.request.url, error)
            flow.metadata[CLOSE_CLIENT] = (DIVERGED_CODE, f"{refused}; the world refused")
            return
        earlier = player.played_client_messages() if replay else []
        # The world's answers to what the tape already answered are not passed on again.
        live.swallow = player.played_server_messages(before_first_client=not replay)
        log.warning(
            "%s: client message %d goes live; %d earlier client messages sent to the world again",
            flow.request.url,
            index,
            len(earlier),
        )
        for earlier_text, earlier_content in earlier:
            await live.send(earlier_text, earlier_content)
        await live.send(is_text, content)
        flow.metadata[LIVE] = live
        relay = asyncio.get_running_loop().create_task(
            live.relay(
                lambda text, data: _inject(flow, [(text, data)]),
                lambda code, reason: close_client_later(flow, code, reason),
            )
        )
        self._relays.add(relay)
        relay.add_done_callback(self._relays.discard)

    async def _passthrough(self, flow: http.HTTPFlow) -> bool | None:
        """Ask the resolver to let the upgrade through unrecorded: whether to send the earlier
        client messages again, or None when it refuses (a sealed tape) or cannot be asked."""
        state = flow.metadata.get(META)
        ask = getattr(state, "ask", None)
        if not isinstance(ask, dict):
            return None
        payload = cast(ResolveAsk, {**ask, "body": "", "body_too_large": True, "attempt": None})
        try:
            answer = await self.resolver().resolve(payload)
        except RESOLVER_ERRORS as error:
            log.error("%s: cannot ask to go live: %s", flow.request.url, error)
            return None
        if answer.get("action") != Action.FORWARD:
            return None
        return bool(answer.get("replay_client_messages", False))

    async def websocket_end(self, flow: http.HTTPFlow) -> None:
        live = flow.metadata.pop(LIVE, None)
        if isinstance(live, LiveConversation):
            assert flow.websocket is not None
            await live.close(flow.websocket.close_code, flow.websocket.close_reason or "")
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
