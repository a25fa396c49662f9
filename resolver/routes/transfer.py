"""Export a tape as a standalone SQLite file, import one back (DESIGN §3: a tape is portable)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import FileResponse
from pydantic import ValidationError
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool

from resolver.audit import audit_tape, refuse_unscrubbed
from resolver.auth import require_admin
from resolver.errors import BodyTooLarge, Conflict, InvalidInput
from resolver.import_scrub import scrub_imported
from resolver.redaction_report import redaction_summary
from resolver.routes.leases import settle_before
from resolver.routes.tapes import find_tape, store_of
from resolver.schemas import TapeConfig, check_config_size, check_tape_name
from resolver.views import tape_view
from store.db import transaction
from store.models import Tape
from store.transfer import DamagedTape, TransferError, export_tape, import_tape

router = APIRouter(prefix="/v1/tapes", tags=["transfer"], dependencies=[Depends(require_admin)])

SQLITE_MEDIA_TYPE = "application/vnd.sqlite3"
MAX_IMPORT_BYTES = 64 * 1024 * 1024 * 1024
# Keys an export adds to the config for people (the redaction rules applied), not settings.
EXPORT_ONLY_KEYS = frozenset({"redaction"})


def temporary_tape_path() -> Path:
    handle, name = tempfile.mkstemp(prefix="groundhog-tape-", suffix=".sqlite3")
    os.close(handle)
    return Path(name)


def remove_tape_file(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


@router.get("/{tape}/export")
def export(tape: str, request: Request, allow_unscrubbed: bool = False) -> FileResponse:
    settle_before(request, tape)
    path = temporary_tape_path()
    try:
        with transaction(store_of(request).read) as session:
            found = find_tape(tape, session=session)
            if not allow_unscrubbed:  # an export carries the tape to others: audit it first
                refuse_unscrubbed(found.name, audit_tape(found.id, found.settings, session=session))
            # The file says which redaction rules applied (names and counts, no values).
            summary = redaction_summary(found.id, found.settings, session=session)
            export_tape(found, path, session=session, config={**found.config, "redaction": summary})
    except BaseException:
        remove_tape_file(path)
        raise
    return FileResponse(
        path,
        media_type=SQLITE_MEDIA_TYPE,
        filename=f"{tape}.sqlite3",
        background=BackgroundTask(remove_tape_file, path),
    )


def imported_tape_checker(max_config_bytes: int) -> Callable[[Tape, str], None]:
    """Validate an imported tape as `POST /v1/tapes` validates a new one (name, mode, config)."""

    def check(tape: Tape, name: str) -> None:
        config = tape.config
        if not isinstance(config, dict):
            raise InvalidInput(
                f"the imported tape's config is a JSON {type(config).__name__}, not an object",
                field="config",
            )
        check_config_size(config, max_config_bytes)
        fields = {
            "world_seed": tape.world_seed,
            "mode": tape.mode,
            "online": tape.online,
            "dependency_model": tape.dependency_model,
        }
        try:
            settings = {k: v for k, v in config.items() if k not in EXPORT_ONLY_KEYS}
            TapeConfig.model_validate({**settings, **fields, "name": name})
        except ValidationError as error:
            first = error.errors()[0]
            field = ".".join(str(part) for part in first["loc"]) or "config"
            raise InvalidInput(
                f"the imported tape is invalid: {field}: {first['msg']}", field=field
            ) from error

    return check


def _import(request: Request, path: Path, name: str | None) -> dict[str, Any]:
    check = imported_tape_checker(request.app.state.settings.max_tape_config_bytes)
    try:
        with transaction(store_of(request).write) as session:
            tape = import_tape(path, name, session=session, check=check)
            session.flush()
            scrub_imported(tape.id, request.app.state.resolver.redaction_key, session=session)
            return tape_view(tape, session=session)
    except DamagedTape as error:
        raise InvalidInput(f"the uploaded tape is damaged: {error}") from error
    except TransferError as error:
        raise InvalidInput(f"the uploaded file is not a tape export: {error}") from error
    except FileExistsError as error:
        raise Conflict(
            f"tape {error.args[0]!r} already exists; import it under a new name", tape=error.args[0]
        ) from error


@router.post("/import", status_code=201)
async def import_(request: Request, name: str | None = None) -> dict[str, Any]:
    if name is not None:
        check_tape_name(name)
    path = temporary_tape_path()
    try:
        size = 0
        with path.open("wb") as handle:
            async for chunk in request.stream():
                size += len(chunk)
                if size > MAX_IMPORT_BYTES:
                    raise BodyTooLarge(f"tape files over {MAX_IMPORT_BYTES} bytes are refused")
                handle.write(chunk)
        if size == 0:
            raise InvalidInput("send the exported SQLite file as the request body")
        return await run_in_threadpool(_import, request, path, name)
    finally:
        remove_tape_file(path)
