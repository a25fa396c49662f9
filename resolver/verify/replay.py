"""Ask again what every branch asked, through the real proxy, and compare with what it was served.

The check that makes a tape worth sharing: with the world closed, each branch's asks — in its
order, forked where the tree forked — are answered from the tape with the status, headers and
body bytes that branch was served, at the same occurrence; a body is compared by the SHA-256
its exchange recorded, so a body changed since is caught. Anything that misses is refused by
the sealed tape and shows as the first mismatch, with its address.
"""

from __future__ import annotations

import hashlib
import ssl
from dataclasses import asdict, dataclass, field
from typing import Any

import httpx

from groundhog.client import Groundhog
from groundhog.protocol import headers as protocol_headers
from groundhog.protocol.headers import is_groundhog_header
from groundhog.shim.store_sync import load_counters
from resolver.verify.conversation import Ask, BranchConversation, Conversation

# Hop-by-hop and framing headers: each connection sets its own; they are not the answer.
FRAMING = frozenset(
    {"host", "content-length", "transfer-encoding", "connection", "keep-alive", "te", "upgrade",
     "proxy-connection", "proxy-authorization", "proxy-authenticate", "trailer"}
)  # fmt: skip
# Nothing was served from the tape for these asks, so there is nothing to serve again.
UNANSWERED = frozenset({"refused", "upstream-failed"})
ASK_TIMEOUT_S = 120.0


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


@dataclass
class Replay:
    conversation: Conversation
    admin: Groundhog
    http: httpx.Client
    summaries: dict[str, BranchSummary] = field(default_factory=dict)


def _end_to_end(name: str) -> bool:
    """A header of the message itself: neither framing nor Groundhog's own."""
    lowered = name.lower()
    return lowered not in FRAMING and not is_groundhog_header(lowered)


def answer_headers(headers: list[list[str]] | httpx.Headers) -> list[tuple[str, str]]:
    """The headers that are the answer itself, as (lowercase name, value), in order."""
    pairs = headers.multi_items() if isinstance(headers, httpx.Headers) else headers
    return [(name.lower(), value) for name, value in pairs if _end_to_end(name)]


def proxied_client(proxy_url: str, ca_file: str) -> httpx.Client:
    """A client through the proxy that adds no header of its own: a replayed request carries
    exactly the stored headers (an added Accept-Encoding would change its key)."""
    context = ssl.create_default_context(cafile=ca_file)
    client = httpx.Client(proxy=proxy_url, verify=context, trust_env=False, timeout=ASK_TIMEOUT_S)
    client.headers = httpx.Headers()
    return client


def _mismatch(branch: str, ask: Ask, reason: str) -> Mismatch:
    return Mismatch(
        branch, ask.seq, ask.method, ask.url, ask.key_readable, ask.occurrence,
        ask.fingerprint, ask.exchange_id, reason,
    )  # fmt: skip


def _ask_again(replay: Replay, branch: str, ask: Ask) -> str | None:
    """Send one ask through the proxy; None if the answer is what was served, else why not."""
    headers = [(name, value) for name, value in ask.headers if _end_to_end(name)]
    tape = replay.conversation.tape
    headers += [(protocol_headers.TAPE, tape), (protocol_headers.BRANCH, branch)]
    request = replay.http.build_request(ask.method, ask.url, headers=headers, content=ask.body)
    try:
        response = replay.http.send(request, stream=True)
    except httpx.HTTPError as error:
        return f"the proxy did not answer: {error}"
    try:
        body = b"".join(response.iter_raw())
    finally:
        response.close()
    decision = response.headers.get(protocol_headers.DECISION, "")
    if decision == "refused":
        return f"refused (it missed the tape): {body[:300].decode(errors='replace')}"
    occurrence = response.headers.get(protocol_headers.OCCURRENCE)
    if occurrence is not None and occurrence != str(ask.occurrence):
        return f"answered at occurrence {occurrence}, served at {ask.occurrence}"
    if ask.status is not None and response.status_code != ask.status:
        return f"status {response.status_code}, the branch was served {ask.status}"
    actual = hashlib.sha256(body).hexdigest()
    if ask.response_body_sha and actual != ask.response_body_sha:
        return f"body hashes to {actual}, the branch was served {ask.response_body_sha}"
    if answer_headers(response.headers) != answer_headers(ask.response_headers):
        return (
            f"headers {answer_headers(response.headers)}, the branch was served "
            f"{answer_headers(ask.response_headers)}"
        )
    return None


def _fork(replay: Replay, child: BranchConversation) -> None:
    assert child.parent is not None
    leaf = child.path.rsplit("/", 1)[-1]
    replay.admin.fork(
        replay.conversation.tape, child.parent, [leaf], shim_counters=child.shim_counters
    )


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
        why_not = _ask_again(replay, branch.path, ask)
        if why_not is None:
            summary.matched += 1
        elif summary.first_mismatch is None:
            summary.first_mismatch = _mismatch(branch.path, ask, why_not)
    for child in pending:
        _fork(replay, child)
    for child in replay.conversation.children(branch.path):
        replay_branch(replay, child)


def check_shim_counters(replay: Replay, resolver_url: str) -> None:
    """Each branch's stored shim counters reach a worker of the copy as the tape holds them,
    so a process started as that branch resumes its sequences (DESIGN §5)."""
    for path, branch in replay.conversation.branches.items():
        summary = replay.summaries.setdefault(path, BranchSummary(path))
        loaded = load_counters(resolver_url, replay.conversation.tape, path, token="")
        summary.shim_counters_resume = loaded == branch.shim_counters
