"""The WebSocket layer of a conversation served from the tape: it never touches the world.

A replayed conversation's `101` is the proxy's own answer, so there is no server connection;
mitmproxy's `WebsocketLayer` still relays every client frame (and the closing handshake) to one
and crashes on the connection it never opened (`KeyError: Server(…)`). This subclass drops each
command addressed to the server side, and closes the client with the code and reason the
addon left in `flow.metadata[CLOSE_CLIENT]` (a sibling that left a sealed recording), so the
client learns why rather than waiting for answers that will not come, or that the addon
injected as a `CloseClient` event behind the messages it injected (a recording the server
closed, or the world closing a live continuation: proxy/websocket_live.py). Everything else —
framing, deflate, injected server messages, hooks — is mitmproxy's, unchanged.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import wsproto.events
from mitmproxy import ctx, http
from mitmproxy.proxy import commands, events, layer
from mitmproxy.proxy.layers.websocket import WebsocketEndHook, WebsocketLayer

CLOSE_CLIENT = "groundhog.websocket.close-client"
# The flow's ConversationPlayer (proxy/websocket_tape.py): its presence selects this layer.
PLAYING = "groundhog.websocket.playing"


@dataclass
class CloseClient(events.MessageInjected[tuple[int, str]]):
    """Close the client with this (code, reason), after every message injected before it: the
    recording's server-initiated close, or the world's close of a live continuation."""


def close_client_later(flow: http.HTTPFlow, code: int, reason: str) -> None:
    """Queue the client's close behind the messages already injected into `flow`."""
    proxyserver = ctx.master.addons.get("proxyserver")
    if proxyserver is None:
        return
    with contextlib.suppress(ValueError):  # the client's connection is gone already
        proxyserver.inject_event(CloseClient(flow, (code, reason)))


class PlayedWebsocketLayer(WebsocketLayer):
    def relay_messages(self, event: events.Event) -> layer.CommandGenerator[None]:
        if isinstance(event, CloseClient):
            if self._handle_event != self.done:
                self.flow.metadata[CLOSE_CLIENT] = event.message
                yield from self._close_if_asked()
            return
        for command in super().relay_messages(event):
            connection = getattr(command, "connection", None)
            if (
                isinstance(command, (commands.SendData, commands.CloseConnection))
                and connection is self.context.server
            ):
                continue
            yield command
        yield from self._close_if_asked()

    def done(self, event: events.Event) -> layer.CommandGenerator[None]:
        if isinstance(event, CloseClient):
            return  # the conversation ended first (its client closed it)
        yield from super().done(event)

    def _close_if_asked(self) -> layer.CommandGenerator[None]:
        closing = self.flow.metadata.pop(CLOSE_CLIENT, None)
        if closing is None or self._handle_event == self.done:
            return
        code, reason = closing
        assert self.flow.websocket is not None
        self.flow.websocket.close_code, self.flow.websocket.close_reason = code, reason
        self.flow.websocket.closed_by_client = False
        yield self.client_ws.send2(wsproto.events.CloseConnection(code=code, reason=reason))
        yield commands.CloseConnection(self.context.client)
        yield WebsocketEndHook(self.flow)
        self.flow.live = False
        self._handle_event = self.done
