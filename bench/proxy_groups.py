"""Four siblings asking one new address at once: the pace of every new read in a rollout group.

In a group, one branch records a new address and the others wait on it (single flight) and are
served its bytes, so the group's last answer, not one request's, is what a rollout waits for.
Issue 18 judges it against one plain forward through mitmproxy. mitmproxy handles flows in one
Python thread, so this module also measures GROUP plain forwards of new addresses at once
through mitmdump with no addon, the same groups as deployed (one sidecar proxy per worker), and
lets all of them take turns (`bench.load.take_turns`), so each row is read against baselines
measured in the same moments.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence

from bench.load import SLICES, SliceRun, summary, take_turns
from bench.proxy_load import get_ok, load_session, proxy_with_identity
from bench.proxy_stack import open_tape

GROUP = 4  # siblings asking one new address at once
SIBLINGS = f"groundhog {GROUP} siblings, one new address (last answer)"
# The siblings' second baseline: what mitmproxy alone takes to forward GROUP new requests at once.
PLAIN_GROUP = f"mitmproxy (no addon) {GROUP} concurrent plain forwards, new addresses (last answer)"
# The same two groups as deployed: every worker has its own sidecar proxy, so the group's flows
# are not queued in one proxy's thread.
SIDECARS = f"groundhog {GROUP} siblings, one sidecar proxy each, one new address (last answer)"
PLAIN_SIDECARS = (
    f"mitmproxy (no addon) {GROUP} concurrent plain forwards, one proxy each (last answer)"
)
# Each group row and the row it is also judged against.
GROUP_BASELINES = {SIBLINGS: PLAIN_GROUP, SIDECARS: PLAIN_SIDECARS}
WARM_UP_ROUNDS = 3  # groups each condition asks before timing: its connections are open


def group_conditions(
    resolver_url: str,
    proxy_port: int,
    plain_url: str,
    upstream_url: str,
    rounds: int,
    tape: str,
    *,
    sidecar_ports: Sequence[int] = (),
    plain_sidecar_urls: Sequence[str] = (),
) -> dict[str, dict[str, float]]:
    """GROUP siblings ask one new address at once, taking turns with GROUP plain forwards.

    The siblings are GROUP branches forked on `tape` (made here), all through the Groundhog
    proxy on `proxy_port`; the plain forwards go through the mitmdump at `plain_url`. Given
    GROUP `sidecar_ports` (Groundhog proxies) and `plain_sidecar_urls` (mitmdumps), both
    groups are also asked as deployed, each sibling through a proxy of its own.
    """
    siblings = open_tape(resolver_url, tape, GROUP)
    conditions: list[tuple[str, Sequence[str | None], bool]] = [
        (SIBLINGS, [proxy_with_identity(proxy_port, tape, name) for name in siblings], True),
        (PLAIN_GROUP, [plain_url] * GROUP, False),
    ]
    if sidecar_ports or plain_sidecar_urls:
        if len(sidecar_ports) != GROUP or len(plain_sidecar_urls) != GROUP:
            raise ValueError(f"one sidecar of each kind per sibling: {GROUP} of each")
        pairs = zip(sidecar_ports, siblings, strict=True)
        sidecars = [proxy_with_identity(port, tape, name) for port, name in pairs]
        conditions += [(SIDECARS, sidecars, True), (PLAIN_SIDECARS, plain_sidecar_urls, False)]
    return asyncio.run(interleaved_groups(conditions, upstream_url, rounds, SLICES))


async def interleaved_groups(
    conditions: Sequence[tuple[str, Sequence[str | None], bool]],
    upstream_url: str,
    rounds: int,
    slices: int = SLICES,
) -> dict[str, dict[str, float]]:
    """Each condition (name, proxies, one address) asks `rounds` groups, taking turns by slice.

    A group is one request through each of the condition's proxies, all at once: of one new
    address when `one address` is true (siblings), else of a new address each. Each round is
    one latency sample, the group's last answer; throughput counts answers.
    """
    async with contextlib.AsyncExitStack() as stack:
        sessions = {
            name: await stack.enter_async_context(load_session()) for name, _, _ in conditions
        }

        async def group(name: str, proxies: Sequence[str | None], one: bool, tag: str) -> None:
            urls = [
                f"{upstream_url}/item?t={tag}" + ("" if one else f"&m={member}")
                for member in range(len(proxies))
            ]
            session = sessions[name]
            await asyncio.gather(
                *(get_ok(session, proxy, url) for proxy, url in zip(proxies, urls, strict=True))
            )

        def turn(position: int, name: str, proxies: Sequence[str | None], one: bool) -> SliceRun:
            async def run(index: int) -> tuple[list[float], float]:
                latencies = []
                started = time.perf_counter()
                for round_index in range(rounds * index // slices, rounds * (index + 1) // slices):
                    asked = time.perf_counter()
                    await group(name, proxies, one, f"g{position}&i={round_index}")
                    latencies.append(time.perf_counter() - asked)
                return latencies, time.perf_counter() - started

            return run

        for position, (name, proxies, one) in enumerate(conditions):
            for warm in range(WARM_UP_ROUNDS):
                await group(name, proxies, one, f"g{position}-warm&i={warm}")
        turns = {
            name: turn(position, name, proxies, one)
            for position, (name, proxies, one) in enumerate(conditions)
        }
        taken = await take_turns(turns, slices)
    measured = {}
    for name, proxies, _ in conditions:
        latencies, elapsed = taken[name]
        numbers = summary(latencies, elapsed)
        numbers["requests"] = len(latencies) * len(proxies)
        numbers["throughput_rps"] = numbers["requests"] / elapsed
        measured[name] = numbers
    return measured
