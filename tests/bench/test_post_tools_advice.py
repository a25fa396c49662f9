"""Issue 56, done when: the advisor's rules, applied, give one live call per address with zero
oracle lies in the benchmark's worlds — driven the way agents reach tools, by POST.

End to end through the real resolver and proxy against `python -m worldsim --uncooperative`
(the research world and the shop), with every read the agent makes sent as a tool call
(`POST /tools/search {"q": …}`, worldsim/tool_calls.py) and no rules: every call is a live
write. The advisor reads that group's tape; its rules file (`groundhog tape advise T --out F`,
what a user reviews) is applied to a second group of the same world day. There, each tool read
reaches the world once per distinct address, the world's oracle finds no stale read, and no
write of the world (a publish, a cart, a checkout, a session: each answered 201) was suggested,
though siblings sent some of them byte for byte.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from bench import credentials
from bench.groups import GroupResult, RunContext, run_group
from bench.world_client import WorldControl
from groundhog.cli import app
from groundhog.client import Groundhog
from tests.proxy.stack import Stack, running_stack
from tests.support.servers import HANG_GUARD_SECONDS, ServerProcess, start_server
from worldsim.tool_calls import TOOLS_PREFIX

pytestmark = [pytest.mark.slow, pytest.mark.timeout(HANG_GUARD_SECONDS)]

DAY = 4242
# Repeated strategies: siblings that send some writes byte for byte (the same brief, the same
# item), the evidence a status-only advisor took for a read.
STRATEGIES = {
    "research": ("deep", "verify", "deep", "verify"),
    "shop": ("deal", "impulse", "deal", "compare"),
}
WORLD_WRITES = {"research": {"/docs"}, "shop": {"/cart", "/checkout"}}
LIVE = {"recorded", "refetched", "write", "replayed-write"}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with running_stack(tmp_path_factory.mktemp("post-tools")) as running:
        yield running


@pytest.fixture(scope="module", params=["research", "shop"])
def world(request: pytest.FixtureRequest) -> Iterator[tuple[str, ServerProcess]]:
    kind = request.param
    server = start_server(["worldsim", "--world", kind, "--uncooperative", "--seed", "5"])
    try:
        yield kind, server
    finally:
        server.stop()


def _context(stack: Stack, world: ServerProcess, kind: str, control: WorldControl) -> RunContext:
    admin = Groundhog(stack.resolver.url, proxy_url=f"http://127.0.0.1:{stack.proxy.port}")
    return RunContext(
        admin=admin,
        world=control,
        world_url=world.url,
        proxy_url=f"http://127.0.0.1:{stack.proxy.port}",
        run_id="posttools",
        cooperative=False,
        world_kind=kind,
        credential_settings=credentials.detect(stack.resolver.url, "127.0.0.1"),
        post_tools=True,
    )


def _group(context: RunContext, tape: str, rules: list[dict]) -> GroupResult:
    return run_group(
        context,
        tape=tape,
        world_seed=DAY,
        mode="groundhog",
        dependency_model="rules" if rules else "closure",
        strategies=STRATEGIES[context.world_kind],
        seed_base=11,
        probe=False,
        rules=rules,
        branch_label=tape,
    )


def _tool_events(admin: Groundhog, tape: str, group: GroupResult) -> list:
    return [
        event
        for branch in group.branches
        for event in admin.iter_events(tape, branch=branch.branch)
        if httpx.URL(event.url).path.startswith(TOOLS_PREFIX + "/")
    ]


def _stale(group: GroupResult) -> int:
    assert all(b.grades.reads > 0 and b.grades.ungraded == 0 for b in group.branches)
    return sum(branch.grades.stale for branch in group.branches)


def test_the_advisors_rules_share_each_tool_read_once_and_no_read_lies(
    stack: Stack, world: tuple[str, ServerProcess], tmp_path: Path
) -> None:
    kind, server = world
    with WorldControl(server.url) as control:
        context = _context(stack, server, kind, control)
        with context.admin:
            before = f"{kind}-posts"
            first = _group(context, before, [])
            events = _tool_events(context.admin, before, first)
            # No rules: every tool read was a live write of its own branch.
            assert events and {event.decision for event in events} == {"write"}
            assert _stale(first) == 0

            rules_file = tmp_path / "advised.json"
            done = CliRunner().invoke(
                app,
                ["tape", "advise", before, "--out", str(rules_file)],
                env={"GROUNDHOG_RESOLVER_URL": stack.resolver.url, "COLUMNS": "200"},
            )
            assert done.exit_code == 0, done.output
            advised = json.loads(rules_file.read_text())
            suggested = {rule["path"] for rule in advised["rules"]}
            assert suggested and all(path.startswith(TOOLS_PREFIX + "/") for path in suggested)
            assert not suggested & WORLD_WRITES[kind]
            verdicts = context.admin.report(before).advice["operations"]
            created = [v for v in verdicts if v["path"] in WORLD_WRITES[kind]]
            assert created and all("created something" in v["why_not"] for v in created)

            after = f"{kind}-advised"
            second = _group(context, after, advised["rules"])
            events = [
                event
                for event in _tool_events(context.admin, after, second)
                if httpx.URL(event.url).path in suggested
            ]
            addresses = {(e.request_key, e.occurrence, e.fingerprint) for e in events}
            live = [event for event in events if event.decision in LIVE]
            assert len(live) == len(addresses) < len(events)
            assert "shared" in {event.decision for event in events}
            assert _stale(second) == 0
