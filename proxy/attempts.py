"""Attempt ids: one per ask, the same again for every retry of an ask that got no answer.

Occurrences are taken by answers, not attempts (DESIGN §4), but a resolver can commit an answer
and die before it reaches the proxy: the lineage has advanced and the worker saw a 503. Each
ask carries an attempt id, and the resolver gives an ask whose attempt advanced the counter last
the occurrence that attempt took (store/counters.py), so re-asking with the same id is safe. The
proxy re-asks in two places with it: its own retry while the resolver restarts
(proxy/resolver_client.py), and the worker's retry of a request the proxy answered 503, which
is a new flow and would otherwise be a new attempt, one occurrence past its siblings.

A request counts as the same when its tape, branch, method, URL and body are: not its headers,
which clients change between tries (a retry counter, a request id, a date). The memory is per
proxy process and bounded: it forgets the oldest unanswered asks first, which can only cost the
old behaviour (a new occurrence), never a wrong answer.
"""

from __future__ import annotations

import hashlib
import secrets
from collections import OrderedDict

from groundhog.protocol.wire import ResolveAsk

REMEMBERED = 4096  # unanswered asks kept; one proxy serves one worker's handful at a time


def request_identity(payload: ResolveAsk) -> str:
    """What makes a worker's retry the same request as the try that went unanswered."""
    digest = hashlib.sha256()
    for part in (
        payload["tape"],
        payload["branch"],
        payload["method"].upper(),
        payload["scheme"],
        payload["host"],
        str(payload["port"]),
        payload["path"],
        repr(payload["query"]),
        payload["body"],
    ):
        # mitmproxy decodes raw bytes with surrogate escapes: hash them back as they came.
        digest.update(part.encode("utf-8", "surrogateescape"))
        digest.update(b"\0")
    return digest.hexdigest()


def new_attempt() -> str:
    return secrets.token_urlsafe(12)


class Attempts:
    """The attempt ids of asks that got no answer, by request identity."""

    def __init__(self, limit: int = REMEMBERED) -> None:
        self.limit = limit
        self._unanswered: OrderedDict[str, str] = OrderedDict()

    def attempt_for(self, payload: ResolveAsk) -> str:
        """The id of this request's unanswered try, if any (taken: one retry reuses it), else
        a new one. With nothing unanswered (the usual case) the request is not even hashed."""
        if not self._unanswered:
            return new_attempt()
        return self._unanswered.pop(request_identity(payload), None) or new_attempt()

    def unanswered(self, payload: ResolveAsk) -> None:
        """The ask got no answer (the worker is told 503): its retry will be the same attempt."""
        attempt = payload.get("attempt")
        if attempt is None:
            return
        identity = request_identity(payload)
        self._unanswered[identity] = attempt
        self._unanswered.move_to_end(identity)
        while len(self._unanswered) > self.limit:
            self._unanswered.popitem(last=False)

    def __len__(self) -> int:
        return len(self._unanswered)
