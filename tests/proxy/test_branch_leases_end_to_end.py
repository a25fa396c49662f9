"""Branch leases through the real proxy and resolver: leased hits cost the resolver nothing, a
fork of a leased branch sees them, a proxy killed before shipping ships them when it restarts
(and serves from its disk tier the answers it kept before), and another proxy's ask for a
leased branch waits for the holder to release."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.lease_scale import lease_calls
from bench.lease_scale import resolves as resolver_resolves
from tests.proxy.stack import Stack, running_stack
from tests.proxy.test_end_to_end import ask
from tests.proxy.upstream_server import Upstream
from tests.support.servers import start_server, wait_until

LEASES = ("--set", "groundhog_branch_leases=true")


@pytest.fixture
def leased(tmp_path: Path, resolver_args: tuple[str, ...]) -> Iterator[Stack]:
    """A resolver with short branch leases and a proxy that takes them; the proxy's hits wait
    a minute to be shipped, so a test sees them unshipped (its log holds them meanwhile)."""
    env = {"GROUNDHOG_BRANCH_LEASE_SECONDS": "3"}
    ship = ("--set", "groundhog_lease_ship_seconds=60")
    with running_stack(
        tmp_path / "data", *LEASES, *ship, resolver_env=env, resolver_args=resolver_args
    ) as stack:
        yield stack


def resolves(stack: Stack) -> int:
    """How many `/v1/resolve` calls the resolver has answered (its own metric)."""
    return resolver_resolves(stack.resolver.url)


def read_aheads(stack: Stack) -> int:
    """How many `/v1/leases/ahead` calls the resolver answered (its own metric)."""
    return lease_calls(stack.resolver.url).get("ahead", 0)


def events(stack: Stack, tape: str, branch: str) -> list[dict]:
    route = f"/v1/tapes/{tape}/events"
    return stack.admin("GET", route, params={"branch": branch}).json()["events"]


def warm(stack: Stack, tape: str, upstream: Upstream, paths: list[str]) -> list[str]:
    """Record `paths` on root/b0 and share them with root/b1 (whose proxy then keeps their
    answers): the remaining children of root start where they did."""
    children = stack.fork(tape, 4)
    for branch in children[:2]:
        for path in paths:
            reply = ask(stack, tape, branch, f"{upstream.url}{path}")
            assert reply.status == 200, reply.body
    return children


def test_a_leased_branch_serves_its_recorded_reads_without_asking_the_resolver(
    leased: Stack, upstream: Upstream
) -> None:
    tape = leased.open_tape()
    paths = ["/item/a", "/item/b", "/item/c"]
    children = warm(leased, tape, upstream, paths)
    before = resolves(leased)

    served = [ask(leased, tape, children[2], f"{upstream.url}{path}") for path in paths]

    assert resolves(leased) == before, "a leased hit asked the resolver"
    assert [reply.headers["x-groundhog-decision"] for reply in served] == ["shared"] * 3
    assert upstream.state.count() == len(paths), "the world was asked once per address"
    # The events route settles the lease first: the hits are shipped and counted.
    shipped = events(leased, tape, children[2])
    assert [(e["decision"], e["occurrence"]) for e in shipped] == [("shared", 0)] * 3
    assert leased.branch(tape, children[2])["events"] == 3
    assert [e["exchange_id"] for e in shipped] == [
        e["exchange_id"] for e in events(leased, tape, children[0])
    ]


def test_a_sibling_is_served_locally_the_bytes_recorded_through_its_sidecar(
    leased: Stack, upstream: Upstream
) -> None:
    tape = leased.open_tape()
    b0, b1, b2, _ = leased.fork(tape, 4)
    url = f"{upstream.url}/item/x"
    recorded = [ask(leased, tape, b0, url) for _ in range(2)]  # occurrences 0 and 1
    assert [reply.headers["x-groundhog-decision"] for reply in recorded] == ["recorded"] * 2
    assert recorded[0].body != recorded[1].body  # the world answers each call anew
    before = resolves(leased)
    for sibling in (b1, b2):
        assert [ask(leased, tape, sibling, url).body for _ in range(2)] == [
            reply.body for reply in recorded
        ]
    assert resolves(leased) == before, "the sidecar kept what was recorded through it"
    assert upstream.state.count("/item/x") == 2
    assert [e["occurrence"] for e in events(leased, tape, b2)] == [0, 1]


def test_a_fork_of_a_leased_branch_starts_after_the_hits_its_sidecar_served(
    leased: Stack, upstream: Upstream
) -> None:
    tape = leased.open_tape()
    children = warm(leased, tape, upstream, ["/item/a"])
    before = ask(leased, tape, children[2], f"{upstream.url}/item/a")
    assert before.headers["x-groundhog-decision"] == "shared"

    # The hit is still in the proxy (shipped in a minute): the fork asks for it first.
    grandchild = leased.fork(tape, 1, parent=children[2])[0]
    after = ask(leased, tape, grandchild, f"{upstream.url}/item/a")

    assert after.headers["x-groundhog-decision"] == "recorded"  # occurrence 1, not 0 again
    assert after.body != before.body
    assert upstream.state.count("/item/a") == 2


def test_a_proxy_killed_before_shipping_ships_its_hits_when_it_restarts(
    leased: Stack, upstream: Upstream
) -> None:
    tape = leased.open_tape()
    children = warm(leased, tape, upstream, ["/item/a", "/item/b"])
    for path in ["/item/a", "/item/b"]:
        assert ask(leased, tape, children[2], f"{upstream.url}{path}").status == 200
    leased.crash_proxy()  # its hits are in its log only
    # Nothing shipped: the resolver's count of the branch is as the fork left it.
    assert leased.branch(tape, children[2])["events"] == 0

    leased.restart_proxy()
    wait_until(lambda: leased.branch(tape, children[2])["events"] == 2, timeout=60)
    shipped = events(leased, tape, children[2])
    assert [(e["decision"], e["occurrence"]) for e in shipped] == [("shared", 0)] * 2
    # And the branch goes on from there: its next ask of /item/a is occurrence 1.
    again = ask(leased, tape, children[2], f"{upstream.url}/item/a")
    assert again.headers["x-groundhog-decision"] == "recorded"


def kept_on_disk(stack: Stack) -> list[Path]:
    """The recorded answers the proxy's disk tier holds (proxy/answer_disk.py)."""
    return sorted((stack.data_dir / "leases" / "answers").glob("*.answer"))


def test_a_restarted_proxy_serves_from_its_disk_what_the_read_ahead_does_not_carry(
    leased: Stack, upstream: Upstream
) -> None:
    tape = leased.open_tape()
    b0, b1 = leased.fork(tape, 2)
    # Over the grant's read-ahead limit (16 KiB): after a restart only the disk tier has it.
    url = f"{upstream.url}/big?size=65536"
    recorded = ask(leased, tape, b0, url)
    assert recorded.headers["x-groundhog-decision"] == "recorded"
    assert len(recorded.body) == 65536
    wait_until(lambda: len(kept_on_disk(leased)) == 1, what="the answer written to disk")

    leased.crash_proxy()  # memory gone; the disk keeps what was written
    leased.restart_proxy()
    before = resolves(leased)
    shared = ask(leased, tape, b1, url)

    assert resolves(leased) == before, "the restarted proxy asked the resolver for it"
    assert shared.status == 200 and shared.headers["x-groundhog-decision"] == "shared"
    assert shared.body == recorded.body
    assert upstream.state.count("/big") == 1
    assert [e["occurrence"] for e in events(leased, tape, b1)] == [0]


def test_another_proxy_asking_a_leased_branch_is_answered_once_the_holder_released(
    leased: Stack, upstream: Upstream, tmp_path: Path
) -> None:
    tape = leased.open_tape()
    children = warm(leased, tape, upstream, ["/item/a"])
    held = ask(leased, tape, children[2], f"{upstream.url}/item/a")
    assert held.headers["x-groundhog-decision"] == "shared"
    other = start_server(
        [
            "proxy",
            "--resolver-url",
            leased.resolver.url,
            "--data",
            str(tmp_path / "other"),
            "--ca-dir",
            str(leased.data_dir / "ca"),
            "--ssl-insecure",
            # Told `branch-leased` until the holder has shipped and released: on a loaded
            # machine that can take longer than the default retry window.
            "--set",
            "groundhog_resolve_retry=60",
        ],
        health_path=None,
    )
    try:
        second = Stack(leased.resolver, other, leased.data_dir)
        reply = ask(second, tape, children[2], f"{upstream.url}/item/a")
    finally:
        other.stop()
    # The holder shipped its hit first: the other proxy's ask is the branch's second.
    assert reply.status == 200, reply.body
    assert reply.headers["x-groundhog-decision"] == "recorded"
    assert [e["occurrence"] for e in events(leased, tape, children[2])] == [0, 1]


def test_a_sidecar_that_loses_the_resolver_serves_held_hits_and_refuses_misses(
    leased: Stack, upstream: Upstream
) -> None:
    tape = leased.open_tape()
    children = warm(leased, tape, upstream, ["/item/a", "/item/b"])
    assert ask(leased, tape, children[2], f"{upstream.url}/item/a").status == 200  # leased
    calls = upstream.state.count()
    leased.crash_resolver()

    held = ask(leased, tape, children[2], f"{upstream.url}/item/b")
    miss = ask(leased, tape, children[2], f"{upstream.url}/item/new")

    assert held.status == 200 and held.headers["x-groundhog-decision"] == "shared"
    assert miss.status == 503  # fail closed: nothing goes to the world unrecorded
    assert upstream.state.count() == calls
    leased.restart_resolver()
    # Asked for the branch's state, the sidecar ships what it served meanwhile.
    shipped = events(leased, tape, children[2])
    assert [(e["decision"], e["occurrence"]) for e in shipped] == [("shared", 0)] * 2


def test_a_sidecar_serves_locally_what_a_sibling_recorded_through_another(
    leased: Stack, upstream: Upstream, tmp_path: Path
) -> None:
    tape = leased.open_tape()
    b0, b1 = leased.fork(tape, 2)
    paths = ["/item/a", "/item/b", "/item/c"]
    recorded = [ask(leased, tape, b0, f"{upstream.url}{path}").body for path in paths]
    other = start_server(
        [
            "proxy", "--resolver-url", leased.resolver.url, "--data", str(tmp_path / "other"),
            "--ca-dir", str(leased.data_dir / "ca"), "--ssl-insecure", *LEASES,
        ],
        health_path=None,
    )  # fmt: skip
    try:
        second = Stack(leased.resolver, other, leased.data_dir)
        before = resolves(leased)
        # Its first ask takes the lease and is the resolver's (a recording this sidecar lacks):
        # that makes the sidecar read ahead what else b0 recorded, answered here from then on.
        served = [ask(second, tape, b1, f"{upstream.url}{paths[0]}")]
        assert resolves(leased) == before + 1
        # Kept in memory first, then written through to its disk tier: once all are on disk,
        # all are in memory.
        kept = tmp_path / "other" / "leases" / "answers"
        wait_until(lambda: len(list(kept.glob("*.answer"))) == len(paths), what="read ahead")
        assert read_aheads(leased) == 1
        served += [ask(second, tape, b1, f"{upstream.url}{path}") for path in paths[1:]]
        assert resolves(leased) == before + 1, "the read-ahead did not answer them"
    finally:
        other.stop()
    assert [reply.body for reply in served] == recorded
    assert [reply.headers["x-groundhog-decision"] for reply in served] == ["shared"] * len(paths)
    assert upstream.state.count() == len(paths)


def test_a_leased_sidecar_serves_https_hits_under_its_private_ca(
    leased: Stack, tls_upstream: Upstream
) -> None:
    tape = leased.open_tape()
    b0, b1 = leased.fork(tape, 2)
    url = f"{tls_upstream.url}/item/secure"
    assert url.startswith("https://")
    recorded = ask(leased, tape, b0, url)  # TLS to the worker under the proxy's CA
    before = resolves(leased)
    shared = ask(leased, tape, b1, url)
    assert resolves(leased) == before
    assert shared.status == 200 and shared.body == recorded.body
    assert shared.headers["x-groundhog-decision"] == "shared"
    assert tls_upstream.state.count() == 1
