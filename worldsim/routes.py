"""The world's public HTTP endpoints: thin adapters from Starlette requests to `World.handle`.

The routes exist so the world is a real HTTP server (the proxy must be exercised over TCP) and
documents itself in OpenAPI; all behaviour lives in `World`. Reading the body here, with a
streaming size cap, is what lets an oversized publish get a 413 without the world buffering it.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request, Response

from worldsim.config import WorldConfig
from worldsim.dispatch import world_headers
from worldsim.errors import BodyTooLarge
from worldsim.world import World, WorldRequest

router = APIRouter(tags=["world"])


# Async on purpose: FastAPI runs a plain-def dependency on its thread pool, and two thread
# hops per request were a quarter of the world's CPU in a benchmark run.
async def get_world(request: Request) -> World:
    return request.app.state.world


async def get_config(request: Request) -> WorldConfig:
    return request.app.state.config


WorldDependency = Annotated[World, Depends(get_world)]
ConfigDependency = Annotated[WorldConfig, Depends(get_config)]


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, refusing it as soon as it passes `limit` bytes."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge(
            f"the body declares {declared} bytes; the limit is {limit}", {"limit": limit}
        )
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(f"the body passed the limit of {limit} bytes", {"limit": limit})
        chunks.append(chunk)
    return b"".join(chunks)


async def serve(request: Request, world: World, config: WorldConfig) -> Response:
    body = await read_body(request, world.max_body_bytes) if request.method == "POST" else b""
    answer = world.handle(
        WorldRequest(
            method=request.method,
            path=request.scope["path"],
            query=tuple(request.query_params.multi_items()),
            body=body,
            **world_headers(request.headers),
        )
    )
    if config.sleep_latency and answer.latency_ms is not None:
        await asyncio.sleep(answer.latency_ms / 1000.0)
    return Response(
        content=answer.body,
        status_code=answer.status,
        headers=dict(answer.headers),
        media_type=answer.media_type,
    )


@router.get("/context", summary="World clock, day bucket and the reader-attention shock")
async def context(request: Request, world: WorldDependency, config: ConfigDependency) -> Response:
    return await serve(request, world, config)


@router.get("/trends", summary="Topic mentions elsewhere: exogenous, no local model")
async def trends(request: Request, world: WorldDependency, config: ConfigDependency) -> Response:
    return await serve(request, world, config)


@router.get("/search", summary="Equally relevant hits in a random order per world")
async def search(
    request: Request,
    world: WorldDependency,
    config: ConfigDependency,
    q: Annotated[str, Query(min_length=1, max_length=200)],
) -> Response:
    return await serve(request, world, config)


@router.get("/docs/{doc_id}", summary="One document from this branch's corpus")
async def read_doc(
    request: Request, world: WorldDependency, config: ConfigDependency, doc_id: str
) -> Response:
    return await serve(request, world, config)


@router.post("/sessions", status_code=201, summary="Open a session: a sandbox named by a token")
async def open_session(
    request: Request, world: WorldDependency, config: ConfigDependency
) -> Response:
    return await serve(request, world, config)


@router.post("/docs", status_code=201, summary="Publish (or revise) a brief: a write")
async def publish(request: Request, world: WorldDependency, config: ConfigDependency) -> Response:
    return await serve(request, world, config)


@router.get("/review", summary="The review of the agent's own brief (exists: false before)")
async def review(
    request: Request,
    world: WorldDependency,
    config: ConfigDependency,
    doc: Annotated[str, Query(min_length=1, max_length=64)],
) -> Response:
    return await serve(request, world, config)


@router.post(
    "/tools/{read:path}",
    summary='A read sent as a tool call: POST /tools/search {"q": …} answers GET /search?q=…',
)
async def tool_call(
    request: Request, world: WorldDependency, config: ConfigDependency, read: str
) -> Response:
    return await serve(request, world, config)


# The shop world's routes (worldsim/shop.py), served when the world is started with --world shop.
@router.get("/catalog", summary="Shop: today's items and quotes (prices move per call)")
async def catalog(request: Request, world: WorldDependency, config: ConfigDependency) -> Response:
    return await serve(request, world, config)


@router.get("/items/{item_id}", summary="Shop: one item's value and quote")
async def item(
    request: Request, world: WorldDependency, config: ConfigDependency, item_id: str
) -> Response:
    return await serve(request, world, config)


@router.get("/cart", summary="Shop: the cart, and a bundle offer for what is in it")
async def cart(request: Request, world: WorldDependency, config: ConfigDependency) -> Response:
    return await serve(request, world, config)


@router.post("/cart", status_code=201, summary="Shop: add an item to the cart (a write)")
async def add_to_cart(
    request: Request, world: WorldDependency, config: ConfigDependency
) -> Response:
    return await serve(request, world, config)


@router.post("/checkout", status_code=201, summary="Shop: place the order (a write)")
async def checkout(request: Request, world: WorldDependency, config: ConfigDependency) -> Response:
    return await serve(request, world, config)
