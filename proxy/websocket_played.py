"""The WebSocket layer of a conversation served from the tape: it never touches the world.

A replayed conversation's `101` is the proxy's own answer, so there is no server connection;
mitmproxy's `WebsocketLayer` still relays every client frame (and the closing handshake) to one
and crashes on the connection it never opened (`KeyError: Server(…)`). This subclass drops each
command addressed to the server side, and closes the client with the code and reason the
addon left in `flow.metadata[CLOSE_CLIENT]` (a sibling that left the recording), so the client
learns why rather than waiting for answers that will not come. Everything else — framing,
deflate, injected server messages, hooks — is mitmproxy's, unchanged.
"""

from __future__ import annotations

import wsproto.events
from mitmproxy.proxy import commands, events, layer
from mitmproxy.proxy.layers.websocket import WebsocketEndHook, WebsocketLayer

CLOSE_CLIENT = "groundhog.websocket.close-client"
# The flow's ConversationPlayer (proxy/websocket_tape.py): its presence selects this layer.
PLAYING = "groundhog.websocket.playing"


class PlayedWebsocketLayer(WebsocketLayer):
    def relay_messages(self, event: events.Event) -> layer.CommandGenerator[None]:
        for command in super().relay_messages(event):
            connection = getattr(command, "connection", None)
            if (
                isinstance(command, (commands.SendData, commands.CloseConnection))
                and connection is self.context.server
            ):
                continue
            yield command
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
