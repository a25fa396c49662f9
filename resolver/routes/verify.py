"""`POST /v1/tapes/{tape}/verify`: replay the tape with the world closed and say whether it held.

The route exports the tape to a temporary file and hands it to the verify run (resolver/verify/),
which replays it in a private sandbox; nothing on this resolver changes, and the file goes when
the answer does. A failed verification is a result (200, `"ok": false`), not an error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, Request
from starlette.concurrency import run_in_threadpool

from resolver.auth import require_admin
from resolver.routes.tapes import find_tape, store_of
from resolver.routes.transfer import remove_tape_file, temporary_tape_path
from resolver.verify.run import verify_export
from store.db import transaction
from store.transfer import export_tape

router = APIRouter(prefix="/v1/tapes", tags=["transfer"], dependencies=[Depends(require_admin)])


def _verify(request: Request, tape: str, path: Path) -> dict[str, Any]:
    with transaction(store_of(request).read) as session:
        export_tape(find_tape(tape, session=session), path, session=session)
    return verify_export(path).as_json()


@router.post("/{tape}/verify")
async def verify(tape: str, request: Request) -> dict[str, Any]:
    path = temporary_tape_path()
    try:
        return await run_in_threadpool(_verify, request, tape, path)
    finally:
        remove_tape_file(path)
