"""Run one rollout group through the real proxy: open a tape, fork, probe, run the siblings.

A group is the unit the benchmark measures: one world seed (the day the group runs on), one
tape, a fork of branches that each run the agent through the proxy, *concurrently*, as a GRPO
group runs against a live service. Every read a branch is served is graded by the world's
oracle at once (by its X-Request-Id, against the branch's own session): the lie rate comes from
the world, never from the resolver's account of what it did. Each group's sandboxes are dropped
afterwards (the world caps them).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import httpx

from bench import agent_adapter, credentials, http_clients
from bench.rollout_client import Request, Response, RolloutClient
from bench.world_client import WorldControl
from groundhog.client import Groundhog
from groundhog.protocol import headers as protocol_headers
from worldsim.tool_calls import is_tool_call

PROBE_BRANCH = "probe"
REQUEST_ID_HEADER = "x-request-id"
CLIENT_TIMEOUT = 120.0


@dataclass(frozen=True)
class RunContext:
    """The services and identity every group of one benchmark cell uses."""

    admin: Groundhog
    world: WorldControl
    world_url: str
    proxy_url: str
    run_id: str
    cooperative: bool = True
    world_kind: str = "research"
    # Extra tape settings that make the world's session credentials interchangeable (empty when
    # the resolver keys no credential at all): see bench/credentials.py.
    credential_settings: dict[str, Any] = field(default_factory=dict)
    # The agent's reads sent as tool calls, `POST /tools/...` (worldsim/tool_calls.py).
    post_tools: bool = False
    # The agent's own keyword settings (bench.predict's world designs set its writing noise).
    agent_options: dict[str, Any] = field(default_factory=dict)
    # Kept-alive connections every rollout of the cell reuses (to the proxy, or to the world
    # for the live reference): a branch is named by headers on each request, not by its
    # connection, and a connection per rollout cost the proxy an accepted client connection
    # and an upstream one (and the world an accept) for a rollout's few requests.
    connections: http_clients.ConnectionPool = field(
        default_factory=http_clients.ConnectionPool, compare=False
    )

    @property
    def world_host(self) -> str:
        return str(httpx.URL(self.world_url).host)

    def proxy_for(self, index: int) -> str:
        """Branch ``index``'s proxy: several (comma-separated) are used in turn, so siblings
        of one group go through different proxies and resolver replicas."""
        proxies = [url.strip() for url in self.proxy_url.split(",") if url.strip()]
        return proxies[index % len(proxies)]


@dataclass
class Grades:
    """The oracle's verdicts on one branch's served reads."""

    reads: int = 0
    stale: int = 0
    reads_after_write: int = 0
    stale_after_write: int = 0
    ungraded: int = 0
    pairs: list[tuple[bool, bool]] = field(default_factory=list)


@dataclass(frozen=True)
class BranchResult:
    branch: str
    strategy: str
    agent_seed: int
    outcome: agent_adapter.AgentOutcome
    grades: Grades


@dataclass
class GroupResult:
    """What one group produced: each branch's outcome and grades, and the tape's report."""

    tape: str
    world_seed: int
    branches: list[BranchResult] = field(default_factory=list)
    report: dict[str, Any] = field(default_factory=dict)

    @property
    def judged(self) -> list[tuple[bool, bool]]:
        return [pair for branch in self.branches for pair in branch.grades.pairs]


def cell_context(
    admin: Groundhog,
    world: WorldControl,
    *,
    world_url: str,
    resolver_url: str,
    proxy_url: str,
    run_id: str,
    kind: str,
    cooperative: bool,
) -> RunContext:
    """The context of one cell's groups, with the tape settings its world's sessions need."""
    return RunContext(
        admin=admin,
        world=world,
        world_url=world_url,
        proxy_url=proxy_url,
        run_id=run_id,
        cooperative=cooperative,
        world_kind=kind,
        credential_settings=credentials.detect(resolver_url, str(httpx.URL(world_url).host)),
    )


def agent_seed(base: int, world_seed: int, index: int) -> int:
    """The agent's own seed for branch ``index`` of a world: distinct per branch, reproducible."""
    return base * 1_000_003 + world_seed * 64 + index


class Grader:
    """Response hook: learns the branch's session, and grades every served read by the oracle.

    The oracle compares a read with the branch's sandbox as it is when asked, and only the
    branch's own writes change that sandbox, so reads are graded in one batch before the
    branch's next write is sent (`before_request`, a request hook) and at the end (`flush`):
    the same verdicts as a call per read, at one oracle call per run of reads (a call per
    read was a fifth of the benchmark driver's time). ``pairs`` collects (fingerprint
    non-empty, oracle says the branch's writes changed it) for reads after a write.
    """

    def __init__(self, world: WorldControl, *, enabled: bool = True) -> None:
        self.world = world
        self.enabled = enabled
        self.session: str | None = None
        self.written = False
        self.grades = Grades()
        # (request id, after a write, fingerprint non-empty) of reads not yet graded.
        self._pending: list[tuple[str, bool, bool]] = []

    def __call__(self, response: Response) -> None:
        request = response.request
        if request.method != "GET" and not is_tool_call(request.method, request.url.path):
            if request.url.path == "/sessions" and response.status_code == 201:
                response.read()
                self.session = str(response.json()["session"])
            elif response.status_code < 400:
                self.written = True
            return
        if not self.enabled:
            return
        rid = response.headers.get(REQUEST_ID_HEADER)
        if rid is None or self.session is None:
            self.grades.ungraded += 1
            return
        predicted = response.headers.get(protocol_headers.FINGERPRINT, "") != ""
        self._pending.append((rid, self.written, predicted))

    def before_request(self, request: Request) -> None:
        """A write is about to change the sandbox: grade the reads served before it."""
        if request.method != "GET" and not is_tool_call(request.method, request.url.path):
            self.flush()

    def flush(self) -> None:
        """Grade every read not yet graded (call before the sandbox is dropped)."""
        pending, self._pending = self._pending, []
        if not pending or self.session is None:
            return
        reads = [{"request_id": rid, "sandbox": self.session} for rid, _, _ in pending]
        grades = self.grades
        for (_, after_write, predicted), verdict in zip(
            pending, self.world.grade(reads), strict=True
        ):
            grades.reads += 1
            grades.stale += int(verdict["stale"])
            if after_write:
                grades.reads_after_write += 1
                grades.stale_after_write += int(verdict["stale"])
                grades.pairs.append((predicted, bool(verdict["changed"])))


class _ReadLog:
    """The distinct URLs a branch read, in order, so they can be read again after its writes."""

    def __init__(self) -> None:
        self.urls: list[str] = []

    def __call__(self, request: Request) -> None:
        if request.method == "GET" and request.url not in self.urls:
            self.urls.append(request.url)


def proxied_client(
    context: RunContext,
    tape: str,
    branch: str,
    hooks: list[Any],
    request_hooks: list[Any] | None = None,
    index: int = 0,
    capability: str | None = None,
) -> RolloutClient:
    return RolloutClient(
        proxy=context.proxy_for(index),
        timeout=CLIENT_TIMEOUT,
        # The branch's capability from its fork: a deployment may require it (compose does).
        headers=protocol_headers.naming(tape, branch, capability),
        event_hooks={"response": hooks, "request": request_hooks or []},
        pool=context.connections,
    )


def open_group_tape(
    context: RunContext, tape: str, world_seed: int, mode: str, model: str, rules: Sequence[Any]
) -> None:
    """A tape for one group; only a cooperative world's host is named cooperative."""
    context.admin.open_tape(
        tape,
        world_seed,
        mode=mode,
        dependency_model=model,
        cooperative_hosts=[context.world_host] if context.cooperative else [],
        rules=list(rules),
        **context.credential_settings,
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
    reread: bool = False,
    rules: Sequence[dict[str, Any]] = (),
    branch_label: str,
    concurrent: bool = True,
) -> GroupResult:
    """Open ``tape``, fork one branch per strategy (plus the probe), run the siblings.

    Siblings run concurrently unless ``concurrent`` is false (the reproducibility check runs
    them in order). Each branch obtains its own session on day ``world_seed`` with an
    idempotency key from ``branch_label``, so two recordings of one world use the same names.
    With ``reread`` each branch, after its rollout, reads every URL it read once more: reads
    after its writes, for scoring the dependency model against the oracle. The MCP world's
    groups run its MCP agent instead (bench/mcp_groups.py), with the same arguments.
    """
    if context.world_kind == "mcp":
        from bench import mcp_groups  # imports this module: only when an MCP cell runs

        return mcp_groups.run_group(
            context,
            tape=tape,
            world_seed=world_seed,
            mode=mode,
            dependency_model=dependency_model,
            strategies=strategies,
            seed_base=seed_base,
            probe=probe,
            reread=reread,
            rules=rules,
            branch_label=branch_label,
            concurrent=concurrent,
        )
    open_group_tape(context, tape, world_seed, mode, dependency_model, rules)
    stem = f"{branch_label}-"
    names = [f"{stem}{index}-{strategy}" for index, strategy in enumerate(strategies)]
    if probe:
        names.append(f"{stem}{PROBE_BRANCH}")
    forked = context.admin.fork(tape, "root", names, shim_counters=None)
    branches, capabilities = forked.branches, forked.capabilities
    result = GroupResult(tape=tape, world_seed=world_seed)
    sessions: list[str] = []
    try:
        if probe:
            grader = Grader(context.world, enabled=False)
            probe_client = proxied_client(
                context, tape, branches[-1], [grader], capability=capabilities.get(branches[-1])
            )
            with probe_client as client:
                seed = agent_seed(seed_base, world_seed, len(strategies))
                agent_adapter.run_probe(
                    client,
                    context.world_url,
                    seed,
                    epoch=world_seed,
                    client_key=names[-1],
                    world=context.world_kind,
                )
            sessions += [grader.session] if grader.session else []

        def one(index: int) -> BranchResult:
            strategy = strategies[index]
            grader = Grader(context.world)
            seed = agent_seed(seed_base, world_seed, index)
            read_log = _ReadLog()
            client = proxied_client(
                context,
                tape,
                branches[index],
                [grader],
                [read_log, grader.before_request],
                index,
                capability=capabilities.get(branches[index]),
            )
            with client:
                try:
                    headers: dict[str, str] = {}
                    if context.post_tools:
                        grader.session = open_sandbox(context, names[index], world_seed)
                        headers = agent_adapter.bearer(grader.session)
                    outcome = agent_adapter.run(
                        client,
                        context.world_url,
                        headers,
                        strategy,
                        seed,
                        epoch=world_seed,
                        client_key=names[index],
                        world=context.world_kind,
                        post_tools=context.post_tools,
                        open_session=not context.post_tools,
                        options=context.agent_options,
                    )
                    for url in read_log.urls if reread else []:
                        client.get(url, headers=agent_adapter.bearer(grader.session))
                    grader.flush()
                finally:
                    sessions.extend([grader.session] if grader.session else [])
            return BranchResult(branches[index], strategy, seed, outcome, grader.grades)

        result.branches = run_branches(one, len(strategies), concurrent=concurrent)
        result.report = dataclasses.asdict(context.admin.report(tape, view="counts"))
    finally:
        context.world.drop_sandboxes(sessions)
    return result


def open_sandbox(context: RunContext, client_key: str, epoch: int) -> str:
    """A rollout's sandbox opened by the harness, as an environment's reset would, straight at
    the world: with tools reached by POST (`post_tools`) the tape holds the agent's tool calls
    and writes, not the setup every branch makes before its first call."""
    body = json.dumps({"client": client_key, "epoch": epoch}, sort_keys=True).encode()
    answer = httpx.post(
        f"{context.world_url.rstrip('/')}/sessions",
        content=body,
        headers={"Content-Type": "application/json"},
        timeout=CLIENT_TIMEOUT,
        trust_env=False,
    )
    answer.raise_for_status()
    return str(answer.json()["session"])


def run_branches(
    one: Callable[[int], BranchResult], count: int, *, concurrent: bool
) -> list[BranchResult]:
    """`one(i)` for each of a group's `count` branches: all at once, as siblings run in
    training (one thread each), or one after another."""
    if concurrent and count > 1:
        with ThreadPoolExecutor(max_workers=count) as pool:
            return list(pool.map(one, range(count)))
    return [one(index) for index in range(count)]


def run_live(
    context: RunContext, *, world_seed: int, strategy: str, seed: int, client_key: str
) -> agent_adapter.AgentOutcome:
    """One rollout straight against the world, no proxy: the live world itself.

    A cooperative world is given the world seed for its per-call noise (as the proxy would);
    an uncooperative one draws its own.
    """
    if context.world_kind == "mcp":
        from bench import mcp_groups

        return mcp_groups.run_live(
            context, world_seed=world_seed, strategy=strategy, seed=seed, client_key=client_key
        )
    headers = {protocol_headers.SEED: str(world_seed)} if context.cooperative else {}
    grader = Grader(context.world, enabled=False)
    try:
        with RolloutClient(
            timeout=CLIENT_TIMEOUT, event_hooks={"response": [grader]}, pool=context.connections
        ) as client:
            return agent_adapter.run(
                client,
                context.world_url,
                headers,
                strategy,
                seed,
                epoch=world_seed,
                client_key=client_key,
                world=context.world_kind,
            )
    finally:
        context.world.drop_sandboxes([grader.session] if grader.session else [])
