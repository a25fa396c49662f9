"""The store's own name: a random token made with it (migration 0009, `gh_store`).

Ids are unique within one store, not across stores: a database made afresh numbers its tapes
from 1 again. Whatever is kept by tape id outside the store and beyond one process — a sidecar's
recorded answers on its disk (proxy/answer_disk.py) — is filed under this token, handed over
with every branch lease; without it a sidecar whose resolver moved to a new store would serve
the old store's recordings at reused tape ids.
"""

from __future__ import annotations

import secrets

from sqlalchemy import select
from sqlalchemy.orm import Session

from store.models import StoreIdentity
from store.upsert import insert_for

_ROW = 1


def store_token(*, session: Session) -> str:
    """This store's token. Made now if its row is missing (deleted by hand): the store is then
    a new one to every sidecar, which costs only the answers they kept; two resolvers doing so
    at once agree on the first one written."""
    token = session.scalar(select(StoreIdentity.token).where(StoreIdentity.id == _ROW))
    if token is not None:
        return token
    made = insert_for(session, StoreIdentity.__table__).values(id=_ROW, token=secrets.token_hex(16))
    session.execute(made.on_conflict_do_nothing(index_elements=["id"]))
    return session.scalars(select(StoreIdentity.token).where(StoreIdentity.id == _ROW)).one()
