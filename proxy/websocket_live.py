"""A played WebSocket conversation continued against the world, once its client left the recording.

A sibling replaying a recorded conversation (proxy/websocket_tape.py) has no server connection:
mitmproxy answered its upgrade from the tape. When its client sends a message the recording does
not have, the tape has nothing more to say, and on an online tape the branch is owed the world's
own answer: this module opens a connection of its own to the world (the upgrade request as the
client sent it, over TLS for `wss`, trusting what mitmproxy trusts upstream), sends the client's
earlier messages again where the tape says the server needs them, and then relays: the client's
messages to the world, the world's to the client (injected into the flow). The world's answers
to the replayed messages were already served from the tape, so as many server messages as the
recording had before the divergence are not passed on. Nothing here is recorded: the address
holds the first conversation. Without this module such a sibling could only be closed.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import certifi
import wsproto
import wsproto.events
from mitmproxy import http

from proxy.errors import ProxyError
from proxy.host_map import Target, mapped

log = logging.getLogger(__name__)

# Request headers the live handshake makes itself (or that hop only to the proxy).
_HANDSHAKE_HEADERS = frozenset(
    {
        b"host",
        b"upgrade",
        b"connection",
        b"sec-websocket-key",
        b"sec-websocket-version",
        b"sec-websocket-extensions",
        b"sec-websocket-protocol",  # given as the handshake's subprotocols
        b"content-length",
        b"proxy-authorization",
        b"proxy-connection",
    }
)
READ_SIZE = 65536


class LiveConnectFailed(ProxyError):
    """The world refused the live conversation (connect, TLS or its handshake answer)."""


@dataclass
class Upstream:
    """How the live connection reaches the world: mitmproxy's upstream trust, as an SSL context."""

    trusted_ca: str | None = None
    insecure: bool = False
    # `--map-host` (proxy/host_map.py): where a host's connection really opens.
    host_map: Mapping[str, Target] = field(default_factory=dict)

    def ssl_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=self.trusted_ca or certifi.where())
        if self.insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        return context


@dataclass
class LiveConversation:
    """One branch's own live connection to the world, relaying to its client."""

    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    connection: wsproto.WSConnection
    # Server messages still to pass over: the world's answers to the replayed earlier messages.
    swallow: int = 0
    closed: bool = False
    _fragments: list[bytes | str] = field(default_factory=list)

    @classmethod
    async def open(
        cls, request: http.Request, upstream: Upstream, *, timeout: float
    ) -> LiveConversation:
        """The world's end of the conversation, its handshake done (raises LiveConnectFailed)."""
        secure = request.scheme in ("https", "wss")
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(
                    *mapped(upstream.host_map, request.host, request.port),
                    ssl=upstream.ssl_context() if secure else None,
                    server_hostname=request.host if secure else None,
                ),
                timeout,
            )
        except OSError as error:  # refused, unreachable, TLS (SSLError) or a timeout
            raise LiveConnectFailed(
                f"cannot reach {request.host}:{request.port}: {error}"
            ) from error
        connection = wsproto.WSConnection(wsproto.ConnectionType.CLIENT)
        protocols = request.headers.get_all("sec-websocket-protocol")
        handshake = wsproto.events.Request(
            host=request.host_header or request.host,
            target=request.path or "/",
            extra_headers=[
                (name, value)
                for name, value in request.headers.fields
                if name.lower() not in _HANDSHAKE_HEADERS
            ],
            subprotocols=[p.strip() for value in protocols for p in value.split(",") if p.strip()],
        )
        live = cls(reader, writer, connection)
        try:
            writer.write(connection.send(handshake))
            await asyncio.wait_for(live._accepted(), timeout)
        except (OSError, wsproto.utilities.LocalProtocolError) as error:
            writer.close()
            raise LiveConnectFailed(f"the WebSocket handshake failed: {error}") from error
        except LiveConnectFailed:
            writer.close()
            raise
        return live

    async def _accepted(self) -> None:
        while True:
            data = await self.reader.read(READ_SIZE)
            if not data:
                raise LiveConnectFailed("the world closed the connection during the handshake")
            self.connection.receive_data(data)
            for event in self.connection.events():
                if isinstance(event, wsproto.events.AcceptConnection):
                    return
                if isinstance(event, wsproto.events.RejectConnection):
                    raise LiveConnectFailed(f"the world answered the upgrade {event.status_code}")

    async def send(self, is_text: bool, content: bytes) -> None:
        if self.closed:
            return
        message: wsproto.events.Event = (
            wsproto.events.TextMessage(data=content.decode("utf-8"))
            if is_text
            else wsproto.events.BytesMessage(data=content)
        )
        try:
            self.writer.write(self.connection.send(message))
            await self.writer.drain()
        except OSError as error:  # the world's side is gone: the relay then closes the client
            log.info("sending to the live WebSocket: %s", error)
            self.writer.close()

    async def relay(
        self,
        to_client: Callable[[bool, bytes], None],
        closed_by_world: Callable[[int, str], None],
    ) -> None:
        """Pass the world's messages to the client until the world closes; then close it too."""
        code, reason = 1006, "groundhog: the world's connection ended"
        try:
            while not self.closed:
                data = await self.reader.read(READ_SIZE)
                self.connection.receive_data(data or None)
                for event in self.connection.events():
                    if isinstance(event, wsproto.events.Message):
                        self._message(event, to_client)
                    elif isinstance(event, wsproto.events.Ping):
                        self.writer.write(self.connection.send(event.response()))
                    elif isinstance(event, wsproto.events.CloseConnection):
                        code, reason = event.code, event.reason or ""
                        if (
                            self.connection.state
                            is wsproto.connection.ConnectionState.REMOTE_CLOSING
                        ):
                            self.writer.write(self.connection.send(event.response()))
                        self.closed = True
                if not data:
                    self.closed = True
        except (OSError, wsproto.utilities.RemoteProtocolError) as error:
            log.info("live WebSocket ended: %s", error)
        finally:
            self.writer.close()
        closed_by_world(code, reason)

    def _message(
        self, event: wsproto.events.Message, to_client: Callable[[bool, bytes], None]
    ) -> None:
        self._fragments.append(event.data)
        if not event.message_finished:
            return
        is_text = isinstance(event.data, str)
        parts, self._fragments = self._fragments, []
        content = (
            "".join(str(p) for p in parts).encode("utf-8")
            if is_text
            else b"".join(bytes(p) for p in parts)  # type: ignore[arg-type]
        )
        if self.swallow > 0:
            self.swallow -= 1
            return
        to_client(is_text, content)

    async def close(self, code: int | None, reason: str) -> None:
        """The client ended the conversation: end the world's side the same way."""
        if self.closed:
            return
        self.closed = True
        try:
            self.writer.write(
                self.connection.send(
                    wsproto.events.CloseConnection(code=code or 1000, reason=reason)
                )
            )
            await self.writer.drain()
        except (OSError, wsproto.utilities.LocalProtocolError) as error:
            log.info("closing the live WebSocket: %s", error)
        finally:
            self.writer.close()
