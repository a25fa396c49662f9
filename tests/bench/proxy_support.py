"""Helpers the proxy measurement's tests share: a fixed server to load, and row numbers."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from bench.harness import free_port
from bench.proxy_stack import serve_fixed


def numbers(p50: float, rps: float) -> dict[str, float]:
    """A condition's measured numbers with the given p50 (ms) and throughput (per second)."""
    return {"requests": 100, "p50_ms": p50, "p90_ms": p50 * 2, "throughput_rps": rps}


async def with_fixed_server(body: bytes, exercise: Any) -> Any:
    """`exercise(base_url)` against `serve_fixed` answering `body` on a free loopback port."""
    port = free_port()
    listening = asyncio.Event()
    server = asyncio.create_task(serve_fixed("127.0.0.1", port, body, listening))
    listens = asyncio.create_task(listening.wait())
    try:
        # Whichever comes first: the server listens, or fails to (its error is raised here).
        await asyncio.wait([server, listens], timeout=30, return_when=asyncio.FIRST_COMPLETED)
        if server.done():
            server.result()
        assert listening.is_set(), "the fixed server did not listen within 30 s"
        return await exercise(f"http://127.0.0.1:{port}")
    finally:
        listens.cancel()
        server.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await server
