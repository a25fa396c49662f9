"""The connection pool reads the real clock; the body's consumer stays in the branch."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator

import httpx

from groundhog.real_clock import _RealClockAsyncTransport, _RealClockTransport
from groundhog.shim import counters, shim

CHUNKS = [b"one ", b"two ", b"three"]


class _PoolLikeTransport(httpx.MockTransport):
    """Reads the clock (or not) on every request and every chunk, as a keep-alive pool does."""

    def __init__(self, *, reads_clock: bool = True) -> None:
        self.reads_clock = reads_clock
        self.clock_reads: list[float] = []
        super().__init__(self._answer)

    def read_clock(self) -> None:
        if self.reads_clock:
            self.clock_reads.append(time.time())

    def _answer(self, request: httpx.Request) -> httpx.Response:
        self.read_clock()
        return httpx.Response(200, stream=_TimedStream(self))


class _TimedStream(httpx.SyncByteStream, httpx.AsyncByteStream):
    def __init__(self, transport: _PoolLikeTransport) -> None:
        self.transport = transport

    def __iter__(self) -> Iterator[bytes]:
        for chunk in CHUNKS:
            self.transport.read_clock()
            yield chunk

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in CHUNKS:
            self.transport.read_clock()
            yield chunk


def _ticks_for_one_streamed_get(transport: httpx.BaseTransport) -> tuple[int, bytes]:
    """Virtual clock ticks a branch spends on one streamed GET (httpx's own reads included)."""
    with shim(world_seed=7, branch="root"):
        start = counters()["clock_ns"]
        with (
            httpx.Client(transport=transport) as client,
            client.stream("GET", "http://127.0.0.1/x") as response,
        ):
            body = b"".join(response.iter_bytes())
        return counters()["clock_ns"] - start, body


def test_the_pools_clock_reads_do_not_move_the_branch_clock() -> None:
    quiet = _PoolLikeTransport(reads_clock=False)
    busy = _PoolLikeTransport()
    baseline, _ = _ticks_for_one_streamed_get(_RealClockTransport(quiet))
    ticks, body = _ticks_for_one_streamed_get(_RealClockTransport(busy))
    assert body == b"".join(CHUNKS)
    assert ticks == baseline
    assert len(busy.clock_reads) == 1 + len(CHUNKS)
    real_now = time.time()
    assert all(abs(read - real_now) < 3600 for read in busy.clock_reads)


def test_without_the_wrapper_the_same_reads_move_the_branch_clock() -> None:
    baseline, _ = _ticks_for_one_streamed_get(_PoolLikeTransport(reads_clock=False))
    ticks, _ = _ticks_for_one_streamed_get(_PoolLikeTransport())
    assert ticks > baseline
    with shim(world_seed=7, branch="root"):
        virtual_now = time.time()
    assert abs(virtual_now - time.time()) > 3600  # the branch's clock is another clock


def test_async_transport_reads_the_real_clock_per_chunk() -> None:
    async def ticks_for(transport: httpx.AsyncBaseTransport) -> tuple[int, bytes]:
        start = counters()["clock_ns"]
        async with (
            httpx.AsyncClient(transport=transport) as client,
            client.stream("GET", "http://127.0.0.1/x") as response,
        ):
            body = b"".join([chunk async for chunk in response.aiter_bytes()])
        return counters()["clock_ns"] - start, body

    busy = _PoolLikeTransport()
    with shim(world_seed=7, branch="root"):
        baseline, _ = asyncio.run(
            ticks_for(_RealClockAsyncTransport(_PoolLikeTransport(reads_clock=False)))
        )
        ticks, body = asyncio.run(ticks_for(_RealClockAsyncTransport(busy)))
    assert body == b"".join(CHUNKS)
    assert ticks == baseline
    assert len(busy.clock_reads) == 1 + len(CHUNKS)
    assert all(abs(read - time.time()) < 3600 for read in busy.clock_reads)
