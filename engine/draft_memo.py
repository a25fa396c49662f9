"""`asks.draft_ask` remembered by tape and request, for the resolver and for a lease holder.

Siblings of a group ask the same requests, and drafting one (redaction, the protocol profile,
keying) is the largest pure part of a hit's decision: about a third of a resolve hit's time in
process. A draft is a pure function of the tape (its configuration), the request and the
deployment's redaction key, so a remembered draft is the same draft but for its branch; it is
served only while the tape it was drafted for is equal (a tape made anew, or a lease copy with
another configuration, drafts anew). Without this module every sibling's resolve would redact
and key the same bytes again, and the lease holder and the resolver would each keep their own
memo, which would drift.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import replace
from typing import Any

from engine.asks import Draft, draft_ask
from engine.refs import BranchRef, TapeRef
from engine.resolve_request import ResolveRequest


class DraftMemo:
    """Bounded, least recently used first out; a larger body is drafted every time (memory
    stays small). Safe across threads: the resolver's thread lane and its loop share one."""

    def __init__(self, limit: int = 1024, body_bytes: int = 16 * 1024) -> None:
        self.limit = limit
        self.body_bytes = body_bytes
        self._drafts: OrderedDict[tuple[Any, ...], Draft] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(
        self, tape: TapeRef, branch: BranchRef, wire: ResolveRequest, body: bytes, **keys: bytes
    ) -> Draft:
        if len(body) > self.body_bytes:
            return draft_ask(tape, branch, wire, body, **keys)
        request = (tape.id, wire.method, wire.scheme, wire.host, wire.port, wire.path, body)
        memo = (*request, tuple(wire.query), tuple(wire.headers), tuple(keys.items()))
        with self._lock:
            found = self._drafts.get(memo)
            if found is not None and found.tape == tape:
                self._drafts.move_to_end(memo)
                return replace(found, branch=branch)
        draft = draft_ask(tape, branch, wire, body, **keys)
        with self._lock:
            self._drafts[memo] = draft
            self._drafts.move_to_end(memo)
            while len(self._drafts) > self.limit:
                self._drafts.popitem(last=False)
        return draft
