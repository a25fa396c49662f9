"""Near-miss explanations: why a sealed tape's miss did not match the recordings closest to it.

A sealed miss that only says "not on tape" leaves the user diffing keys by eye. This module
takes the asked request key and the recorded keys (readable forms, DESIGN §3) and says, for each
of the nearest, exactly what differs — method, scheme, host, which path segment, which query
parameter, which header, which JSON or form field of the body — and which occurrences and
fingerprints are recorded for that key. Pure functions over strings: the store query that feeds
them lives in `resolver/misses.py`.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlsplit

NEAREST = 3
# Weights of a difference when ranking: a different method or host is further than a parameter.
# A key of another version is the same request keyed by older rules: it ranks close, because
# "re-record the tape" is the answer the user needs.
_WEIGHTS = {
    "version": 1,
    "method": 4,
    "scheme": 4,
    "host": 4,
    "path": 2,
    "operation": 2,
    "query": 1,
    "header": 1,
    "body": 1,
}
_MISSING = None


@dataclass(frozen=True)
class KeyParts:
    """A readable request key taken apart (see `engine.keys.request_key`)."""

    version: str
    method: str
    scheme: str
    authority: str
    segments: tuple[str, ...]
    query: tuple[tuple[str, str], ...]
    headers: tuple[tuple[str, str], ...]
    body: str
    operation: str = ""


@dataclass(frozen=True)
class Difference:
    part: str  # version | method | scheme | host | path | operation | query | header | body
    name: str  # the segment index, parameter, header or field; "" for method/scheme/host/body
    asked: str | None  # None: the asked request has no such part
    recorded: str | None  # None: the recording has no such part

    def describe(self) -> str:
        if self.part == "version":
            return (
                f"recorded under key version {self.recorded}, asked under {self.asked}: "
                "the request key changed since this tape was recorded; re-record it "
                "(open the tape online and run the workflow again)"
            )
        what = {
            "operation": "operation",
            "method": "method",
            "scheme": "scheme",
            "host": "host",
            "path": f"path segment {self.name}",
            "query": f"query parameter {self.name!r}",
            "header": f"header {self.name!r}",
            "body": f"body field {self.name!r}" if self.name else "body",
        }[self.part]
        if self.asked is None:
            return f"{what} is recorded ({_short(self.recorded)}) but was not asked"
        if self.recorded is None:
            return f"{what} was asked ({_short(self.asked)}) but is not recorded"
        return f"{what}: asked {_short(self.asked)}, recorded {_short(self.recorded)}"

    def as_json(self) -> dict[str, Any]:
        return {
            "part": self.part,
            "name": self.name,
            "asked": self.asked,
            "recorded": self.recorded,
        }


@dataclass(frozen=True)
class Recording:
    """One recorded address of a key: its occurrence and fingerprint."""

    occurrence: int
    fingerprint: str


@dataclass(frozen=True)
class NearMiss:
    key: str
    differences: tuple[Difference, ...]
    recordings: tuple[Recording, ...] = field(default=())
    summary: str = ""

    def as_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "summary": self.summary,
            "differences": [difference.as_json() for difference in self.differences],
            "recorded": [
                {"occurrence": r.occurrence, "fingerprint": r.fingerprint} for r in self.recordings
            ],
        }


def _short(value: str | None, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…'"


def parse_key(readable: str) -> KeyParts:
    """Take a readable key apart; anything unparseable ends up compared as a whole body."""
    fields = readable.split(" ", 3)
    if len(fields) < 3:
        return KeyParts("", "", "", "", (), (), (), readable)
    version, method, url = fields[0], fields[1], fields[2]
    rest = fields[3] if len(fields) > 3 else ""
    operation = ""
    if rest.startswith("op:"):
        # The label holds spaces (`mcp tools/call search`); it ends where the next part begins.
        ends = [at for at in (rest.find(" headers:["), rest.find(" body:")) if at >= 0]
        end = min(ends, default=len(rest))
        operation, rest = rest[len("op:") : end], rest[end:].lstrip(" ")
    headers: tuple[tuple[str, str], ...] = ()
    if rest.startswith("headers:"):
        try:
            pairs, end = json.JSONDecoder().raw_decode(rest, len("headers:"))
            headers = tuple((str(name), str(value)) for name, value in pairs)
            rest = rest[end:].lstrip(" ")
        except (ValueError, TypeError):
            pass
    body = rest[len("body:") :] if rest.startswith("body:") else rest
    split = urlsplit(url)
    segments = tuple(split.path.split("/")[1:]) if split.path else ()
    query = tuple(parse_qsl(split.query, keep_blank_values=True))
    return KeyParts(
        version, method, split.scheme, split.netloc, segments, query, headers, body, operation
    )


def _pairs_diff(
    part: str, asked: tuple[tuple[str, str], ...], recorded: tuple[tuple[str, str], ...]
) -> list[Difference]:
    """Differences between two name/value lists; repeated names compare as joined values."""
    left: dict[str, list[str]] = {}
    right: dict[str, list[str]] = {}
    for name, value in asked:
        left.setdefault(name, []).append(value)
    for name, value in recorded:
        right.setdefault(name, []).append(value)
    found = []
    for name in sorted(set(left) | set(right)):
        a = ",".join(left[name]) if name in left else _MISSING
        b = ",".join(right[name]) if name in right else _MISSING
        if a != b:
            found.append(Difference(part, name, a, b))
    return found


def _flatten(value: Any, prefix: str = "") -> dict[str, str]:
    """JSON as dotted paths to leaf values (`a.b`, `items[0].id`)."""
    if isinstance(value, dict) and value:
        out: dict[str, str] = {}
        for name, inner in value.items():
            out.update(_flatten(inner, f"{prefix}.{name}" if prefix else str(name)))
        return out
    if isinstance(value, list) and value:
        out = {}
        for index, inner in enumerate(value):
            out.update(_flatten(inner, f"{prefix}[{index}]"))
        return out
    return {prefix: json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)}


def _json(body: str) -> Any:
    if body[:1] not in ("{", "["):
        return _MISSING
    try:
        return json.loads(body)
    except ValueError:
        return _MISSING


def _body_diff(asked: str, recorded: str) -> list[Difference]:
    if asked == recorded:
        return []
    left, right = _json(asked), _json(recorded)
    if left is not _MISSING and right is not _MISSING:
        flat_left, flat_right = _flatten(left), _flatten(right)
        return [
            Difference("body", name, flat_left.get(name), flat_right.get(name))
            for name in sorted(set(flat_left) | set(flat_right))
            if flat_left.get(name) != flat_right.get(name)
        ]
    if asked.startswith("form:") and recorded.startswith("form:"):
        pairs = _pairs_diff("body", tuple(parse_qsl(asked[5:])), tuple(parse_qsl(recorded[5:])))
        return list(pairs)
    return [Difference("body", "", asked or _MISSING, recorded or _MISSING)]


def differences(asked: KeyParts, recorded: KeyParts) -> list[Difference]:
    """Everything that tells two keys apart, in the order a request is read."""
    found: list[Difference] = []
    for part, a, b in (
        ("version", asked.version, recorded.version),
        ("method", asked.method, recorded.method),
        ("scheme", asked.scheme, recorded.scheme),
        ("host", asked.authority, recorded.authority),
    ):
        if a != b:
            found.append(Difference(part, "", a, b))
    for index in range(max(len(asked.segments), len(recorded.segments))):
        mine = asked.segments[index] if index < len(asked.segments) else _MISSING
        theirs = recorded.segments[index] if index < len(recorded.segments) else _MISSING
        if mine != theirs:
            found.append(Difference("path", str(index + 1), mine, theirs))
    if asked.operation != recorded.operation:
        found.append(
            Difference("operation", "", asked.operation or _MISSING, recorded.operation or _MISSING)
        )
    found += _pairs_diff("query", asked.query, recorded.query)
    found += _pairs_diff("header", asked.headers, recorded.headers)
    found += _body_diff(asked.body, recorded.body)
    return found


def other_key_versions(asked_key: str, recorded_keys: Iterable[str]) -> list[str]:
    """The key versions of `recorded_keys` that differ from `asked_key`'s, sorted.

    A tape recorded under an older key version misses on every ask until re-recorded; the
    sealed miss says so even when the nearest recordings happen to be of the current version.
    """
    asked = asked_key.split(" ", 1)[0]
    return sorted({key.split(" ", 1)[0] for key in recorded_keys} - {asked})


def _distance(found: list[Difference]) -> int:
    return sum(_WEIGHTS[difference.part] for difference in found)


def _summary(
    found: list[Difference], recordings: tuple[Recording, ...], occurrence: int, fingerprint: str
) -> str:
    if found:
        return "; ".join(difference.describe() for difference in found[:4]) + (
            f"; and {len(found) - 4} more" if len(found) > 4 else ""
        )
    occurrences = sorted({r.occurrence for r in recordings})
    at_occurrence = [r for r in recordings if r.occurrence == occurrence]
    if at_occurrence:
        prints = ", ".join(repr(r.fingerprint) for r in at_occurrence)
        return (
            f"same request and occurrence {occurrence}, recorded with fingerprint {prints}, "
            f"asked {fingerprint!r}: this branch's writes changed what the read depends on"
        )
    listed = ", ".join(str(n) for n in occurrences) or "none"
    return (
        f"same request, but occurrence {occurrence} is not recorded (recorded: {listed}): "
        "this branch asked it more often than the recording did"
    )


def explain(
    asked_key: str,
    recorded: dict[str, list[Recording]],
    *,
    occurrence: int,
    fingerprint: str,
    count: int = NEAREST,
) -> list[NearMiss]:
    """The `count` recorded keys nearest to `asked_key`, best first, each explained.

    `recorded` maps readable keys to their recorded addresses. Nearest is the fewest weighted
    differences, then the most similar text, then the key itself, so the order is deterministic.
    """
    asked = parse_key(asked_key)
    scored = []
    for key, recordings in recorded.items():
        found = differences(asked, parse_key(key))
        if key != asked_key and not found:
            found = [Difference("body", "", asked.body or _MISSING, key)]  # unparsed keys
        ratio = difflib.SequenceMatcher(None, asked_key, key).ratio()
        scored.append((_distance(found), -ratio, key, found, recordings))
    scored.sort(key=lambda item: item[:3])
    result = []
    for _weight, _ratio, key, found, recordings in scored[:count]:
        ordered = tuple(sorted(set(recordings), key=lambda r: (r.occurrence, r.fingerprint)))
        summary = _summary(found, ordered, occurrence, fingerprint)
        result.append(NearMiss(key, tuple(found), ordered, summary))
    return result
