"""Run one rollout group through the real proxy: open a tape, fork, probe, run each branch.

A group is the unit the benchmark measures: one world seed, one tape, a fork of branches that
each run worldsim's agent through the proxy. Doing it in one function means every condition,
the group-size curve, the dependency models and the reproducibility check run groups the same
way, and each group's world sandboxes are dropped afterwards (the world caps them).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from bench import agent_adapter
from bench.world_client import WorldControl
from groundhog.client import Groundhog

PROBE_BRANCH = "probe"
OCCURRENCE_HEADER = "x-groundhog-occurrence"
FINGERPRINT_HEADER = "x-groundhog-fingerprint"
CLIENT_TIMEOUT = 120.0


@dataclass(frozen=True)
class RunContext:
    """The services and identity every group of one benchmark run uses."""

    admin: Groundhog
    world: WorldControl
    world_url: str
    proxy_url: str
    run_id: str

    @property
    def world_host(self) -> str:
        return str(httpx.URL(self.world_url).host)


@dataclass(frozen=True)
class BranchResult:
    branch: str
    strategy: str
    agent_seed: int
    outcome: agent_adapter.AgentOutcome


@dataclass
class GroupResult:
    """What one group produced: each branch's outcome, the tape's report, oracle judgments."""

    tape: str
    world_seed: int
    branches: list[BranchResult] = field(default_factory=list)
    report: dict[str, Any] = field(default_factory=dict)
    judged: list[tuple[bool, bool]] = field(default_factory=list)


def agent_seed(base: int, world_seed: int, index: int) -> int:
    """The agent's own seed for branch ``index`` of a world: distinct per branch, reproducible."""
    return base * 1_000_003 + world_seed * 64 + index


class _Judge:
    """Collects (fingerprint non-empty, oracle says changed) for each read after a write."""

    def __init__(self, world: WorldControl, branch: str, seed: int) -> None:
        self.world = world
        self.branch = branch
        self.seed = seed
        self.written = False
        self.pairs: list[tuple[bool, bool]] = []

    def __call__(self, response: httpx.Response) -> None:
        request = response.request
        if request.method != "GET":
            self.written = self.written or response.status_code < 400
            return
        if not self.written:
            return
        occurrence = int(response.headers.get(OCCURRENCE_HEADER, "0"))
        query = [[name, value] for name, value in request.url.params.multi_items()]
        read = {
            "branch": self.branch,
            "path": request.url.path,
            "query": query,
            "occurrence": occurrence,
            "seed": self.seed,
        }
        changed = self.world.judge([read])[0]
        predicted = response.headers.get(FINGERPRINT_HEADER, "") != ""
        self.pairs.append((predicted, changed))


class _ReadLog:
    """The distinct URLs a branch read, in order, so they can be read again after its writes."""

    def __init__(self) -> None:
        self.urls: list[httpx.URL] = []

    def __call__(self, request: httpx.Request) -> None:
        if request.method == "GET" and request.url not in self.urls:
            self.urls.append(request.url)


def proxied_client(
    context: RunContext,
    tape: str,
    branch: str,
    hooks: list[Any],
    request_hooks: list[Any] | None = None,
) -> httpx.Client:
    return httpx.Client(
        proxy=context.proxy_url,
        trust_env=False,
        timeout=CLIENT_TIMEOUT,
        headers={agent_adapter.TAPE_HEADER: tape, agent_adapter.BRANCH_HEADER: branch},
        event_hooks={"response": hooks, "request": request_hooks or []},
    )


def run_group(
    context: RunContext,
    *,
    tape: str,
    world_seed: int,
    mode: str,
    dependency_model: str,
    strategies: Sequence[str],
    seed_base: int,
    probe: bool,
    judge: bool = False,
    reread: bool = False,
    rules: Sequence[dict[str, Any]] = (),
    branch_label: str,
) -> GroupResult:
    """Open ``tape``, fork one branch per strategy (plus the probe), run them in order.

    Branch names start with ``branch_label``: the world keys its sandboxes by branch name
    alone, so concurrent groups need distinct labels, while two recordings of the same world
    must use the same one. Labels carry no run id, so naive mode's branch-salted noise, and
    with it every statistic, is the same in every run of the same configuration. Each group's
    sandboxes are dropped when it ends, standing in for the environment's rollback. With
    ``reread`` each branch, after its rollout, reads every URL it read once more: reads after
    its writes, for scoring the dependency model against the oracle (``judge``).
    """
    context.admin.open_tape(
        tape,
        world_seed,
        mode=mode,
        dependency_model=dependency_model,
        cooperative_hosts=[context.world_host],
        rules=list(rules),
    )
    stem = f"{branch_label}-"
    names = [f"{stem}{index}-{strategy}" for index, strategy in enumerate(strategies)]
    if probe:
        names.append(f"{stem}{PROBE_BRANCH}")
    branches = context.admin.fork(tape, "root", names, shim_counters=None).branches
    result = GroupResult(tape=tape, world_seed=world_seed)
    try:
        if probe:
            with proxied_client(context, tape, branches[-1], []) as client:
                seed = agent_seed(seed_base, world_seed, len(strategies))
                agent_adapter.run_probe(client, context.world_url, {}, seed)
        for index, strategy in enumerate(strategies):
            branch = branches[index]
            judge_hook = _Judge(context.world, branch, world_seed) if judge else None
            hooks = [judge_hook] if judge_hook else []
            seed = agent_seed(seed_base, world_seed, index)
            read_log = _ReadLog()
            with proxied_client(context, tape, branch, hooks, [read_log]) as client:
                outcome = agent_adapter.run(client, context.world_url, {}, strategy, seed)
                for url in read_log.urls if reread else []:
                    client.get(url)
            result.branches.append(BranchResult(branch, strategy, seed, outcome))
            if judge_hook:
                result.judged.extend(judge_hook.pairs)
        result.report = dataclasses.asdict(context.admin.report(tape))
    finally:
        context.world.drop_sandboxes(branches)
    return result


def run_live(
    context: RunContext, *, world_seed: int, branch: str, strategy: str, seed: int
) -> agent_adapter.AgentOutcome:
    """One rollout straight against the world, no proxy: the live world itself."""
    headers = {agent_adapter.BRANCH_HEADER: branch, agent_adapter.SEED_HEADER: str(world_seed)}
    try:
        with httpx.Client(trust_env=False, timeout=CLIENT_TIMEOUT) as client:
            return agent_adapter.run(client, context.world_url, headers, strategy, seed)
    finally:
        context.world.drop_sandboxes([branch])
