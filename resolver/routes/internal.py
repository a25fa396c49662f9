"""The proxy's internal protocol: `POST /v1/resolve` and `POST /v1/record` (docs/internals.md).

Resolve is async only so that single-flight waiting is a cheap poll on the event loop; each
store access runs in the threadpool as one short transaction.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from resolver.auth import require_proxy
from resolver.errors import ResolveTimeout
from resolver.resolution import Resolution, Waiting
from resolver.schemas import RecordRequest, ResolveRequest

router = APIRouter(prefix="/v1", tags=["internal"], dependencies=[Depends(require_proxy)])

POLL_INTERVAL_SECONDS = 0.02


def resolution_json(result: Resolution) -> dict[str, Any]:
    ask = result.ask
    return {
        "action": str(result.action),
        "decision": str(result.decision),
        "occurrence": ask.occurrence,
        "fingerprint": ask.fingerprint,
        "request_key": ask.key.hash,
        "ticket": result.ticket,
        "upstream_headers": result.upstream_headers,
        "response": result.response,
    }


@router.post("/resolve", response_class=JSONResponse)
async def resolve(body: ResolveRequest, request: Request) -> JSONResponse:
    state = request.app.state
    started = time.perf_counter()
    result = await run_in_threadpool(state.resolver.resolve, body)
    if isinstance(result, Waiting):
        state.metrics.single_flight_waits.inc()
        deadline = time.monotonic() + state.settings.resolve_wait_seconds
        while isinstance(result, Waiting):
            if time.monotonic() > deadline:
                ask = result.ask
                raise ResolveTimeout(
                    f"waited {state.settings.resolve_wait_seconds:.0f}s for another asker to "
                    "record this address; nothing was sent upstream",
                    tape=ask.tape_name,
                    branch=ask.branch,
                    request_key=ask.key.readable,
                    occurrence=ask.occurrence,
                    fingerprint=ask.fingerprint,
                )
            await asyncio.sleep(POLL_INTERVAL_SECONDS)
            result = await run_in_threadpool(state.resolver.poll, result)
    state.metrics.observe(result.decision, time.perf_counter() - started)
    # Rendered directly: the answer is plain JSON already, and FastAPI's encoder is slow.
    return JSONResponse(resolution_json(result))


@router.post("/record")
def record(body: RecordRequest, request: Request) -> dict[str, Any]:
    result = request.app.state.recorder.record(body)
    return {
        "decision": result.decision,
        "exchange_id": result.exchange_id,
        "response": result.response,
    }
