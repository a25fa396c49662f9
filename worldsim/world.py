"""The world as an object: branch sandboxes, occurrence counters and call statistics.

Both the HTTP server and the in-process transport (used for fast calibration and as a live
reference) answer through `World.handle`, so there is exactly one place that turns a request
into bytes. State rollback is the sandbox's job, not Groundhog's: each branch gets its own copy
of the corpus, created lazily from its nearest existing ancestor (or the base corpus), which is
what a real environment's snapshot/rollback layer would provide.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from dataclasses import dataclass, field

from worldsim import corpus, render
from worldsim.dispatch import (
    OCCURRENCE_PATTERN,
    SEED_PATTERN,
    endpoint_label,
    parse_branch,
    parse_brief,
    parse_int_header,
    render_read,
)
from worldsim.errors import BodyTooLarge, ReadOnlyConflict, SandboxCapReached

HINT_READS = "X-Groundhog-Reads"
HINT_WRITES = "X-Groundhog-Writes"
LATENCY_HEADER = "X-World-Latency-Ms"
OCCURRENCE_ECHO_HEADER = "X-World-Occurrence"


@dataclass(frozen=True)
class WorldRequest:
    """A request as the world sees it; the three cooperative headers arrive as raw strings."""

    method: str
    path: str
    query: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    branch: str | None = None
    seed: str | None = None
    occurrence: str | None = None


@dataclass(frozen=True)
class WorldResponse:
    status: int
    body: bytes
    headers: tuple[tuple[str, str], ...]
    media_type: str
    latency_ms: float | None = None


@dataclass
class Sandbox:
    """One branch's corpus overlay and its own per-request-key occurrence counters."""

    overlay: dict[str, corpus.Doc] = field(default_factory=dict)
    counters: Counter[str] = field(default_factory=Counter)

    def view(self) -> corpus.CorpusView:
        return corpus.CorpusView(dict(self.overlay))


class World:
    """Sandboxes per branch, created lazily up to `sandbox_cap`, and the call statistics."""

    def __init__(
        self,
        seed: int,
        *,
        sandbox_cap: int = 1024,
        hints: bool = True,
        max_body_bytes: int = 65_536,
    ) -> None:
        self.seed = seed
        self.sandbox_cap = sandbox_cap
        self.hints = hints
        self.max_body_bytes = max_body_bytes
        self._sandboxes: dict[str, Sandbox] = {}
        self._calls: Counter[tuple[str, str]] = Counter()
        self._lock = threading.RLock()

    def view(self, branch: str | None) -> corpus.CorpusView:
        """A branch's corpus without creating a sandbox (the base corpus if it has none)."""
        with self._lock:
            sandbox = self._sandboxes.get(branch) if branch is not None else None
            return sandbox.view() if sandbox else corpus.BASE_VIEW

    def branches(self) -> list[str]:
        with self._lock:
            return sorted(self._sandboxes)

    def _sandbox(self, branch: str) -> Sandbox:
        existing = self._sandboxes.get(branch)
        if existing is not None:
            return existing
        if len(self._sandboxes) >= self.sandbox_cap:
            raise SandboxCapReached(
                f"{self.sandbox_cap} branch sandboxes exist; POST /_reset to drop them or start"
                f" the world with a larger --sandbox-cap",
                {"branch": branch, "sandbox_cap": self.sandbox_cap},
            )
        parent = branch
        created = Sandbox()
        while "/" in parent:
            parent = parent.rsplit("/", 1)[0]
            if parent in self._sandboxes:
                ancestor = self._sandboxes[parent]
                created = Sandbox(dict(ancestor.overlay), Counter(ancestor.counters))
                break
        self._sandboxes[branch] = created
        return created

    def reset(self, branch: str | None = None) -> list[str]:
        with self._lock:
            if branch is None:
                dropped = sorted(self._sandboxes)
                self._sandboxes.clear()
            else:
                dropped = [branch] if self._sandboxes.pop(branch, None) is not None else []
            return dropped

    def stats(self) -> dict[str, object]:
        with self._lock:
            endpoints: Counter[str] = Counter()
            branches: dict[str, dict[str, int]] = {}
            for (branch, label), count in sorted(self._calls.items()):
                endpoints[label] += count
                per_branch = branches.setdefault(branch, {"total": 0})
                per_branch[label] = count
                per_branch["total"] += count
            return {
                "total": sum(endpoints.values()),
                "endpoints": dict(sorted(endpoints.items())),
                "branches": branches,
                "sandboxes": len(self._sandboxes),
            }

    def reset_stats(self, branch: str | None = None) -> None:
        with self._lock:
            for entry in [entry for entry in self._calls if branch in (None, entry[0])]:
                del self._calls[entry]

    def handle(self, request: WorldRequest) -> WorldResponse:
        """Answer one world request; raises `WorldError` for anything the world refuses."""
        label = endpoint_label(request.method, request.path)
        branch = parse_branch(request.branch)
        header_seed = parse_int_header("X-Groundhog-Seed", request.seed, SEED_PATTERN)
        header_occurrence = parse_int_header(
            "X-Groundhog-Occurrence", request.occurrence, OCCURRENCE_PATTERN
        )
        if len(request.body) > self.max_body_bytes:
            raise BodyTooLarge(
                f"the body has {len(request.body)} bytes; the limit is {self.max_body_bytes}",
                {"limit": self.max_body_bytes},
            )
        seed = self.seed if header_seed is None else header_seed
        body = request.body if request.method.upper() != "GET" else b""
        with self._lock:
            sandbox = self._sandbox(branch)
            self._calls[(branch, label)] += 1
            if label == "POST /docs":
                brief = parse_brief(body)
                body = render.encode(json.loads(body))
            key = render.request_key(request.method, request.path, request.query, body)
            counted = sandbox.counters[key]
            sandbox.counters[key] += 1
            occurrence = counted if header_occurrence is None else header_occurrence
            if label == "POST /docs":
                rendered = self._publish(sandbox, brief)
            else:
                rendered = render_read(
                    sandbox.view(), seed, request.path, request.query, occurrence
                )
        return self._respond(rendered, seed, key, occurrence)

    def _publish(self, sandbox: Sandbox, brief: corpus.Brief) -> render.Rendered:
        try:
            doc, writes = corpus.publish(corpus.CorpusView(sandbox.overlay), brief)
        except corpus.ReadOnlyDocument as error:
            raise ReadOnlyConflict(
                f"{brief.id!r} is a base-corpus study; briefs need their own id", {"doc": brief.id}
            ) from error
        sandbox.overlay[doc.id] = doc
        payload = {"id": doc.id, "revision": doc.revision, "terms": list(doc.terms)}
        return render.Rendered(201, payload, (f"doc:{doc.id}",), writes)

    def _respond(
        self, rendered: render.Rendered, seed: int, key: str, occurrence: int
    ) -> WorldResponse:
        latency = render.latency_ms(seed, key, occurrence)
        headers = [(LATENCY_HEADER, f"{latency:.1f}"), (OCCURRENCE_ECHO_HEADER, str(occurrence))]
        if self.hints:
            headers.append((HINT_READS, ",".join(rendered.reads)))
            headers.append((HINT_WRITES, ",".join(rendered.writes)))
        return WorldResponse(
            rendered.status,
            render.encode(rendered.payload),
            tuple(headers),
            rendered.media_type,
            latency,
        )
