"""The MCP world's state: one sandbox per MCP session, call counts and the served-read log.

Kept apart from the MCP server (worldsim/mcp_world.py) so the in-process check
(worldsim/mcp_check.py) and the tests run the same state the server answers from, with no
transport: one place turns a tool call into an answer, counts it, and remembers each served
read (its noise and the hash of its bytes) so the oracle can re-render it against any session's
trip. Without it a served read could not be graded, and the world could not count its calls.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import Counter, OrderedDict
from dataclasses import dataclass, field

from worldsim import mcp_desk, noise, render
from worldsim.errors import UnknownServed, UnknownSession

logger = logging.getLogger(__name__)

SERVED_LOG_LIMIT = 500_000


@dataclass(frozen=True)
class Draw:
    """The exogenous inputs of one answer: the day (slow state) and the per-call seed."""

    epoch: int
    seed: int
    occurrence: int


@dataclass(frozen=True)
class Served:
    """A read the world answered, kept so the oracle can re-render it against any trip."""

    tool: str
    arguments: dict[str, object]
    draw: Draw
    body_sha256: str


@dataclass
class Sandbox:
    """One MCP session's trip, its day and its own per-call occurrence counters."""

    epoch: int
    trip: mcp_desk.Trip = field(default_factory=mcp_desk.Trip)
    counters: Counter[str] = field(default_factory=Counter)
    # (tool, arguments, the world's call number): what re-renders the session's answers exactly
    draws: list[tuple[str, dict[str, object], int]] = field(default_factory=list)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Desk:
    """The world's state: a sandbox per MCP session, call statistics and the served-read log."""

    def __init__(self, seed: int = 0, *, sandbox_cap: int = 4096) -> None:
        self.seed = seed
        self.sandbox_cap = sandbox_cap
        self._sandboxes: dict[str, Sandbox] = {}
        self._calls: Counter[tuple[str, str]] = Counter()
        self._live_calls = 0
        self._sessions_opened = 0
        self._served: OrderedDict[str, Served] = OrderedDict()
        self._lock = threading.Lock()

    def open_session(self, session: str, day: int | None) -> None:
        """A new session's sandbox, on day ``day`` (the world's seed when none is named)."""
        with self._lock:
            if session in self._sandboxes:
                return
            if len(self._sandboxes) >= self.sandbox_cap:
                # Its tool calls will be refused (UnknownSession): the answer is already on
                # its way, so the session cannot be refused here.
                logger.warning("%s sandboxes exist; session not given one", self.sandbox_cap)
                return
            self._sessions_opened += 1
            self._sandboxes[session] = Sandbox(epoch=self.seed if day is None else day)

    def call(
        self,
        session: str,
        tool: str,
        arguments: dict[str, object],
        *,
        call_number: int | None = None,
    ) -> dict[str, object]:
        """Run one tool for ``session``: a fresh noise draw per call (uncooperative).

        The draw is the world's call counter's; ``call_number`` names another (a session's
        answers re-rendered from its `draws`, bench/mcp_live_check.py).
        """
        with self._lock:
            sandbox = self._sandboxes.get(session)
            if sandbox is None:
                raise UnknownSession(
                    "the MCP session has no sandbox (never opened, or reset)",
                    {"session": session[:80]},
                )
            self._calls[(session, tool)] += 1
            self._live_calls += 1
            number = self._live_calls if call_number is None else call_number
            sandbox.draws.append((tool, dict(arguments), number))
            seed = noise.salted_seed(self.seed, f"call:{number}")
            key = mcp_desk.tool_key(tool, arguments)
            occurrence = sandbox.counters[key]
            sandbox.counters[key] += 1
            if tool in mcp_desk.WRITE_TOOLS:
                return mcp_desk.write(
                    sandbox.trip, self.seed, seed, tool, arguments, occurrence, sandbox.epoch
                )
            draw = Draw(sandbox.epoch, seed, occurrence)
            payload = mcp_desk.read(
                sandbox.trip, self.seed, seed, tool, arguments, occurrence, sandbox.epoch
            )
            body = render.encode(payload)
            # The id names the answer (its noise and its bytes): equal answers, equal ids.
            tag = f"{draw.epoch}|{draw.seed}|{draw.occurrence}|{key}|".encode()
            request_id = _sha(tag + body)[:24]
            self._served[request_id] = Served(tool, dict(arguments), draw, _sha(body))
            while len(self._served) > SERVED_LOG_LIMIT:
                self._served.popitem(last=False)
            return {**payload, "request_id": request_id}

    def grade(self, request_id: str, session: str) -> dict[str, object]:
        """Was a served read true for ``session`` now, with the noise it was served with?"""
        with self._lock:
            served = self._served.get(request_id)
            if served is None:
                raise UnknownServed(
                    f"the world has no served read {request_id!r}", {"request_id": request_id}
                )
            sandbox = self._sandboxes.get(session)
            if sandbox is None:
                raise UnknownServed(f"no sandbox {session[:80]!r}", {"sandbox": session[:80]})
            now = self._render(sandbox.trip, served)
            base = self._render(mcp_desk.Trip(), served)
        return {
            "request_id": request_id,
            "path": served.tool,
            "stale": now != served.body_sha256,
            "changed": now != base,
        }

    def _render(self, trip: mcp_desk.Trip, served: Served) -> str:
        draw = served.draw
        payload = mcp_desk.read(
            trip, self.seed, draw.seed, served.tool, served.arguments, draw.occurrence, draw.epoch
        )
        return _sha(render.encode(payload))

    def reset(self, *sessions: str) -> list[str]:
        """Drop the named sessions' sandboxes (every sandbox when none is named); the dropped."""
        with self._lock:
            if not sessions:
                dropped = sorted(self._sandboxes)
                self._sandboxes.clear()
                return dropped
            return [name for name in sessions if self._sandboxes.pop(name, None) is not None]

    def stats(self) -> dict[str, object]:
        with self._lock:
            endpoints: Counter[str] = Counter()
            branches: dict[str, dict[str, int]] = {}
            for (session, tool), count in sorted(self._calls.items()):
                endpoints[f"tools/call {tool}"] += count
                per = branches.setdefault(session, {"total": 0})
                per[tool] = count
                per["total"] += count
            return {
                "total": sum(endpoints.values()),
                "endpoints": dict(sorted(endpoints.items())),
                "branches": branches,
                "sandboxes": len(self._sandboxes),
                "sessions_opened": self._sessions_opened,
            }

    def reset_stats(self) -> None:
        with self._lock:
            self._calls.clear()

    def draws(self, session: str) -> list[tuple[str, dict[str, object], int]]:
        """The session's tool calls in order, each with the call number its noise came from."""
        with self._lock:
            sandbox = self._sandboxes.get(session)
            if sandbox is None:
                raise UnknownSession("no such session", {"session": session[:80]})
            return list(sandbox.draws)

    def sessions(self) -> list[str]:
        with self._lock:
            return sorted(self._sandboxes)
