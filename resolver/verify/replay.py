"""Ask again what every branch asked, through the proxy's own resolve path, and compare.

The check that makes a tape worth sharing: with the world closed, each branch's asks — in its
order, forked where the tree forked — are answered from the tape with the status, headers and
body bytes that branch was served, at the same occurrence. Each recorded request is replayed
exactly as recorded (method, target, header list in order, body): it becomes the request the
proxy would have parsed, the proxy's own translation makes it a resolve ask
(`proxy.wire.resolve_payload`), the resolver's resolve path answers it in this process, and the
answer is made the asker's own as the proxy makes it (`proxy.sandbox_answers.make_own`: minted
sessions, JSON-RPC ids). There is no second HTTP client whose defaults could add headers, and
no way out to the world: an answer that would go live is a finding. A body is compared by the
SHA-256 its exchange recorded, so a body changed since is caught. Anything that misses is
refused by the sealed tape and shows as the first mismatch, with its address.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import urlsplit

from mitmproxy import http

from engine.policy import Action, Decision
from engine.resolve_request import ResolveRequest
from engine.resolve_results import Resolution
from groundhog.protocol.wire import TRAILER_PREFIX, wire_response
from proxy.sandbox_answers import MARKER, make_own
from proxy.wire import (
    encode_body,
    fields_from_pairs,
    resolve_payload,
    response_from_payload,
    strip_private_headers,
)
from resolver.errors import ResolverError
from resolver.resolution import Resolver
from resolver.verify.conversation import Ask, BranchConversation, Conversation

# Nothing was served from the tape for these asks, so there is nothing to serve again.
UNANSWERED = frozenset({"refused", "upstream-failed"})
# How much of a refusal's problem a mismatch quotes: whole JSON, never cut mid-document.
QUOTED_PROBLEM_BYTES = 4000


@dataclass
class Mismatch:
    branch: str
    seq: int
    method: str
    url: str
    key: str
    occurrence: int
    fingerprint: str
    exchange_id: int | None
    reason: str


@dataclass
class BranchSummary:
    branch: str
    asks: int = 0
    replayed: int = 0
    matched: int = 0
    skipped: int = 0
    shim_counters_resume: bool = True
    first_mismatch: Mismatch | None = None

    @property
    def ok(self) -> bool:
        return self.first_mismatch is None and self.shim_counters_resume

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}


class DeadlinePassed(ResolverError):
    """The verify run's deadline came before every ask was replayed."""


@dataclass
class Replay:
    conversation: Conversation
    resolver: Resolver
    fork: Any  # (parent path, child path, shim counters) -> None
    deadline: float
    summaries: dict[str, BranchSummary] = field(default_factory=dict)
    # Sandbox identities each branch was handed, by origin: its later asks carry them, as the
    # client the proxy served would have (`[sandbox]` is what the store kept instead).
    sessions: dict[str, dict[tuple[str, str], str]] = field(default_factory=dict)
    # Asks whose answer would have gone to the world (a sealed tape must never try).
    live_attempts: int = 0


def recorded_request(ask: Ask, identities: dict[tuple[str, str], str]) -> http.Request:
    """The request exactly as recorded, as the proxy would have parsed it: the header list in
    its order, the body bytes as they were (no content-length or coding added)."""
    parts = urlsplit(ask.url)
    origin = f"{parts.scheme}://{parts.netloc}"
    pairs = [[name, value] for name, value in ask.headers]
    for (held_origin, name), value in identities.items():
        if held_origin != origin:
            continue
        present = [pair for pair in pairs if pair[0].lower() == name]
        if not present:
            pairs.append([name, value])
        for pair in present:
            if pair[1] == MARKER.decode():
                pair[1] = value
    request = http.Request(
        "", 0, ask.method.encode(), b"", b"", b"", b"HTTP/1.1",
        http.Headers(fields_from_pairs(pairs)), ask.body, None, 0.0, 0.0,
    )  # fmt: skip
    request.url = ask.url
    strip_private_headers(request)
    return request


def _learn_identities(
    replay: Replay, branch: str, ask: Ask, request: http.Request, served: http.Response
) -> None:
    """Keep the session values the branch was handed where the tape stored the marker."""
    parts = urlsplit(ask.url)
    origin = f"{parts.scheme}://{parts.netloc}"
    marked = {name.lower() for name, value in ask.response_headers if value == MARKER.decode()}
    held = replay.sessions.setdefault(branch, {})
    for name in marked:
        value = served.headers.get(name)
        if value and value != request.headers.get(name):
            held[(origin, name)] = value


def _mismatch(branch: str, ask: Ask, reason: str) -> Mismatch:
    return Mismatch(
        branch, ask.seq, ask.method, ask.url, ask.key_readable, ask.occurrence,
        ask.fingerprint, ask.exchange_id, reason,
    )  # fmt: skip


def _quoted(body: bytes) -> str:
    text = body.decode(errors="replace")
    if len(text) <= QUOTED_PROBLEM_BYTES:
        return text
    return f"{text[:QUOTED_PROBLEM_BYTES]}… ({len(text)} characters)"


def _expected(ask: Ask, body: bytes) -> http.Response:
    return response_from_payload(
        wire_response(ask.status or 0, ask.response_headers, encode_body(body))
    )


def _header_list(response: http.Response) -> list[tuple[str, str]]:
    pairs = [(n.decode("latin-1"), v.decode("latin-1")) for n, v in response.headers.fields]
    if response.trailers:
        pairs += [
            (TRAILER_PREFIX + n.decode("latin-1"), v.decode("latin-1"))
            for n, v in response.trailers.fields
        ]
    return pairs


def compare(replay: Replay, branch: str, ask: Ask, result: Resolution) -> str | None:
    """None if the answer is what the branch was served, else why not."""
    if result.action is not Action.SERVE or result.response is None:
        replay.live_attempts += 1
        return f"the sealed copy would have gone to the world ({result.decision})"
    served = response_from_payload(result.response)
    if result.decision is Decision.REFUSED:
        return f"refused (it missed the tape): {_quoted(served.raw_content or b'')}"
    if result.ask.occurrence != ask.occurrence:
        return f"answered at occurrence {result.ask.occurrence}, served at {ask.occurrence}"
    if ask.status is not None and served.status_code != ask.status:
        return f"status {served.status_code}, the branch was served {ask.status}"
    actual = hashlib.sha256(served.raw_content or b"").hexdigest()
    if ask.response_body_sha and actual != ask.response_body_sha:
        return f"body hashes to {actual}, the branch was served {ask.response_body_sha}"
    expected = _expected(ask, served.raw_content or b"")
    if _header_list(served) != _header_list(expected):
        return f"headers {_header_list(served)}, the branch was served {_header_list(expected)}"
    return None


def ask_again(replay: Replay, branch: str, ask: Ask) -> str | None:
    """Resolve one recorded ask as the proxy would; None if the answer matches, else why not."""
    if time.monotonic() > replay.deadline:
        raise DeadlinePassed("the verify deadline passed before every recorded ask was replayed")
    tape = replay.conversation.tape
    request = recorded_request(ask, replay.sessions.get(branch, {}))
    too_large = len(ask.body) > replay.resolver.max_body_bytes
    payload = resolve_payload(request, tape=tape, branch=branch, body_too_large=too_large)
    result = replay.resolver.resolve(ResolveRequest.model_validate(payload))
    if not isinstance(result, Resolution):
        return "the sealed copy answered `wait`: another asker holds the address"
    why_not = compare(replay, branch, ask, result)
    if why_not is not None:
        return why_not
    assert result.response is not None
    served = response_from_payload(result.response)
    replayed_write = result.decision is Decision.REPLAYED_WRITE
    make_own(
        request, served, tape, branch,
        occurrence=result.ask.occurrence, replayed_write=replayed_write,
    )  # fmt: skip
    _learn_identities(replay, branch, ask, request, served)
    return None


def _fork(replay: Replay, child: BranchConversation) -> None:
    assert child.parent is not None
    replay.fork(child.parent, child.path, child.shim_counters)
    # A child's client goes on with the sessions its parent held at the fork.
    replay.sessions[child.path] = dict(replay.sessions.get(child.parent, {}))


def replay_branch(replay: Replay, branch: BranchConversation) -> None:
    """Replay `branch`'s asks in order, forking its children where they forked, then theirs."""
    summary = replay.summaries.setdefault(branch.path, BranchSummary(branch.path))
    pending = replay.conversation.children(branch.path)
    for ask in branch.asks:
        while pending and pending[0].fork_point < ask.seq:
            _fork(replay, pending.pop(0))
        summary.asks += 1
        if not ask.replayable:
            summary.skipped += 1
            if ask.decision not in UNANSWERED and summary.first_mismatch is None:
                reason = f"it was served ({ask.decision}) an answer the tape does not hold"
                summary.first_mismatch = _mismatch(branch.path, ask, reason)
            continue
        summary.replayed += 1
        try:
            why_not = ask_again(replay, branch.path, ask)
        except DeadlinePassed:
            raise
        except Exception as error:  # a broken row is a finding, never a failed verify run
            why_not = f"the resolve path failed on it: {type(error).__name__}: {error}"
        if why_not is None:
            summary.matched += 1
        elif summary.first_mismatch is None:
            summary.first_mismatch = _mismatch(branch.path, ask, why_not)
    for child in pending:
        _fork(replay, child)
    for child in replay.conversation.children(branch.path):
        replay_branch(replay, child)
