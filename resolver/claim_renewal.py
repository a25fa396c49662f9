"""`/v1/renew`: a live single-flight holder keeps its claim while its upstream fetch runs.

Without renewal a fetch slower than the claim lets a waiter take the address over and fetch it a
second time; its bytes would then differ from the ones its siblings were served. A holder renews
every third of a claim; takeover happens only once it stops (it died or hit its deadline).
"""

from __future__ import annotations

import time

from store import claims, exchanges
from store.db import Store, transaction
from store.models import PendingRecord


def renew(store: Store, ticket: str, claim_seconds: float) -> float | None:
    """Extend `ticket`'s claim; its length in seconds, or None if the ticket is superseded.

    A write (or naive read) forward holds no claim — nobody can take it over — so its ticket
    renews while its pending record exists and no other ticket claims its address.
    """
    with transaction(store.write) as session:
        claim_expires = time.time() + claim_seconds
        if claims.renew_claim(ticket, claim_expires=claim_expires, session=session):
            return claim_seconds
        pending = session.get(PendingRecord, ticket)
        if pending is None:
            return None  # recorded, forgotten or never issued
        address = (pending.tape_id, pending.key_hash, pending.occurrence, pending.fingerprint)
        if claims.get_claim(*address, session=session) is not None:
            return None  # taken over: another ticket holds the address now
        if not pending.is_write and exchanges.find_exchange(*address, session=session):
            return None  # someone else recorded the address: this fetch is superseded
        return claim_seconds
