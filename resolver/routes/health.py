"""Liveness, Prometheus metrics, the deployment's CA certificate and its proxy's address.

`/v1/ca.pem` lets workers trust the proxy's interception CA without copying files between pods;
the resolver creates the CA in `ca_dir` if absent so proxy and resolver share one per deployment.
The private key is never served.
"""

from __future__ import annotations

import logging
from pathlib import Path

from fastapi import APIRouter, Depends, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy import func, select

from engine.policy import LIVE_DECISIONS
from resolver.auth import require_admin
from resolver.errors import ResolverError
from resolver.signals import fork_rates_from_tallies
from services.ca import ensure_ca
from store import signals
from store.db import transaction
from store.models import Exchange, Tape

logger = logging.getLogger(__name__)

router = APIRouter(tags=["health"])


class CertificateUnavailable(ResolverError):
    status, slug, title = 500, "ca-unavailable", "CA certificate unavailable"


@router.get("/healthz")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/v1/info")
def info(request: Request) -> dict[str, str | None]:
    """What a client needs to know about this deployment: the proxy its workers should use."""
    return {"proxy_url": request.app.state.settings.proxy_url}


# Tape names are the operator's business: with an admin token set, scraping needs it too.
@router.get("/metrics", dependencies=[Depends(require_admin)])
def metrics(request: Request) -> Response:
    state = request.app.state
    with transaction(state.store.read) as session:
        query = (
            select(Tape.name, func.count(Exchange.id))
            .join(Exchange, Exchange.tape_id == Tape.id, isouter=True)
            .group_by(Tape.name)
        )
        for name, count in session.execute(query):
            state.metrics.tape_exchanges.labels(tape=name).set(count)
        tallies = [
            (t.tape_id, t.parent, t.decision, t.is_read, t.count)
            for t in signals.fork_tallies(session=session)
        ]
        live = frozenset(str(decision) for decision in LIVE_DECISIONS)
        state.metrics.set_fork_signals(fork_rates_from_tallies(tallies, live))
    return Response(generate_latest(state.metrics.registry), media_type=CONTENT_TYPE_LATEST)


@router.get("/v1/ca.pem")
def ca_pem(request: Request) -> Response:
    ca_dir = Path(request.app.state.settings.ca_dir)
    try:
        certificate = ensure_ca(ca_dir)
        return Response(certificate.read_bytes(), media_type="application/x-pem-file")
    except Exception as error:  # mitmproxy and the OS raise assorted errors here
        raise CertificateUnavailable(
            f"could not create or read a CA in {str(ca_dir)!r}: {error}; check GROUNDHOG_CA_DIR"
        ) from error
