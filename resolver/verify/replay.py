"""Ask again what every branch asked, through the proxy's own resolve path, and compare.

The check that makes a tape worth sharing: with the world closed, each branch's asks — in its
order, forked where the tree forked — are answered from the tape with the status, headers and
body bytes that branch was served, at the same occurrence. Each recorded request is replayed
exactly as recorded (method, target, header list in order, body): it becomes the request the
proxy would have parsed (mitmproxy's `http.Request`, the proxy's own parser), the translation
the proxy uses makes it a resolve ask (groundhog/protocol/wire_codec.py `resolve_payload`), the
resolver's resolve path answers it in this process, and the sandbox headers of the answer are
made the asker's own as the proxy makes them (engine/sandbox_identity.py `own_sandbox_fields`:
minted sessions, which its later asks carry). The answer is compared as it travels (the wire's
`response`), and the resolver imports nothing of the proxy (tests/engine/test_imports.py).
There is no second HTTP client whose defaults could add headers, and
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
from engine.sandbox_identity import MARKER, own_sandbox_fields
from groundhog.protocol.wire import TRAILER_PREFIX
from groundhog.protocol.wire_codec import (
    decode_body,
    fields_from_pairs,
    resolve_payload,
    without_private_fields,
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
            if pair[1] == MARKER:
                pair[1] = value
    request = http.Request(
        "", 0, ask.method.encode(), b"", b"", b"", b"HTTP/1.1",
        http.Headers(fields_from_pairs(pairs)), ask.body, None, 0.0, 0.0,
    )  # fmt: skip
    request.url = ask.url
    request.headers.fields = without_private_fields(request.headers.fields)
    return request


def _header_value(fields: tuple[tuple[bytes, bytes], ...], name: str) -> str | None:
    """A header's value as mitmproxy's `Headers.get` gives it: every field of the name, folded."""
    wanted = name.lower().encode("latin-1")
    values = [value.decode("latin-1") for key, value in fields if key.lower() == wanted]
    return ", ".join(values) if values else None


def _learn_identities(
    replay: Replay,
    branch: str,
    ask: Ask,
    request: http.Request,
    result: Resolution,
) -> None:
    """Keep the session values the branch was handed where the tape stored the marker."""
    parts = urlsplit(ask.url)
    origin = f"{parts.scheme}://{parts.netloc}"
    marked = {name.lower() for name, value in ask.response_headers if value == MARKER}
    if not marked:
        return
    assert result.response is not None  # `compare` let it through: it was served
    head = fields_from_pairs(_head_pairs(result.response.get("headers") or []))
    own = own_sandbox_fields(
        head, request.headers.get, replay.conversation.tape, branch,
        occurrence=result.ask.occurrence,
        replayed_write=result.decision is Decision.REPLAYED_WRITE,
    )  # fmt: skip
    fields = head if own is None else own
    held = replay.sessions.setdefault(branch, {})
    for name in marked:
        value = _header_value(fields, name)
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


def _head_pairs(pairs: list[list[str]] | list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(name, value) for name, value in pairs if not name.startswith(TRAILER_PREFIX)]


def _header_list(pairs: list[list[str]] | list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The pairs as a served response carries them: its head, then its trailers (the pairs
    named with `TRAILER_PREFIX`, wherever the wire put them)."""
    trailers = [(name, value) for name, value in pairs if name.startswith(TRAILER_PREFIX)]
    return _head_pairs(pairs) + trailers


def compare(replay: Replay, branch: str, ask: Ask, result: Resolution) -> str | None:
    """None if the answer is what the branch was served, else why not."""
    if result.action is not Action.SERVE or result.response is None:
        replay.live_attempts += 1
        return f"the sealed copy would have gone to the world ({result.decision})"
    served = result.response
    body = decode_body(served["body"])
    if result.decision is Decision.REFUSED:
        return f"refused (it missed the tape): {_quoted(body)}"
    if result.ask.occurrence != ask.occurrence:
        return f"answered at occurrence {result.ask.occurrence}, served at {ask.occurrence}"
    status = int(served["status"])
    if ask.status is not None and status != ask.status:
        return f"status {status}, the branch was served {ask.status}"
    actual = hashlib.sha256(body).hexdigest()
    if ask.response_body_sha and actual != ask.response_body_sha:
        return f"body hashes to {actual}, the branch was served {ask.response_body_sha}"
    served_headers = _header_list(served.get("headers") or [])
    expected = _header_list(ask.response_headers)
    if served_headers != expected:
        return f"headers {served_headers}, the branch was served {expected}"
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
    _learn_identities(replay, branch, ask, request, result)
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
