"""The Python client and every integration present each branch's capability: on a tape that
requires them, everything they send through the real proxy is served, while the same request
without the capability is refused (docs/reliability.md, "What a worker can reach")."""

from __future__ import annotations

import asyncio

import httpx

from groundhog.branch import Branch
from groundhog.client import Groundhog
from groundhog.group import GroupRunner
from groundhog.rollout_groups import RolloutGroups
from groundhog.verifiers_adapter import with_groundhog
from tests.groundhog.test_verifiers_adapter import AsyncToyEnv
from tests.groundhog.upstream import Upstream

REQUIRED = {"branch_capabilities": "required"}


def bare_status(gh: Groundhog, tape: str, branch: str, url: str) -> int:
    """The same request naming the branch without its capability."""
    headers = {"X-Groundhog-Tape": tape, "X-Groundhog-Branch": branch}
    with httpx.Client(proxy=gh.proxy_url, trust_env=False, timeout=30) as client:
        return client.get(url, headers=headers).status_code


def test_a_group_runner_presents_each_branchs_capability(
    gh_proxied: Groundhog, tape_name: str, http_upstream: Upstream
) -> None:
    tape = gh_proxied.open(tape_name, world_seed=3, **REQUIRED)
    url = f"{http_upstream.url}/cap/{tape_name}"
    decisions: dict[str, str] = {}

    def rollout(branch: Branch) -> float:
        with branch.client() as client:
            decisions[branch.path] = client.get(url).headers["X-Groundhog-Decision"]
        with branch.session() as session:
            assert session.get(url).status_code == 200
        return 1.0

    result = GroupRunner(tape, size=2).run(rollout)
    assert sorted(decisions.values()) == ["recorded", "shared"]
    capabilities = {branch.capability for branch in result.branches}
    assert len(capabilities) == 2 and None not in capabilities
    assert bare_status(gh_proxied, tape_name, "root/b0", url) == 403

    async def arollout(branch: Branch) -> float:
        async with branch.async_client() as client:
            return float((await client.get(url)).status_code)

    statuses = GroupRunner(tape, parent="root/b0", size=2).run(arollout).rewards
    assert statuses == [200.0, 200.0]


def test_a_branch_handle_asks_for_its_capability_once(
    gh_proxied: Groundhog, tape_name: str
) -> None:
    tape = gh_proxied.open(tape_name, **REQUIRED)
    (forked,) = tape.fork("root", 1)
    handle = tape.branch(forked.path)  # made without one: asked of the resolver
    assert handle.capability == forked.capability
    assert handle.headers()["X-Groundhog-Capability"] == forked.capability
    assert handle.proxy_url.endswith(f":{forked.capability}@{gh_proxied.proxy_url[7:]}")


def test_the_verifiers_adapter_presents_the_rollouts_capability(
    gh_proxied: Groundhog, tape_name: str, http_upstream: Upstream
) -> None:
    tape = gh_proxied.open(tape_name, world_seed=5, **REQUIRED)
    env = with_groundhog(AsyncToyEnv(http_upstream.url), tape=tape)

    async def main() -> list:
        async with env.groundhog.async_httpx_client() as http:
            env.http = http
            return await env.generate([f"{tape_name}-v"], 2)

    states = [state for _, state in asyncio.run(main())]
    assert sorted(state["decision"] for state in states) == ["recorded", "shared"]


def test_rollout_groups_present_the_rollouts_capability(
    gh_proxied: Groundhog, tape_name: str, http_upstream: Upstream
) -> None:
    groups = RolloutGroups(gh_proxied.open(tape_name, world_seed=7, **REQUIRED))
    url = f"{http_upstream.url}/groups/{tape_name}"

    async def one(sample: int) -> str:
        async with groups.rollout("g", sample), groups.async_client() as tools:
            return (await tools.get(url)).headers["X-Groundhog-Decision"]

    async def both() -> list[str]:
        return list(await asyncio.gather(one(0), one(1)))

    assert sorted(asyncio.run(both())) == ["recorded", "shared"]
    with groups.rollout_sync("g", 2):
        # requests negotiates otherwise than httpx (Accept-Encoding, `Accept: */*`), which no
        # longer splits the key (engine/protocol_noise.py): the httpx siblings' address.
        answer = groups.requests_session().get(url)
        assert (answer.status_code, answer.headers["X-Groundhog-Decision"]) == (200, "shared")
    assert bare_status(gh_proxied, tape_name, "root/g/s2", url) == 403
