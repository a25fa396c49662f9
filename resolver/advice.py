"""The advisor: which write operations a tape's groups could have shared (issue 56, item 3).

Every POST an agent sends is a live write unless a rule says it reads, and the only sign that a
group shared nothing is the `write` decision on each answer. From the tape's own evidence this
names, per write operation (method, origin, path): how often siblings of one parent sent the
identical request at the same occurrence, whether they were answered alike (the same status:
bodies may differ by the world's noise), and whether a read the branch made after it came back
different from the recording a branch without it was served. An operation with identical
sibling requests, alike answers and no changed later read is *shareable*, with the rule that
would make it a read. The advisor never applies a rule: a wrong read rule is a stale read, so
the user reviews `groundhog tape advise T` and opens a tape with it.

Two kinds of evidence rule an operation out whatever its siblings sent (issue 56: in a world
whose every tool call is a POST nothing is a read, so no later read can show a write's effect):
an answer of 201 Created or 202 Accepted says the request created something (RFC 9110 §15.3.2,
§15.3.3), and a request a protocol profile named (`mcp tools/call hold`) is read or write by its
protocol, the server's annotations and the tape's `mcp_tools`, never by a path rule — a rule
for `POST /mcp` would make every tool of the server a read.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy.orm import Session

from store.sibling_writes import RefetchedRead, WriteRow, refetched_reads, sibling_writes

# Statuses that say the request made something: 201 Created, 202 Accepted (a job started).
CREATED = frozenset({201, 202})
_OPERATION_MARK = " op:"
_AFTER_OPERATION = (" headers:", " body:")


def protocol_operation(key_head: str) -> str | None:
    """The operation a protocol profile named in a recorded key (engine/keys.py), if any."""
    start = key_head.find(_OPERATION_MARK)
    if start < 0:
        return None
    rest = key_head[start + len(_OPERATION_MARK) :]
    ends = [rest.find(mark) for mark in _AFTER_OPERATION if mark in rest]
    return rest[: min(ends)] if ends else rest


@dataclass
class _Operation:
    method: str
    origin: str
    host: str
    path: str
    protocol: str | None = None
    calls: int = 0
    # (parent, key hash, occurrence) -> branch -> (status, body hash)
    groups: dict[tuple[str | None, str, int], dict[str, tuple[int | None, str | None]]] = field(
        default_factory=lambda: defaultdict(dict)
    )
    changed_reads: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        named = f"{self.method} {self.origin}{self.path}"
        return f"{named} ({self.protocol})" if self.protocol else named


def _split(url: str) -> tuple[str, str, str]:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.lower()}", (parts.hostname or "").lower(), parts.path


def _operations(writes: Iterable[WriteRow]) -> tuple[dict[str, _Operation], dict[str, list[Any]]]:
    operations: dict[str, _Operation] = {}
    by_branch: dict[str, list[tuple[int, _Operation, str]]] = defaultdict(list)
    for row in writes:
        origin, host, path = _split(row.url)
        protocol = protocol_operation(row.key_head)
        found = operations.setdefault(
            f"{row.method} {origin}{path} {protocol or ''}",
            _Operation(row.method, origin, host, path, protocol),
        )
        found.calls += 1
        found.groups[(row.parent, row.key_hash, row.occurrence)][row.branch] = (
            row.status,
            row.body_sha,
        )
        by_branch[row.branch].append((row.seq, found, origin))
    return operations, by_branch


def _blame_changed_reads(reads: Iterable[RefetchedRead], by_branch: dict[str, list[Any]]) -> None:
    """A refetched read whose answer differs from the base recording is charged to the last
    write of its origin the branch made before it."""
    for read in reads:
        if read.base_body_sha is None or read.base_body_sha == read.body_sha:
            continue
        origin, _, _ = _split(read.url)
        earlier = [
            (seq, operation)
            for seq, operation, at in by_branch.get(read.branch, [])
            if seq < read.seq and at == origin
        ]
        if earlier:
            earlier[-1][1].changed_reads.append(f"{read.branch} #{read.seq} {read.url}")


def _judge(operation: _Operation) -> dict[str, Any]:
    identical = {key: answers for key, answers in operation.groups.items() if len(answers) > 1}
    could_share = sum(len(answers) - 1 for answers in identical.values())
    unlike = [
        key for key, answers in identical.items() if len({s for s, _ in answers.values()}) > 1
    ]
    evidence = [
        f"{len(identical)} of {len(operation.groups)} requests were sent identically by "
        f"siblings ({could_share} live calls could have been shared)"
    ]
    for (parent, _, occurrence), answers in list(identical.items())[:3]:
        bodies = len({body for _, body in answers.values()})
        statuses = sorted({str(status) for status, _ in answers.values()})
        evidence.append(
            f"under {parent}, occurrence {occurrence}: {len(answers)} siblings, status "
            f"{'/'.join(statuses)}, {bodies} distinct bodies"
        )
    answered = {status for answers in operation.groups.values() for status, _ in answers.values()}
    created = sorted(status for status in answered if status in CREATED)
    why_not = None
    if operation.protocol is not None:
        why_not = (
            f"a protocol operation ({operation.protocol}): its protocol, the server's "
            "annotations and the tape's mcp_tools say read or write, not a path rule"
        )
    elif created:
        why_not = (
            f"answered {'/'.join(map(str, created))}: the request created something "
            "(RFC 9110), a write"
        )
    elif not identical:
        why_not = "no two siblings sent the identical request: each branch's own write"
    elif unlike:
        why_not = "siblings sending the identical request were answered with different statuses"
    elif operation.changed_reads:
        why_not = (
            "a later read of the branch came back different from the base recording: "
            + "; ".join(operation.changed_reads[:3])
        )
    shareable = why_not is None
    return {
        "operation": operation.name,
        "method": operation.method,
        "origin": operation.origin,
        "path": operation.path,
        "live_calls": operation.calls,
        "could_share": could_share if shareable else 0,
        "shareable": shareable,
        "why_not": why_not,
        "evidence": evidence,
        "rule": {
            "method": operation.method,
            "host": operation.host,
            "path": operation.path,
            "reads": [f"origin:{operation.origin}"],
        }
        if shareable
        else None,
    }


def advise(writes: Iterable[WriteRow], refetched: Iterable[RefetchedRead]) -> dict[str, Any]:
    """The advice section of a tape's report: every write operation judged, shareable first."""
    operations, by_branch = _operations(writes)
    _blame_changed_reads(refetched, by_branch)
    judged = sorted(
        (_judge(operation) for operation in operations.values()),
        key=lambda item: (not item["shareable"], -item["could_share"], item["operation"]),
    )
    return {
        "operations": judged,
        "could_share": sum(item["could_share"] for item in judged),
        "rules": [item["rule"] for item in judged if item["shareable"]],
    }


def advice_section(tape_id: int, *, session: Session) -> dict[str, Any]:
    """The report's (and the viewer's) advice for one tape, read from the store."""
    return advise(
        sibling_writes(tape_id, session=session), refetched_reads(tape_id, session=session)
    )
