"""A WebSocket echo server (wss) on loopback, in its own thread, for the passthrough test.

WebSockets cannot be recorded as one exchange; the test needs a real one to show they pass
through the proxy intact and are reported.
"""

from __future__ import annotations

import asyncio
import ssl
import threading
from pathlib import Path

from aiohttp import WSMsgType, web


class EchoWebSocketServer:
    def __init__(self, cert: tuple[Path, Path]) -> None:
        self.upgrades = 0
        self._tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._tls.load_cert_chain(str(cert[0]), str(cert[1]))
        self._loop = asyncio.new_event_loop()
        self._runner: web.AppRunner | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout=10):
            raise TimeoutError("the WebSocket echo server did not start")

    async def _echo(self, request: web.Request) -> web.WebSocketResponse:
        self.upgrades += 1
        socket = web.WebSocketResponse()
        await socket.prepare(request)
        async for message in socket:
            if message.type == WSMsgType.TEXT:
                await socket.send_str(f"echo:{message.data}")
        return socket

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        app = web.Application()
        app.router.add_get("/ws", self._echo)
        self._runner = web.AppRunner(app)
        self._loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=self._tls)
        self._loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    def stop(self) -> None:
        async def cleanup() -> None:
            if self._runner is not None:
                await self._runner.cleanup()

        asyncio.run_coroutine_threadsafe(cleanup(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()
