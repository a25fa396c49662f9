"""The research agent the benchmark trains: four strategies and a reward from what it observed.

The agent is what turns a lying world into a biased gradient. Its reward uses only responses it
saw (document insight, the attention shock, the latency header, the review of its own brief),
so if a replay hides its own write the `verify` strategy loses its revision gain and ranks
below `deep`. The rollout is a deterministic function of (agent seed, the responses it sees):
the same bytes give the same reward bit for bit, which is how the benchmark proves that a
Groundhog rollout equals a live one. The agent's own randomness (its writing noise) is keyed by
the agent seed, never by the world's.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any, Protocol

from groundhog.protocol import headers as protocol_headers
from worldsim import noise
from worldsim.errors import WorldError

QUALITY_BASE = 0.2
# The reward's coefficient on the observed attention shock (whose mean is zero): a benchmark
# may use it as a control variate.
ATTENTION_COEFFICIENT = 1.0
SOURCE_WEIGHTS = (0.6, 0.3, 0.15)
LATENCY_COST_PER_SECOND = 0.25
WRITING_NOISE_SD = 0.25
LATENCY_HEADER = "x-world-latency-ms"


class Strategy(StrEnum):
    """What the agent does; true ranking verify > deep > skim > guess."""

    GUESS = "guess"  # publish without reading
    SKIM = "skim"  # search, read the top hit, publish
    DEEP = "deep"  # search, read the top three, publish
    VERIFY = "verify"  # deep, then read the review of its own brief and revise


def parse_strategy[S: StrEnum](value: S | str, kind: type[S] = Strategy) -> S:  # type: ignore[assignment]
    """A strategy by name (of ``kind``); the error lists the valid names."""
    try:
        return kind(value)
    except ValueError as error:
        valid = ", ".join(strategy.value for strategy in kind)
        raise ValueError(f"unknown strategy {value!r}; choose one of {valid}") from error


PROBE_STRATEGY = Strategy.VERIFY


def probe_write_reply(path: str, body: bytes | None) -> dict[str, object]:
    """What a probe answers locally for a write (it never sends one): a publication."""
    brief = json.loads(body or b"{}")
    return {"id": brief.get("id"), "revision": 1, "terms": []}


SOURCES_READ = {Strategy.GUESS: 0, Strategy.SKIM: 1, Strategy.DEEP: 3, Strategy.VERIFY: 3}


class AgentError(WorldError, RuntimeError):
    """The world (or the proxy in front of it) answered something a rollout cannot use."""


@dataclass(frozen=True)
class Reply:
    """One response as the agent sees it; header names are lowercase."""

    status: int
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> dict[str, object]:
        return json.loads(self.body)


class Transport(Protocol):
    """How the agent reaches the world: over HTTP (through a proxy or not) or in process."""

    def send(
        self,
        method: str,
        path: str,
        params: Sequence[tuple[str, str]],
        body: bytes | None,
        headers: Mapping[str, str] | None = None,
    ) -> Reply: ...


class HttpTransport:
    """Sends through an injected `httpx.Client` or `requests.Session` (its proxy settings apply).

    `headers` are added to every request: `X-Groundhog-Branch`/`-Seed` for a direct live run,
    or `X-Groundhog-Tape`/`-Branch` for the proxy.
    """

    def __init__(self, client: object, base_url: str, headers: Mapping[str, str] | None = None):
        self.client = client
        self.base_url = base_url.rstrip("/")
        self.headers = dict(headers or {})

    def send(
        self,
        method: str,
        path: str,
        params: Sequence[tuple[str, str]],
        body: bytes | None,
        extra_headers: Mapping[str, str] | None = None,
    ) -> Reply:
        headers = {**self.headers, **(extra_headers or {})}
        if body is not None:
            headers["Content-Type"] = "application/json"
        body_argument = "data" if type(self.client).__module__.startswith("requests") else "content"
        response = self.client.request(  # type: ignore[attr-defined]
            method,
            self.base_url + path,
            params=list(params) or None,
            headers=headers,
            **{body_argument: body},
        )
        lowered = {name.lower(): value for name, value in response.headers.items()}
        return Reply(response.status_code, lowered, response.content)


@dataclass(frozen=True)
class Step:
    """One call of a rollout, for the benchmark's accounting (lie rate, live calls)."""

    method: str
    path: str
    status: int
    latency_ms: float
    decision: str | None


@dataclass(frozen=True)
class Rollout:
    """A finished rollout: the reward and every term it was computed from."""

    strategy: Strategy
    agent_seed: int
    topic: str
    doc_id: str
    quality: float
    attention: float
    latency_cost: float
    revision_gain: float
    writing_noise: float
    review_exists: bool | None
    reward: float
    steps: tuple[Step, ...]
    session: str | None = None
    # The last publication's `reception` (noise inside a write; 0 when the world sends none).
    reception: float = 0.0
    # Each cited source's insight term and the index in `steps` of the GET that read it.
    source_terms: tuple[float, ...] = ()
    source_steps: tuple[int, ...] = ()

    def sources(self) -> tuple[tuple[int | None, float], ...]:
        """The reward as a sum of terms, each with the step whose answer it came from.

        None marks the agent's own terms (its base quality and writing noise). The terms add up
        to `reward`; bench.prediction uses them to split a rollout's reward into what a tape can
        share (the terms of reads before the first write) and what it cannot.
        """
        per_step = [-LATENCY_COST_PER_SECOND * step.latency_ms / 1000.0 for step in self.steps]
        calls = [(step.method, step.path) for step in self.steps]
        per_step[calls.index(("GET", "/context"))] += ATTENTION_COEFFICIENT * self.attention
        for index, term in zip(self.source_steps, self.source_terms, strict=True):
            per_step[index] += term
        publications = [index for index, call in enumerate(calls) if call[0] == "POST"]
        per_step[publications[-1]] += self.reception
        if self.revision_gain:
            per_step[calls.index(("GET", "/review"))] += self.revision_gain
        own = self.quality - math.fsum(self.source_terms)
        return (*enumerate(per_step), (None, own))

    @property
    def saw_own_write(self) -> bool | None:
        """For `verify`: did the review show the brief it had just published?"""
        return self.review_exists

    def to_json(self) -> dict[str, object]:
        return {**asdict(self), "strategy": str(self.strategy)}


def choose_strategy(
    probabilities: Mapping[Strategy, float], agent_seed: int, draw: int = 0
) -> Strategy:
    """Sample a strategy with the agent's own keyed randomness (never the world's)."""
    total = sum(probabilities.values())
    if total <= 0 or any(p < 0 or not math.isfinite(p) for p in probabilities.values()):
        raise ValueError(
            f"probabilities must be finite, non-negative, not all zero: {probabilities}"
        )
    threshold = noise.uniform(agent_seed, "agent", "strategy", draw) * total
    cumulative = 0.0
    ordered = [s for s in Strategy if s in probabilities]
    for strategy in ordered:
        cumulative += probabilities[strategy]
        if threshold < cumulative:
            return strategy
    return ordered[-1]


def _canonical(payload: Mapping[str, object]) -> bytes:
    return json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()


class _Session:
    """One rollout's calls: checks statuses and accumulates the observed latency."""

    def __init__(self, transport: Transport) -> None:
        self.transport = transport
        self.steps: list[Step] = []
        self.headers: dict[str, str] = {}
        self.token: str | None = None

    def open(self, epoch: int | None, client: str | None) -> None:
        """Obtain the session that names this rollout's sandbox (setup: not part of the reward)."""
        given = {"epoch": epoch, "client": client}
        payload = {name: value for name, value in given.items() if value is not None}
        reply = self.transport.send("POST", "/sessions", (), _canonical(payload))
        if reply.status != 201:
            raise AgentError(f"POST /sessions answered {reply.status}: {reply.body[:300]!r}")
        self.token = str(reply.json()["session"])
        self.headers = {"Authorization": f"Bearer {self.token}"}

    def call(
        self,
        method: str,
        path: str,
        params: Sequence[tuple[str, str]] = (),
        payload: Mapping[str, object] | None = None,
        expect: int = 200,
    ) -> dict[str, Any]:
        body = _canonical(payload) if payload is not None else None
        reply = self.transport.send(method, path, params, body, self.headers)
        if reply.status != expect or LATENCY_HEADER not in reply.headers:
            raise AgentError(
                f"{method} {path} answered {reply.status} (expected {expect} with a"
                f" {LATENCY_HEADER} header): {reply.body[:300]!r}"
            )
        latency = float(reply.headers[LATENCY_HEADER])
        self.steps.append(
            Step(
                method,
                path,
                reply.status,
                latency,
                reply.headers.get(protocol_headers.DECISION.lower()),
            )
        )
        return reply.json()

    def latency_seconds(self) -> float:
        return math.fsum(step.latency_ms for step in self.steps) / 1000.0


def _insight(source: dict[str, object]) -> float:
    """A study's evidence strength; a brief (an agent's own document) carries none of its own."""
    value = source.get("insight")
    return float(value) if isinstance(value, int | float) else 0.0


def _brief(
    topic: str, sources: list[dict[str, object]], notes: Sequence[str] = ()
) -> dict[str, object]:
    lines = [f"Brief on {topic}."]
    lines += [f"{source['title']} (evidence {_insight(source):.3f})." for source in sources]
    if notes:
        lines.append("Revised: " + "; ".join(notes) + ".")
    return {
        "id": f"brief-{topic}",
        "topic": topic,
        "title": f"{topic.title()} brief",
        "body": " ".join(lines),
        "sources": [str(source["id"]) for source in sources],
    }


def run_rollout(
    transport: Transport,
    strategy: Strategy | str,
    agent_seed: int,
    *,
    epoch: int | None = None,
    client: str | None = None,
    open_session: bool = True,
    writing_noise_sd: float = WRITING_NOISE_SD,
) -> Rollout:
    """Run one rollout of `strategy`; deterministic given the agent seed and the replies.

    The rollout first obtains a session (`POST /sessions`, on day ``epoch``) and names its
    sandbox by that token on every later call, as a client of a real service would; with
    ``open_session=False`` it relies on the transport to select the sandbox (a cooperative
    world's branch header).
    """
    strategy = parse_strategy(strategy)
    session = _Session(transport)
    if open_session:
        session.open(epoch, client)
    trends = session.call("GET", "/trends")["trends"]
    topic = str(trends[0]["topic"])
    attention = float(session.call("GET", "/context")["attention"])
    sources: list[dict[str, object]] = []
    source_steps: list[int] = []
    if SOURCES_READ[strategy]:
        hits = session.call("GET", "/search", [("q", topic)])["hits"]
        for hit in hits[: SOURCES_READ[strategy]]:
            sources.append(session.call("GET", f"/docs/{hit['id']}"))
            source_steps.append(len(session.steps) - 1)
    brief = _brief(topic, sources)
    published = session.call("POST", "/docs", payload=brief, expect=201)
    doc_id = str(published["id"])
    revision_gain = 0.0
    review_exists: bool | None = None
    if strategy is Strategy.VERIFY:
        review = session.call("GET", "/review", [("doc", doc_id)])
        review_exists = bool(review["exists"])
        if review_exists:
            notes = [str(note) for note in review["notes"]]
            published = session.call(
                "POST", "/docs", payload=_brief(topic, sources, notes), expect=201
            )
            revision_gain = float(review["uplift"])
    writing_noise = writing_noise_sd * noise.normal(agent_seed, "agent", "writing")
    reception = float(published.get("reception", 0.0))
    insight_terms = [
        weight * _insight(source) for weight, source in zip(SOURCE_WEIGHTS, sources, strict=False)
    ]
    quality = QUALITY_BASE + math.fsum(insight_terms) + writing_noise
    latency_cost = LATENCY_COST_PER_SECOND * session.latency_seconds()
    reward = quality + ATTENTION_COEFFICIENT * attention - latency_cost + revision_gain + reception
    return Rollout(
        strategy=strategy,
        agent_seed=agent_seed,
        topic=topic,
        doc_id=doc_id,
        quality=quality,
        attention=attention,
        latency_cost=latency_cost,
        revision_gain=revision_gain,
        writing_noise=writing_noise,
        review_exists=review_exists,
        reward=reward,
        steps=tuple(session.steps),
        session=session.token,
        reception=reception,
        source_terms=tuple(insight_terms),
        source_steps=tuple(source_steps),
    )


def http_rollout(
    client: object,
    base_url: str,
    strategy: Strategy | str,
    agent_seed: int,
    headers: Mapping[str, str] | None = None,
    *,
    epoch: int | None = None,
    client_key: str | None = None,
) -> Rollout:
    """`run_rollout` over HTTP with an injected client (route it through the proxy as you like)."""
    transport = HttpTransport(client, base_url, headers)
    return run_rollout(transport, strategy, agent_seed, epoch=epoch, client=client_key)
