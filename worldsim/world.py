"""The world as an object: branch sandboxes, occurrence counters and call statistics.

Both the HTTP server and the in-process transport (used for fast calibration and as a live
reference) answer through `World.handle`, so there is exactly one place that turns a request
into bytes. State rollback is the sandbox's job, not Groundhog's: each branch gets its own copy
of the corpus, created lazily from its nearest existing ancestor (or the base corpus), which is
what a real environment's snapshot/rollback layer would provide.
"""

from __future__ import annotations

import hashlib
import json
import threading
import urllib.parse
from collections import Counter, OrderedDict
from dataclasses import dataclass, field

from groundhog.protocol import headers as protocol_headers
from worldsim import corpus, noise, render, shop, tool_calls
from worldsim.dispatch import (
    OCCURRENCE_PATTERN,
    PUBLIC_SANDBOX,
    SEED_PATTERN,
    endpoint_label,
    parse_branch,
    parse_brief,
    parse_int_header,
    parse_session,
    parse_session_request,
    render_read,
)
from worldsim.errors import BodyTooLarge, ReadOnlyConflict, SandboxCapReached, UnknownSession

LATENCY_HEADER = "X-World-Latency-Ms"
OCCURRENCE_ECHO_HEADER = "X-World-Occurrence"
REQUEST_ID_HEADER = "X-Request-Id"
KINDS = ("research", "shop")
SESSION_PREFIX = "s-"
# Served answers the oracle can still judge; older ones are forgotten (a bound, not a policy).
SERVED_LOG_LIMIT = 500_000


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
    session: str | None = None


@dataclass(frozen=True)
class WorldResponse:
    status: int
    body: bytes
    headers: tuple[tuple[str, str], ...]
    media_type: str
    latency_ms: float | None = None
    request_id: str = ""


@dataclass(frozen=True)
class Draw:
    """The exogenous inputs of one answer: the day (slow state) and the per-call noise."""

    epoch: int
    seed: int
    occurrence: int


@dataclass(frozen=True)
class Served:
    """A read the world answered, kept so the oracle can re-render it against any sandbox."""

    path: str
    query: tuple[tuple[str, str], ...]
    draw: Draw
    body_sha256: str


def _ascii(value: str) -> str:
    return urllib.parse.quote(value, safe=",:/-_.~")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def noise_token(seed: int, name: str) -> str:
    return f"{noise.salted_seed(seed, f'session:{name}'):016x}"


@dataclass
class Sandbox:
    """One branch's corpus overlay and its own per-request-key occurrence counters."""

    overlay: dict[str, corpus.Doc] = field(default_factory=dict)
    counters: Counter[str] = field(default_factory=Counter)
    epoch: int | None = None
    cart: shop.Cart = field(default_factory=shop.Cart)

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
        cooperative: bool = True,
        kind: str = "research",
        attention_call_weight: float = render.ATTENTION_CALL_WEIGHT,
        write_noise_sd: float = 0.0,
        clock_scale: float = 1.0,
    ) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown world {kind!r}; choose one of {', '.join(KINDS)}")
        # Which world this is: the research world, or the shop (worldsim/shop.py).
        self.kind = kind
        self.seed = seed
        self.sandbox_cap = sandbox_cap
        # An uncooperative world reads no X-Groundhog-* header and names no dependency.
        self.cooperative = cooperative
        self.hints = hints and cooperative
        self.max_body_bytes = max_body_bytes
        # The per-call share of the attention shock (bench's noise-share curve varies it).
        self.attention_call_weight = attention_call_weight
        # Noise inside writes and in the clock (bench.predict's world designs; 0 and 1 are the
        # declared world, whose bytes they leave unchanged).
        self.write_noise_sd = write_noise_sd
        self.clock_scale = clock_scale
        self._sandboxes: dict[str, Sandbox] = {}
        self._calls: Counter[tuple[str, str]] = Counter()
        self._lock = threading.RLock()
        self._sessions_opened = 0
        self._live_calls = 0
        self._served: OrderedDict[str, Served] = OrderedDict()

    def open_session(self, epoch: int | None, client: str | None = None) -> dict[str, object]:
        """A new sandbox named by a token the rollout obtained, on day ``epoch`` (slow state).

        This is how a real service identifies a rollout's state: a session the client asked
        for, not a header a proxy adds. Tokens come from the world's own counter, so two
        sessions never share a name, unless the client gives an idempotency key (same key, same
        day: same session).
        """
        day = self.seed if epoch is None else epoch
        with self._lock:
            self._calls[("sessions", "POST /sessions")] += 1
            if client is not None:
                token = SESSION_PREFIX + noise_token(self.seed, f"{day}:{client}")
                if token in self._sandboxes:
                    return {"session": token, "epoch": day}
            else:
                self._sessions_opened += 1
                token = SESSION_PREFIX + noise_token(self.seed, str(self._sessions_opened))
            if len(self._sandboxes) >= self.sandbox_cap:
                raise SandboxCapReached(
                    f"{self.sandbox_cap} sandboxes exist; POST /_reset to drop them or start"
                    f" the world with a larger --sandbox-cap",
                    {"sandbox_cap": self.sandbox_cap},
                )
            self._sandboxes[token] = Sandbox(epoch=day)
            return {"session": token, "epoch": self._sandboxes[token].epoch}

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
                created = Sandbox(
                    dict(ancestor.overlay),
                    Counter(ancestor.counters),
                    ancestor.epoch,
                    ancestor.cart.copy(),
                )
                break
        self._sandboxes[branch] = created
        return created

    def reset(self, *branches: str) -> list[str]:
        """Drop the named branches' sandboxes (every sandbox when none is named); the dropped."""
        with self._lock:
            if not branches:
                dropped = sorted(self._sandboxes)
                self._sandboxes.clear()
                return dropped
            return [name for name in branches if self._sandboxes.pop(name, None) is not None]

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

    def _who(self, request: WorldRequest) -> tuple[str, int | None, int | None]:
        """The sandbox, the header seed and the header occurrence of a request.

        A session token wins; without one a cooperative world takes the branch header, an
        uncooperative one serves the shared public sandbox. Only a cooperative world reads the
        X-Groundhog-* headers at all.
        """
        if not self.cooperative:
            if request.session is not None:
                return parse_session(request.session), None, None
            return PUBLIC_SANDBOX, None, None
        header_seed = parse_int_header(protocol_headers.SEED, request.seed, SEED_PATTERN)
        header_occurrence = parse_int_header(
            protocol_headers.OCCURRENCE, request.occurrence, OCCURRENCE_PATTERN
        )
        if request.session is not None:
            return parse_session(request.session), header_seed, header_occurrence
        return parse_branch(request.branch), header_seed, header_occurrence

    def handle(self, request: WorldRequest) -> WorldResponse:
        """Answer one world request; raises `WorldError` for anything the world refuses."""
        if tool_calls.is_tool_call(request.method, request.path):
            request = tool_calls.as_read(request)  # answered exactly as the GET it stands for
        label = self.label(request.method, request.path)
        if label == "POST /sessions":
            opened = self.open_session(*parse_session_request(request.body))
            return WorldResponse(201, render.encode(opened), (), "application/json", 0.0)
        branch, header_seed, header_occurrence = self._who(request)
        if len(request.body) > self.max_body_bytes:
            raise BodyTooLarge(
                f"the body has {len(request.body)} bytes; the limit is {self.max_body_bytes}",
                {"limit": self.max_body_bytes},
            )
        body = request.body if request.method.upper() != "GET" else b""
        with self._lock:
            if branch.startswith(SESSION_PREFIX) and branch not in self._sandboxes:
                raise UnknownSession(
                    "the session token is unknown (never opened, or reset); POST /sessions first",
                    {"session": branch[:80]},
                )
            sandbox = self._sandbox(branch)
            self._calls[(branch, label)] += 1
            self._live_calls += 1
            if header_seed is not None:
                seed = header_seed
            elif self.cooperative:
                seed = self.seed if sandbox.epoch is None else sandbox.epoch
            else:
                # The uncooperative world's own generator: a fresh draw for every call.
                seed = noise.salted_seed(self.seed, f"call:{self._live_calls}")
            epoch = sandbox.epoch if sandbox.epoch is not None else seed
            if label == "POST /docs":
                brief = parse_brief(body)
                body = render.encode(json.loads(body))
            key = render.request_key(request.method, request.path, request.query, body)
            counted = sandbox.counters[key]
            sandbox.counters[key] += 1
            occurrence = counted if header_occurrence is None else header_occurrence
            if label == "POST /docs":
                rendered = self._publish(sandbox, brief, (seed, key, occurrence))
            elif request.method.upper() != "GET":
                rendered = shop.write(sandbox.cart, label, body, seed, key, occurrence, epoch)
            else:
                rendered = self.read_as(
                    sandbox, seed, request.path, request.query, occurrence, epoch
                )
            draw = Draw(epoch, seed, occurrence)
            answer = self._respond(rendered, seed, key, occurrence, draw)
            if request.method.upper() == "GET":
                self._remember(answer, request, draw)
        return answer

    def label(self, method: str, path: str) -> str:
        if self.kind == "shop":
            return shop.label(method, path)
        return endpoint_label(method, path)

    def read_as(
        self,
        sandbox: Sandbox | None,
        seed: int,
        path: str,
        query: tuple[tuple[str, str], ...],
        occurrence: int,
        epoch: int,
    ) -> render.Rendered:
        """Render a read against a sandbox's state (None: the base world); touches no state."""
        if self.kind == "shop":
            cart = sandbox.cart if sandbox is not None else shop.Cart()
            return shop.read(cart, seed, path, tuple(query), occurrence, epoch)
        view = sandbox.view() if sandbox is not None else corpus.BASE_VIEW
        return render_read(
            view, seed, path, query, occurrence, epoch=epoch, call_weight=self.attention_call_weight
        )

    def sandbox(self, name: str) -> Sandbox | None:
        with self._lock:
            return self._sandboxes.get(name)

    def _remember(self, answer: WorldResponse, request: WorldRequest, draw: Draw) -> None:
        rid = answer.request_id
        self._served[rid] = Served(request.path, tuple(request.query), draw, _sha(answer.body))
        self._served.move_to_end(rid)
        while len(self._served) > SERVED_LOG_LIMIT:
            self._served.popitem(last=False)

    def served(self, request_id: str) -> Served | None:
        with self._lock:
            return self._served.get(request_id)

    def _publish(
        self, sandbox: Sandbox, brief: corpus.Brief, draw: tuple[int, str, int]
    ) -> render.Rendered:
        try:
            doc, writes = corpus.publish(corpus.CorpusView(sandbox.overlay), brief)
        except corpus.ReadOnlyDocument as error:
            raise ReadOnlyConflict(
                f"{brief.id!r} is a base-corpus study; briefs need their own id", {"doc": brief.id}
            ) from error
        sandbox.overlay[doc.id] = doc
        payload: dict[str, object] = {
            "id": doc.id,
            "revision": doc.revision,
            "terms": list(doc.terms),
        }
        if self.write_noise_sd > 0:
            # Drawn from the write's own per-call noise: no other call, sibling or replay can
            # have seen it, so no tape can share it.
            shock = noise.normal(draw[0], "reception", draw[1], draw[2])
            payload["reception"] = round(self.write_noise_sd * shock, 6)
        return render.Rendered(201, payload, (f"doc:{doc.id}",), writes)

    def _respond(
        self, rendered: render.Rendered, seed: int, key: str, occurrence: int, draw: Draw
    ) -> WorldResponse:
        latency = render.latency_ms(seed, key, occurrence)
        if self.clock_scale != 1.0:
            latency = round(latency * self.clock_scale, 1)
        body = render.encode(rendered.payload)
        # The id names the answer (its noise and its bytes), so the oracle can later re-render
        # exactly this answer against any sandbox; equal answers get equal ids (deterministic).
        tag = f"{draw.epoch}|{draw.seed}|{draw.occurrence}|{key}|".encode()
        request_id = _sha(tag + body)[:24]
        headers = [(LATENCY_HEADER, f"{latency:.1f}"), (REQUEST_ID_HEADER, request_id)]
        if self.cooperative:
            headers.append((OCCURRENCE_ECHO_HEADER, str(occurrence)))
        if self.hints:
            # Resource names can carry a client's text (a doc id); headers must stay ASCII.
            headers.append((protocol_headers.READS, _ascii(",".join(rendered.reads))))
            headers.append((protocol_headers.WRITES, _ascii(",".join(rendered.writes))))
        return WorldResponse(
            rendered.status, body, tuple(headers), rendered.media_type, latency, request_id
        )
