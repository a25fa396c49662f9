"""The one seam between the benchmark and worldsim's agent.

The benchmark never reimplements the agent: every rollout it measures is worldsim's own
`run_rollout` running one strategy through an HTTP client the benchmark configured (through
the proxy on a branch, or straight to the world for the live reference). This module builds
those transports, adds the prefix probe, and keeps the few result fields the statistics need,
so a change in the agent's result type breaks one function here instead of every condition.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Protocol

import httpx

from bench.rollout_client import RolloutClient
from worldsim import agent, shop_agent
from worldsim.tool_calls import PostTools

PROBE_WRITE_LATENCY = "0.0"


@dataclass(frozen=True)
class AgentOutcome:
    """What the benchmark keeps from one rollout."""

    reward: float
    attention: float
    saw_own_write: bool | None
    observation_digest: str
    decisions: tuple[str | None, ...]
    # The reward's terms with the call each came from (index into the steps; None for the
    # agent's own) and each step's method: for the research agent only (bench/prediction.py).
    sources: tuple[tuple[int | None, float], ...] = ()
    methods: tuple[str, ...] = ()


class RolloutLike(Protocol):
    """What every world's agent returns (worldsim's agent, shop_agent and mcp_agent Rollouts)."""

    @property
    def reward(self) -> float: ...
    @property
    def attention(self) -> Any: ...
    @property
    def saw_own_write(self) -> bool | None: ...
    @property
    def steps(self) -> Any: ...
    def to_json(self) -> dict[str, object]: ...


def outcome(rollout: RolloutLike) -> AgentOutcome:
    """The fields the statistics use, and a digest of everything the reward came from."""
    record = json.dumps(rollout.to_json(), sort_keys=True, default=repr, separators=(",", ":"))
    observed = json.loads(record)
    # The session token names the sandbox, not what the agent observed.
    observed.pop("session", None)
    for step in observed["steps"]:
        # The decision header says how Groundhog served a reply, not what the agent observed.
        step.pop("decision", None)
    digest = hashlib.sha256(json.dumps(observed, sort_keys=True).encode()).hexdigest()
    return AgentOutcome(
        reward=rollout.reward,
        attention=rollout.attention,
        saw_own_write=rollout.saw_own_write,
        observation_digest=digest,
        decisions=tuple(step.decision for step in rollout.steps),
        sources=rollout.sources() if isinstance(rollout, agent.Rollout) else (),
        methods=tuple(step.method for step in rollout.steps),
    )


AGENTS: dict[str, ModuleType] = {"research": agent, "shop": shop_agent}


def run(
    client: RolloutClient | httpx.Client,
    base_url: str,
    headers: Mapping[str, str],
    strategy: str,
    seed: int,
    *,
    epoch: int | None = None,
    client_key: str | None = None,
    world: str = "research",
    post_tools: bool = False,
    open_session: bool = True,
    options: Mapping[str, Any] | None = None,
) -> AgentOutcome:
    """Run ``world``'s agent for one strategy over ``client``; returns its outcome. With
    ``post_tools`` its reads are sent as tool calls (worldsim/tool_calls.py); without
    ``open_session`` the sandbox is the one ``headers`` name (opened by the harness); ``options``
    are the agent's own keyword settings (a world design's writing noise)."""
    transport: agent.Transport = agent.HttpTransport(client, base_url, headers)
    if post_tools:
        transport = PostTools(transport)
    rollout = AGENTS[world].run_rollout(
        transport,
        strategy,
        seed,
        epoch=epoch,
        client=client_key,
        open_session=open_session,
        **dict(options or {}),
    )
    return outcome(rollout)


def bearer(session: str | None) -> dict[str, str]:
    """The header that names a session's sandbox (none without a session)."""
    return {"Authorization": f"Bearer {session}"} if session else {}


class ProbeTransport:
    """Passes reads through and answers writes locally, never sending them.

    Running the deepest strategy over this records every read it would make, in the base
    state, with no write: the prefix probe. Replay (B) can only lie about a read that is on
    the tape, so without the probe B would fetch the post-write review live and look honest.
    """

    def __init__(self, inner: agent.HttpTransport, world: str = "research") -> None:
        self.inner = inner
        self.world = world

    def send(
        self,
        method: str,
        path: str,
        params: Sequence[tuple[str, str]],
        body: bytes | None,
        headers: Mapping[str, str] | None = None,
    ) -> agent.Reply:
        # Reads, and the session that names the probe's own sandbox, go to the world.
        if method.upper() == "GET" or path == "/sessions":
            return self.inner.send(method, path, params, body, headers)
        payload = AGENTS[self.world].probe_write_reply(path, body)
        headers = {agent.LATENCY_HEADER: PROBE_WRITE_LATENCY}
        return agent.Reply(201, headers, json.dumps(payload).encode())


def run_probe(
    client: RolloutClient | httpx.Client,
    base_url: str,
    seed: int,
    *,
    epoch: int | None = None,
    client_key: str | None = None,
    headers: Mapping[str, str] | None = None,
    world: str = "research",
) -> None:
    """Make the deepest strategy's reads in the base state, and no write."""
    module = AGENTS[world]
    transport = ProbeTransport(agent.HttpTransport(client, base_url, headers), world)
    module.run_rollout(transport, module.PROBE_STRATEGY, seed, epoch=epoch, client=client_key)


def attention_coefficient() -> float | None:
    """The reward's coefficient on the attention draw, if the agent publishes it."""
    value = getattr(agent, "ATTENTION_COEFFICIENT", None)
    return None if value is None else float(value)
