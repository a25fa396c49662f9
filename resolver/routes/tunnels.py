"""`POST /v1/tunnel`: the proxy asks whether a raw tunnel's bytes may go to the world.

Part of the proxy's internal protocol (docs/internals.md). The proxy asks once per tunnel whose
first bytes are neither HTTP nor TLS; without an answer it closes the tunnel. The tape's state
is read in one short read transaction; nothing is written (a raw tunnel has no address).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from resolver.ask_store import load_tape_and_branch
from resolver.auth import require_proxy
from resolver.capabilities import CAPABILITY_LENGTH
from resolver.tunnels import TunnelVerdict, decide_tunnel
from store.db import transaction

router = APIRouter(prefix="/v1", tags=["internal"], dependencies=[Depends(require_proxy)])


class TunnelRequest(BaseModel):
    tape: str = Field(min_length=1, max_length=300)
    branch: str = Field(min_length=1, max_length=2000)
    host: str = Field(min_length=1, max_length=300)
    port: int = Field(ge=1, le=65535)
    listed_by_proxy: bool = False
    # The branch capability the tunnel's CONNECT presented (resolver/capabilities.py).
    capability: str | None = Field(default=None, max_length=4 * CAPABILITY_LENGTH)


def _verdict(request: Request, body: TunnelRequest) -> TunnelVerdict:
    with transaction(request.app.state.store.read) as session:
        tape, branch = load_tape_and_branch(session, body.tape, body.branch)
        request.app.state.resolver.capabilities.check(
            tape_id=tape.id,
            tape=tape.name,
            settings=tape.settings,
            branch=branch.path,
            presented=body.capability,
        )
        return decide_tunnel(
            tape=tape.name,
            online=tape.online,
            host=body.host,
            port=body.port,
            tape_passthrough_hosts=tape.settings.passthrough_hosts,
            listed_by_proxy=body.listed_by_proxy,
        )


@router.post("/tunnel")
async def tunnel(body: TunnelRequest, request: Request) -> dict[str, Any]:
    verdict = await run_in_threadpool(_verdict, request, body)
    request.app.state.metrics.tunnels.labels(decision=str(verdict.decision)).inc()
    return {"decision": str(verdict.decision), "detail": verdict.detail}
