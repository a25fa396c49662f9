"""httpx transports that run Groundhog's own connection handling on the real clock.

A connection pool reads the clock for keep-alive bookkeeping, and how often depends on how the
proxy framed a response; inside a shimmed branch those reads would drift sibling branches'
virtual clocks apart. The pool runs outside the branch; the consumer of the body stays in it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx

from groundhog.shim import outside_branch


class _RealClockStream(httpx.SyncByteStream):
    def __init__(self, inner: httpx.SyncByteStream) -> None:
        self._inner = inner

    def __iter__(self) -> Iterator[bytes]:
        # Outside the branch per chunk, never across a yield: the consumer runs in the branch.
        chunks = iter(self._inner)
        while True:
            with outside_branch():
                chunk = next(chunks, None)
            if chunk is None:
                return
            yield chunk

    def close(self) -> None:
        with outside_branch():
            self._inner.close()


class _RealClockAsyncStream(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream) -> None:
        self._inner = inner

    async def __aiter__(self) -> AsyncIterator[bytes]:
        chunks = self._inner.__aiter__()
        while True:
            with outside_branch():
                try:
                    chunk = await chunks.__anext__()
                except StopAsyncIteration:
                    return
            yield chunk

    async def aclose(self) -> None:
        with outside_branch():
            await self._inner.aclose()


def _rewrap(
    response: httpx.Response, stream: httpx.SyncByteStream | httpx.AsyncByteStream
) -> httpx.Response:
    return httpx.Response(
        response.status_code,
        headers=response.headers,
        stream=stream,
        extensions=response.extensions,
    )


class _RealClockTransport(httpx.BaseTransport):
    """Runs the connection pool outside the branch: its keep-alive clock reads vary with how
    the proxy framed a response, and would otherwise drift sibling branches' virtual clocks."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self._inner = inner

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        with outside_branch():
            response = self._inner.handle_request(request)
        assert isinstance(response.stream, httpx.SyncByteStream)
        return _rewrap(response, _RealClockStream(response.stream))

    def close(self) -> None:
        self._inner.close()


class _RealClockAsyncTransport(httpx.AsyncBaseTransport):
    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        with outside_branch():
            response = await self._inner.handle_async_request(request)
        assert isinstance(response.stream, httpx.AsyncByteStream)
        return _rewrap(response, _RealClockAsyncStream(response.stream))

    async def aclose(self) -> None:
        await self._inner.aclose()
