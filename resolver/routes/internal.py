"""The proxy's internal protocol: `/v1/resolve`, `/v1/wait`, `/v1/renew`, `/v1/record`
(docs/internals.md).

Resolve never holds a request: when another asker is fetching the address it answers `wait` at
once, so a resolver that does not answer quickly can be treated as down. `/v1/wait` then holds
on the event loop, woken when the address is recorded (resolver/wakeups.py; on PostgreSQL also
by other replicas' records, resolver/notify.py), with a slow store poll as the fallback; each
look at the store is one short transaction, run on the event loop where SQLite lets it take
the write lock without waiting (store/loop_writes.py) and in the threadpool otherwise, as
resolves are (resolver/resolve_tx chooses). A wait skips its first look when the token shows
nothing can have changed since the resolve looked (`_nothing_settled_since`).

Resolve is the hot path (one per proxied request), record follows every forward and wait every
single-flight sibling, so all three skip FastAPI's generic body handling (stdlib JSON parse,
then validation of the Python objects) and response encoding: the body is validated straight
from its bytes by pydantic-core and the reply is written as bytes, a cached recording's JSON
spliced in as it is (measured in process: a record call about a tenth cheaper than with the
generic handling). Each is a function from the body's bytes to the answer's bytes (`HOT_ROUTES`),
which the FastAPI route and resolver/hot_protocol.py (inside uvicorn's HTTP protocol, ahead of
all ASGI) share; both reach the store through resolver/resolve_tx, the one door. Bad input
still gets FastAPI's 422 problem+json, with the same `body.<field>` locations, and the OpenAPI
document still describes the bodies.
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any, cast

from fastapi import APIRouter, Depends, FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ValidationError
from starlette.concurrency import run_in_threadpool

from engine.cache import Address, dumps_compact
from engine.policy import Action, Decision
from engine.resolve_request import ResolveRequest
from engine.resolve_results import Resolution, Waiting
from engine.simulation import without_mark
from groundhog.protocol.wire import RenewAnswer, ResolveAnswer
from resolver import claim_renewal, lease_service, resolve_tx, wait_tokens
from resolver.auth import require_proxy
from resolver.errors import BranchLeased, Conflict
from resolver.hot_protocol import HotRoute, json_response
from resolver.record_outcomes import RecordResult
from resolver.resolution import Resolver
from resolver.schemas import RecordRequest, TicketRequest, WaitRequest
from resolver.wakeups import Mark, Wakeups

router = APIRouter(prefix="/v1", tags=["internal"], dependencies=[Depends(require_proxy)])

# Without a wake-up the store is looked at every `wait_poll_seconds` (a setting); a lapsing
# claim is looked at when it lapses, but never sooner than this.
POLL_INTERVAL_SECONDS = 0.02
CLAIM_SLACK_SECONDS = 0.01
_RESOLVE_BODY = {
    "required": True,
    "content": {"application/json": {"schema": ResolveRequest.model_json_schema()}},
}
# Record's body nests models: the document refers to them in its components, as FastAPI would
# have (`document_record_body` adds them there).
_RECORD_BODY = {
    "required": True,
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/RecordRequest"}}},
}

_WAIT_BODY = {
    "required": True,
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/WaitRequest"}}},
}

_VALIDATION_ERROR = {
    "description": "Validation Error",
    "content": {
        "application/json": {"schema": {"$ref": "#/components/schemas/HTTPValidationError"}}
    },
}


def document_record_body(app: FastAPI) -> None:
    """Put `RecordRequest` (and the models it nests) and `WaitRequest` in the OpenAPI
    document's components, where FastAPI would have put them from typed body parameters."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = generate()
            schema = RecordRequest.model_json_schema(ref_template="#/components/schemas/{model}")
            schemas = document.setdefault("components", {}).setdefault("schemas", {})
            schemas.update(schema.pop("$defs", {}))
            schemas["RecordRequest"] = schema
            schemas["WaitRequest"] = WaitRequest.model_json_schema()
            app.openapi_schema = document
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def waiting_json(waiting: Waiting, mark: Mark | None = None) -> ResolveAnswer:
    """`wait`: another asker holds the address; long-poll `/v1/wait` with the token.

    `mark`: the settle log's mark taken before the look that found the holder."""
    ask = waiting.ask
    return {
        "action": str(Action.WAIT),
        "decision": str(waiting.decision),
        "occurrence": ask.occurrence,
        "fingerprint": ask.fingerprint,
        "request_key": ask.key.hash,
        "wait": wait_tokens.encode(
            ask,
            waiting.decision,
            claim_expires=waiting.claim_expires,
            mark=mark,
            holder=waiting.holder,
        ),
        "ticket": None,
        "upstream_headers": [],
        "response": None,
    }


def resolution_json(result: Resolution, claim_seconds: float | None = None) -> ResolveAnswer:
    return cast(ResolveAnswer, _answer_fields(result, claim_seconds))


def _answer_fields(result: Resolution, claim_seconds: float | None) -> dict[str, Any]:
    ask = result.ask
    answer: dict[str, Any] = {
        "action": str(result.action),
        "decision": str(result.decision),
        "occurrence": ask.occurrence,
        "fingerprint": ask.fingerprint,
        "request_key": ask.key.hash,
        "ticket": result.ticket,
        "upstream_headers": result.upstream_headers,
        "delay_ms": result.delay_ms,  # faults (engine/faults.py): the proxy holds this long
    }
    if result.ticket is not None and claim_seconds is not None:
        answer["claim_seconds"] = claim_seconds  # renew every third of it while fetching
    if result.exchange_id is not None:
        answer["exchange_id"] = result.exchange_id
    if result.decision is Decision.PASSTHROUGH:
        # A WebSocket that left its recording goes live so (proxy/websocket_live.py).
        answer["replay_client_messages"] = ask.replay_client_messages
    answer["response"] = result.response  # last: resolution_bytes splices it
    return answer


def resolution_bytes(result: Resolution, resolver: Resolver) -> bytes:
    """`resolution_json` as JSON bytes, reusing the cached recording's encoded response."""
    answer = _answer_fields(result, resolver.claim_seconds)
    if result.response_json is None:
        return dumps_compact(answer)
    del answer["response"]  # the last key: spliced back in below, already encoded
    return dumps_compact(answer)[:-1] + b',"response":' + result.response_json + b"}"


def parse_body[Model: BaseModel](model: type[Model], raw: bytes) -> Model:
    """A request body validated from its bytes; errors located as FastAPI locates them."""
    try:
        return model.model_validate_json(raw)
    except ValidationError as error:
        issues = [{**issue, "loc": ("body", *issue["loc"])} for issue in error.errors()]
        raise RequestValidationError(issues, body=raw) from None


def parse_resolve(raw: bytes) -> ResolveRequest:
    return parse_body(ResolveRequest, raw)


@router.post("/resolve", openapi_extra={"requestBody": _RESOLVE_BODY})
async def resolve(request: Request) -> Response:
    return json_response(await resolve_reply(request.app.state, await request.body()))


async def resolve_reply(state: Any, raw: bytes) -> bytes:
    """`/v1/resolve`'s answer to a body, as bytes (every lane's one implementation)."""
    body = parse_resolve(raw)
    started = time.perf_counter()
    mark = state.wakeups.mark()  # before the store is looked at
    try:
        result = await resolve_tx.resolve(state.resolver, body)
    except BranchLeased:
        # Nothing was taken; the holder is asked to ship and release, for the retry.
        await run_in_threadpool(
            partial(
                lease_service.ask_back,
                grace=state.settings.lease_grace_seconds,
                notify=state.revocations.notify,
            ),
            state.store,
            body.tape,
            body.branch,
        )
        raise
    if isinstance(result, Waiting):
        state.metrics.single_flight_waits.inc()
        return dumps_compact(waiting_json(result, mark))
    state.metrics.observe(result.decision, time.perf_counter() - started)
    return resolution_bytes(result, state.resolver)


@router.post(
    "/wait",
    openapi_extra={"requestBody": _WAIT_BODY},
    responses={422: _VALIDATION_ERROR},
)
async def wait(request: Request) -> Response:
    """Hold until the address is recorded, the holder's claim lapses, or the window ends."""
    return json_response(await wait_reply(request.app.state, await request.body()))


async def wait_reply(state: Any, raw: bytes) -> bytes:
    """`/v1/wait`'s answer to a body, as bytes (every lane's one implementation)."""
    body = parse_body(WaitRequest, raw)
    token = wait_tokens.decode_wait(body.wait)
    waiting = Waiting(token.ask, token.decision, token.claim_expires, token.holder)
    mark = token.mark
    ask = waiting.ask
    address = (ask.tape_id, ask.key.hash, ask.occurrence, ask.fingerprint)
    wakeups: Wakeups = state.wakeups
    started = time.perf_counter()
    deadline = time.monotonic() + state.settings.resolve_wait_seconds
    first = True
    while True:
        with wakeups.listen(address) as settled:
            # Listening first: a settle from here on wakes us, one before is in the settle log.
            skip = first and _nothing_settled_since(wakeups, address, waiting, mark)
            if first:
                state.metrics.wait_first_looks.labels(look="skipped" if skip else "taken").inc()
            if not skip:
                mark = wakeups.mark()
                result = await resolve_tx.poll(state.resolver, waiting)
                if not isinstance(result, Waiting):
                    break
                waiting = result
            first = False
            left = deadline - time.monotonic()
            if left <= 0:
                return dumps_compact(waiting_json(waiting, mark))
            next_look = _next_look(waiting, state.settings.wait_poll_seconds)
            woken = await wakeups.wait(settled, min(left, next_look))
            state.metrics.wait_wakeups.labels(by="event" if woken else "timer").inc()
    state.metrics.observe(result.decision, time.perf_counter() - started)
    return resolution_bytes(result, state.resolver)


def _nothing_settled_since(
    wakeups: Wakeups, address: Address, waiting: Waiting, mark: Mark | None
) -> bool:
    """Whether a look now would surely find what the resolve found: the same holder, its
    claim not lapsed, and no settle of the address in this process since the mark (a token
    from another replica, or from before a restart, proves nothing and is looked at)."""
    if mark is None or waiting.claim_expires is None or waiting.claim_expires <= time.time():
        return False
    return not wakeups.settled_since(address, mark)


def _next_look(waiting: Waiting, poll_seconds: float) -> float:
    """Seconds until the store is worth another look without a wake-up."""
    if waiting.claim_expires is None:
        return poll_seconds
    until_lapse = waiting.claim_expires - time.time() + CLAIM_SLACK_SECONDS
    return max(POLL_INTERVAL_SECONDS, min(poll_seconds, until_lapse))


@router.post("/renew")
def renew(body: TicketRequest, request: Request) -> RenewAnswer:
    state = request.app.state
    seconds = claim_renewal.renew(state.store, body.ticket, state.resolver.claim_seconds)
    if seconds is None:
        raise Conflict(
            f"ticket {body.ticket!r} no longer holds its address (taken over, recorded, "
            "released or unknown); serve what /v1/record answers",
            ticket=body.ticket,
        )
    return {"claim_seconds": seconds}


@router.post(
    "/record",
    openapi_extra={"requestBody": _RECORD_BODY},
    responses={422: _VALIDATION_ERROR},
)
async def record(request: Request) -> Response:
    return json_response(await record_reply(request.app.state, await request.body()))


async def record_reply(state: Any, raw: bytes) -> bytes:
    """`/v1/record`'s answer to a body, as bytes (every lane's one implementation)."""
    # Every forwarded ask ends here, so like resolve it is validated and answered as bytes.
    body = parse_body(RecordRequest, raw)
    # What arrives here is the world's answer; the simulator records in process, past this.
    for part in (body.response, body.head):
        if part is not None:
            part.headers = without_mark(part.headers)
    if body.head is not None and body.kind() == "head":
        heads = await run_in_threadpool(state.recorder.head, body)
        return dumps_compact({"headers": heads})
    return recorded_bytes(state, await resolve_tx.record(state.recorder, body))


def recorded_bytes(state: Any, result: RecordResult) -> bytes:
    if result.decision == Decision.UPSTREAM_FAILED:
        state.metrics.upstream_failed.inc()
    answer: dict[str, Any] = {
        "decision": result.decision,
        "exchange_id": result.exchange_id,
        "recorded": result.recorded,
        "response": result.response,
    }
    if result.as_received is not None:
        # Only in this answer to the fetcher: the issued credentials it received live.
        answer["as_received"] = result.as_received
    return dumps_compact(answer)


# The proxy's hot path: under uvicorn answered before any ASGI machinery by
# resolver/hot_protocol.py; elsewhere by the routes above.
HOT_ROUTES: dict[str, HotRoute] = {
    "/v1/resolve": resolve_reply,
    "/v1/wait": wait_reply,
    "/v1/record": record_reply,
}
