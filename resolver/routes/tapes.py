"""Tape routes: open (create or return), list, show, seal/unseal, delete.

Opening is idempotent so every worker of a run can open the same tape: same config answers
200, a different one 409 naming the fields that differ, so two runs never silently share a tape
recorded under other rules.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request, Response
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from groundhog.protocol.admin import TapeInfo, TapeList
from resolver.auth import require_admin
from resolver.errors import Conflict, NotFound
from resolver.routes.leases import settle_before
from resolver.schemas import TapeConfig, check_config_size, check_tape_name
from resolver.views import tape_config, tape_view
from store.db import Store, transaction
from store.models import Tape
from store.tapes import create_tape, delete_tape, get_tape, list_tapes, set_online

router = APIRouter(prefix="/v1/tapes", tags=["tapes"], dependencies=[Depends(require_admin)])


def store_of(request: Request) -> Store:
    return request.app.state.store


def find_tape(name: str, *, session: Session) -> Tape:
    check_tape_name(name)
    tape = get_tape(name, session=session)
    if tape is None:
        raise NotFound(f"tape {name!r} does not exist", tape=name)
    return tape


def _differences(existing: dict[str, Any], wanted: TapeConfig) -> list[str]:
    given = wanted.model_dump(mode="json", include=wanted.model_fields_set - {"name"})
    return sorted(name for name, value in given.items() if existing.get(name) != value)


@router.post("", status_code=201, response_model=TapeInfo)
def open_tape(config: TapeConfig, request: Request, response: Response) -> dict[str, Any]:
    store = store_of(request)
    check_config_size(config.stored_config(), request.app.state.settings.max_tape_config_bytes)
    for _attempt in range(2):
        try:
            with transaction(store.write) as session:
                existing = get_tape(config.name, session=session)
                if existing is not None:
                    differing = _differences(tape_config(existing), config)
                    if differing:
                        raise Conflict(
                            f"tape {config.name!r} exists with a different "
                            f"{', '.join(differing)}; open it with the same config or use "
                            "another name",
                            tape=config.name,
                            fields=differing,
                        )
                    response.status_code = 200
                    return tape_view(existing, session=session)
                tape = create_tape(
                    session=session,
                    name=config.name,
                    world_seed=config.world_seed,
                    mode=str(config.mode),
                    online=config.online,
                    dependency_model=str(config.dependency_model),
                    config=config.stored_config(),
                )
                return tape_view(tape, session=session)
        except IntegrityError:
            continue  # another opener created it first; the next pass compares configs
    raise Conflict(f"tape {config.name!r} could not be opened; retry", tape=config.name)


@router.get("", response_model=TapeList)
def list_all(request: Request) -> dict[str, Any]:
    with transaction(store_of(request).read) as session:
        return {"tapes": [tape_view(t, session=session) for t in list_tapes(session=session)]}


@router.get("/{tape}", response_model=TapeInfo)
def show(tape: str, request: Request) -> dict[str, Any]:
    with transaction(store_of(request).read) as session:
        return tape_view(find_tape(tape, session=session), session=session)


@router.delete("/{tape}", status_code=204)
def remove(tape: str, request: Request) -> Response:
    settle_before(request, tape)
    with transaction(store_of(request).write) as session:
        found = find_tape(tape, session=session)
        tape_id = found.id
        delete_tape(found, session=session)
    request.app.state.resolver.cache.forget_tape(tape_id)
    return Response(status_code=204)


def _set_online(name: str, request: Request, online: bool) -> dict[str, Any]:
    settle_before(request, name)  # a sealed tape's hits are answered by the resolver alone
    with transaction(store_of(request).write) as session:
        tape = set_online(find_tape(name, session=session), online, session=session)
        return tape_view(tape, session=session)


@router.post("/{tape}/seal", response_model=TapeInfo)
def seal(tape: str, request: Request) -> dict[str, Any]:
    return _set_online(tape, request, False)


@router.post("/{tape}/unseal", response_model=TapeInfo)
def unseal(tape: str, request: Request) -> dict[str, Any]:
    return _set_online(tape, request, True)
