"""The proxy's internal protocol: `POST /v1/resolve` and `POST /v1/record` (docs/internals.md).

Resolve is async only so that single-flight waiting is a cheap poll on the event loop; each
store access runs in the threadpool as one short transaction.

Resolve is the hot path (one per proxied request), so it skips FastAPI's generic body handling
(stdlib JSON parse, then validation of the Python objects) and response encoding: the body is
validated straight from its bytes by pydantic-core and the reply is written as bytes, a cached
recording's JSON spliced in as it is. Bad input still gets FastAPI's 422 problem+json, with the
same `body.<field>` locations, and the OpenAPI document still describes the request body.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from fastapi import APIRouter, Depends, Request, Response
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from resolver.auth import require_proxy
from resolver.cache import dumps_compact
from resolver.errors import ResolveTimeout
from resolver.resolution import Resolution, Waiting
from resolver.schemas import RecordRequest, ResolveRequest

router = APIRouter(prefix="/v1", tags=["internal"], dependencies=[Depends(require_proxy)])

POLL_INTERVAL_SECONDS = 0.02
_RESOLVE_BODY = {
    "required": True,
    "content": {"application/json": {"schema": ResolveRequest.model_json_schema()}},
}


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
        "delay_ms": result.delay_ms,  # faults (resolver/faults.py): the proxy holds this long
        "response": result.response,
    }


def resolution_bytes(result: Resolution) -> bytes:
    """`resolution_json` as JSON bytes, reusing the cached recording's encoded response."""
    answer = resolution_json(result)
    if result.response_json is None:
        return dumps_compact(answer)
    del answer["response"]  # the last key: spliced back in below, already encoded
    return dumps_compact(answer)[:-1] + b',"response":' + result.response_json + b"}"


def parse_resolve(raw: bytes) -> ResolveRequest:
    """The request body, validated from its bytes; errors located as FastAPI locates them."""
    try:
        return ResolveRequest.model_validate_json(raw)
    except ValidationError as error:
        issues = [{**issue, "loc": ("body", *issue["loc"])} for issue in error.errors()]
        raise RequestValidationError(issues, body=raw) from None


@router.post("/resolve", openapi_extra={"requestBody": _RESOLVE_BODY})
async def resolve(request: Request) -> Response:
    body = parse_resolve(await request.body())
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
    return Response(resolution_bytes(result), media_type="application/json")


@router.post("/record")
def record(body: RecordRequest, request: Request) -> dict[str, Any]:
    result = request.app.state.recorder.record(body)
    return {
        "decision": result.decision,
        "exchange_id": result.exchange_id,
        "response": result.response,
    }
