"""The resolver's FastAPI application factory.

`create_app(settings)` wires the store, the resolve/record services, metrics, error handlers and
one router per area. Nothing is built at import time, so tests and the CLI can run several apps
with different databases side by side.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI
from starlette.concurrency import run_in_threadpool

from engine import failpoints
from resolver import notify, ui
from resolver.api_docs import install_api_docs
from resolver.auth import check_proxy
from resolver.capabilities import BranchCapabilities, Capabilities
from resolver.deployment_key import load_or_create_key, make_private_dir, parse_key
from resolver.disk import DiskReserve
from resolver.echoes import EchoBook
from resolver.hot_protocol import protocol_for
from resolver.limits import BodyLimit
from resolver.metrics import Metrics
from resolver.problem_handlers import install_error_handlers
from resolver.recording import Recorder
from resolver.resolution import Resolver
from resolver.resolve_tx.units import loop_writer_for
from resolver.routes import (
    branches,
    diff,
    health,
    inspect,
    internal,
    tapes,
    transfer,
    tunnels,
    verify,
)
from resolver.routes import leases as lease_routes
from resolver.settings import Settings, load_settings
from resolver.wakeups import Wakeups
from services.ca import ensure_ca
from store.db import open_store

logger = logging.getLogger(__name__)


async def _create_ca(settings: Settings) -> None:
    """Create the deployment's CA before serving, so a proxy started alongside finds it.

    A CA directory that cannot be written is logged, not fatal: the admin API still works and
    `/v1/ca.pem` answers a problem naming the directory until it is fixed.
    """
    ca_dir = Path(settings.ca_dir or settings.data_dir / "ca")
    try:
        await run_in_threadpool(ensure_ca, ca_dir)
    except Exception as error:  # mitmproxy and the OS raise assorted errors here
        logger.error("could not create a CA in %s: %s; check GROUNDHOG_CA_DIR", ca_dir, error)


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or load_settings()
    make_private_dir(Path(settings.data_dir))
    failpoints.arm(settings.failpoints)  # crash-injection tests only; "" arms nothing
    redaction_key = (
        parse_key(settings.redaction_key.get_secret_value(), "GROUNDHOG_REDACTION_KEY")
        if settings.redaction_key
        else load_or_create_key(Path(settings.redaction_key_file or ""))
    )
    store = open_store(
        settings.database_url,
        migrate_schema=settings.migrate_on_start,
        sqlite_synchronous=settings.sqlite_synchronous,
    )

    loop_writer = loop_writer_for(store, enabled=settings.resolve_on_event_loop)
    wakeups = Wakeups()
    listener = None
    if store.engine.dialect.name == "postgresql":
        listener = notify.Listener(store.engine, wakeups.notify)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        await _create_ca(settings)
        if listener is not None:
            listener.start()
        yield
        if listener is not None:
            listener.stop()
        if loop_writer is not None:
            loop_writer.close()
        store.dispose()

    # /docs is served with local assets (api_docs); ReDoc would load from a CDN, so it is off.
    app = FastAPI(
        title="Groundhog resolver",
        version="0.1.0",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.store = store
    app.state.metrics = Metrics()
    app.state.metrics.waiting.set_function(wakeups.blocked)
    if listener is not None:
        app.state.metrics.listener_up.set_function(lambda: float(listener.listening.is_set()))
    app.state.wakeups = wakeups
    echoes = EchoBook()
    app.state.resolver = Resolver(
        store,
        max_body_bytes=settings.max_body_bytes,
        claim_seconds=settings.claim_seconds,
        redaction_key=redaction_key,
        echoes=echoes,
        reserve=DiskReserve(settings.database_url, settings.disk_reserve_bytes or 0),
        loop_writer=loop_writer,
        # An app built in process (tests) listens nowhere itself: python -m resolver chooses.
        capabilities=Capabilities(
            redaction_key, default=settings.branch_capabilities or BranchCapabilities.OPTIONAL
        ),
    )
    app.state.recorder = Recorder(
        store,
        max_body_bytes=settings.max_body_bytes,
        claim_seconds=settings.claim_seconds,
        echoes=echoes,
        on_settled=app.state.wakeups.notify,
        keep=app.state.resolver.keep,
        loop_writer=loop_writer,
        redaction_key=app.state.resolver.redaction_key,
    )
    install_error_handlers(app)
    app.add_middleware(BodyLimit, max_body_bytes=settings.max_body_bytes)
    app.state.revocations = lease_routes.Revocations()
    for module in (
        health,
        tapes,
        branches,
        internal,
        lease_routes,
        tunnels,
        inspect,
        diff,
        transfer,
        verify,
    ):
        app.include_router(module.router)
    app.include_router(ui.router)
    internal.document_record_body(app)
    install_api_docs(app)
    logger.info("resolver ready on %s", store.engine.url.render_as_string(hide_password=True))
    return app


def uvicorn_protocol(app: FastAPI) -> type[asyncio.Protocol]:
    """The HTTP protocol to serve `app` with: uvicorn's, answering the proxy's hot routes
    itself (resolver/hot_protocol.py) with the internal routes' functions and guard."""
    max_body_bytes = app.state.settings.max_body_bytes
    return protocol_for(app, internal.HOT_ROUTES, guard=check_proxy, max_body_bytes=max_body_bytes)
