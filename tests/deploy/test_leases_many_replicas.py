"""Branch leases on PostgreSQL behind several resolver replicas: a lease survives a replica's
death, and a sidecar that loses every replica keeps serving its held hits and fails closed.

Issue 34's many-node promise, as a Kubernetes deployment runs it: two `python -m resolver`
replicas share one fresh database, and the leased sidecar (`python -m proxy`, leases on) reaches
them through a Service — here tests/support/balancer.py, which sends each new connection to the
next live replica. A lease is a row in the shared store, not a replica's memory, so when the
replica behind the sidecar's connections is `kill -9`ed, the sidecar's renewals and shipments
must go on through the survivor and keep the lease at its epoch; the worker's
hits go on being served locally, at the right occurrences and with the recorded bytes, and a
fork through the survivor starts after every one of them. With every replica dead the sidecar
answers its held hits and refuses a miss (`503`: nothing reaches the world unrecorded); a
replica back, what it served ships and the branch goes on, at its next occurrence even for an
ask made while no replica was there (the hits it was served must reach the store first). The
single-resolver version of the every-replica-dead case is
tests/proxy/test_branch_leases_end_to_end.py; new here are the replicas, the balancer and the
lease's epoch read from `gh_branch_leases` across the deaths. Skipped with a reason without
PostgreSQL.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from bench.lease_scale import resolves
from tests.deploy.test_many_nodes import fresh_database
from tests.proxy.clients import Reply
from tests.proxy.stack import Stack
from tests.proxy.test_end_to_end import ask
from tests.proxy.upstream_server import Upstream
from tests.support.balancer import Balancer
from tests.support.servers import ServerProcess, free_ports, start_server, wait_until

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

# Short leases keep the test quick; the renewal long poll is held a third of it (1 s).
LEASE_SECONDS = 3.0
# Far above how long a shipment or a renewal takes to fail over, even on a loaded machine.
PATIENCE_SECONDS = 120.0


@dataclass(frozen=True)
class LeaseRow:
    """A branch's lease as the store has it, and how many events the store counts for it."""

    holder: str | None
    epoch: int
    expires: float
    shipped: int
    events: int


@dataclass
class Cluster:
    """Two resolver replicas on one database, a balancer in front, a leased sidecar behind it."""

    database_url: str
    replicas: list[ServerProcess]
    balancer: Balancer
    proxy: ServerProcess
    data: Path

    def ask(self, tape: str, branch: str, url: str) -> Reply:
        """A worker's GET of `url` through the sidecar, as `branch` of `tape`."""
        # `ask` needs only the proxy and its CA; the resolver is the balancer's business.
        return ask(Stack(self.replicas[0], self.proxy, self.data), tape, branch, url)

    def admin(
        self, method: str, route: str, via: ServerProcess | None = None, **kwargs: Any
    ) -> httpx.Response:
        """An admin call through the balancer, or straight to the replica `via`."""
        base = via.url if via is not None else self.balancer.url
        answer = httpx.request(method, base + route, timeout=60, trust_env=False, **kwargs)
        assert answer.status_code < 400, f"{method} {route}: {answer.status_code} {answer.text}"
        return answer

    def fork(
        self, tape: str, children: int, parent: str = "root", via: ServerProcess | None = None
    ) -> list[str]:
        body = {"parent": parent, "children": children}
        return self.admin("POST", f"/v1/tapes/{tape}/fork", via, json=body).json()["branches"]

    def events(self, tape: str, branch: str, via: ServerProcess) -> list[dict]:
        """The branch's events (the route settles its lease first: the holder ships)."""
        route = f"/v1/tapes/{tape}/events"
        return self.admin("GET", route, via, params={"branch": branch}).json()["events"]

    def rows(self, query: str, tape: str, branch: str) -> list[tuple[Any, ...]]:
        """`query`'s rows for the branch (`%s`: the tape's name, then the branch's path), read
        from the database itself: an admin route would settle the lease (ask the holder back)
        before it answered."""
        plain = self.database_url.replace("postgresql+psycopg://", "postgresql://")
        with psycopg.connect(plain, autocommit=True) as connection:
            return connection.execute(query, (tape, branch)).fetchall()

    def lease(self, tape: str, branch: str) -> LeaseRow:
        """The branch's row of `gh_branch_leases`."""
        found = self.rows(
            "SELECT l.holder, l.epoch, l.expires, l.shipped, b.event_count"
            " FROM gh_branch_leases l JOIN gh_branches b ON b.id = l.branch_id"
            " JOIN gh_tapes t ON t.id = b.tape_id WHERE t.name = %s AND b.path = %s",
            tape,
            branch,
        )
        assert found, f"no lease row for {tape}/{branch}"
        (row,) = found
        return LeaseRow(row[0], int(row[1]), float(row[2]), int(row[3]), int(row[4]))

    def counters(self, tape: str, branch: str) -> dict[str, int]:
        """The branch's occurrence counters by request key."""
        found = self.rows(
            "SELECT o.key_hash, o.count FROM gh_occurrences o"
            " JOIN gh_branches b ON b.id = o.branch_id JOIN gh_tapes t ON t.id = b.tape_id"
            " WHERE t.name = %s AND b.path = %s",
            tape,
            branch,
        )
        return {str(key): int(count) for key, count in found}

    def kill(self, index: int) -> float:
        """`kill -9` the replica's process group; the wall time once it is dead (any lease
        expiry the store holds past this was written by a replica still alive)."""
        self.replicas[index].kill_group_hard()
        return time.time()

    def restart(self, index: int) -> None:
        """The replica again, on its port (the balancer's endpoint) and database."""
        dead = self.replicas[index]
        self.replicas[index] = start_replica(dead.command[3:-4], dead.port)


def start_replica(args: list[str], port: int) -> ServerProcess:
    """`python -m resolver ARGS` on `port`, leading its own process group (killed whole)."""
    env = {"GROUNDHOG_BRANCH_LEASE_SECONDS": str(LEASE_SECONDS)}
    return start_server(["resolver", *args], port=port, env=env, own_group=True)


def stop_all(servers: list[ServerProcess]) -> None:
    for server in servers:
        server.stop()


@contextmanager
def running_cluster(postgres_url: str, data: Path, *proxy_flags: str) -> Iterator[Cluster]:
    """Both replicas started at once on a fresh database (their migrations race, as replicas'
    do), the balancer, then the sidecar on the balancer's URL; all ended afterwards."""
    with fresh_database(postgres_url) as url, ExitStack() as stack:
        ports = free_ports(2)
        launches = [
            (["--data", str(data / f"r{index}"), "--database-url", url], port)
            for index, port in enumerate(ports)
        ]
        # Ended last in, first out: the sidecar (it ships and releases), the balancer, then the
        # replicas (this list: a restarted replica takes its dead one's place), the database.
        replicas: list[ServerProcess] = []
        stack.callback(stop_all, replicas)
        with ThreadPoolExecutor(len(launches)) as pool:
            futures = [pool.submit(start_replica, args, port) for args, port in launches]
        failed = [error for future in futures if (error := future.exception()) is not None]
        replicas += [future.result() for future in futures if future.exception() is None]
        if failed:
            raise failed[0]
        balancer = stack.enter_context(Balancer(ports))
        proxy = start_server(
            [
                "proxy", "--resolver-url", balancer.url, "--data", str(data / "proxy"),
                "--ssl-insecure", "--set", "groundhog_branch_leases=true", *proxy_flags,
            ],
            health_path=None,
        )  # fmt: skip
        cluster = Cluster(url, replicas, balancer, proxy, data / "proxy")
        stack.callback(proxy.stop)
        yield cluster


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    """The world: a loopback server whose every answer is new (it numbers its calls)."""
    with Upstream(name="world") as server:
        yield server


def distinct(replies: list[Reply]) -> bool:
    return len({reply.body for reply in replies}) == len(replies)


def occurrences(replies: list[Reply]) -> list[int]:
    return [int(reply.headers["x-groundhog-occurrence"]) for reply in replies]


# b0 records these (each call to the world answers anew); b1 asks them again, leased.
PATHS = ["/item/a", "/item/a", "/item/b", "/item/b", "/item/c", "/item/d"]
OCCURRENCES = [0, 1, 0, 1, 0, 0]


@pytest.mark.parametrize(
    "ship_seconds",
    [
        pytest.param("60", id="hits-unshipped-at-the-death"),
        pytest.param("0.2", id="hits-shipping-through-the-death"),
    ],
)
def test_a_lease_survives_a_replica_death_at_its_epoch_and_loses_no_hit(
    postgres_url: str, upstream: Upstream, tmp_path: Path, ship_seconds: str
) -> None:
    ship = ("--set", f"groundhog_lease_ship_seconds={ship_seconds}")
    with running_cluster(postgres_url, tmp_path, *ship) as cluster:
        tape = f"replicas-{ship_seconds}"
        cluster.admin("POST", "/v1/tapes", json={"name": tape})
        b0, b1 = cluster.fork(tape, 2)
        recorded = [cluster.ask(tape, b0, upstream.url + path) for path in PATHS]
        assert [reply.decision for reply in recorded] == ["recorded"] * len(PATHS)
        assert distinct(recorded), "the world answers each call with new bytes"
        world_calls = upstream.state.count()

        before = [resolves(replica.url) for replica in cluster.replicas]
        first = [cluster.ask(tape, b1, upstream.url + path) for path in PATHS[:3]]
        assert [r.decision for r in first] == ["shared"] * 3
        assert [r.body for r in first] == [r.body for r in recorded[:3]]
        assert occurrences(first) == OCCURRENCES[:3]
        assert [resolves(r.url) for r in cluster.replicas] == before, "a leased hit was resolved"
        held = cluster.lease(tape, b1)
        assert held.holder is not None and held.epoch >= 1

        # The replica behind the most of the sidecar's connections (its renewal long poll, its
        # pooled keep-alive connections) dies: those connections end with it.
        open_now = cluster.balancer.open_connections()
        victim = max((0, 1), key=lambda index: open_now[cluster.replicas[index].port])
        assert open_now[cluster.replicas[victim].port] >= 1, open_now
        survivor = cluster.replicas[1 - victim]
        dead_at = cluster.kill(victim)
        wait_until(
            lambda: cluster.balancer.open_connections()[cluster.replicas[victim].port] == 0,
            what="the dead replica's connections to end",
        )
        if ship_seconds == "60":
            assert cluster.lease(tape, b1).events == 0, "the hits are in the sidecar's log only"

        rest = [cluster.ask(tape, b1, upstream.url + path) for path in PATHS[3:]]
        assert [r.decision for r in rest] == ["shared"] * 3
        assert [r.body for r in rest] == [r.body for r in recorded[3:]]
        assert occurrences(rest) == OCCURRENCES[3:]
        assert resolves(survivor.url) == before[1 - victim], "a leased hit was resolved"

        # The sidecar renews through the survivor (on a pooled connection to it, or a new one
        # the balancer gave it): the lease runs past the death, still this holder's at this
        # epoch (it survived).
        wait_until(
            lambda: cluster.lease(tape, b1).expires > dead_at + LEASE_SECONDS,
            timeout=PATIENCE_SECONDS,
            what="a renewal through the surviving replica",
        )
        renewed = cluster.lease(tape, b1)
        assert (renewed.holder, renewed.epoch) == (held.holder, held.epoch)
        if ship_seconds == "0.2":
            # Shipped on its own, through the survivor: no admin call asked for it.
            wait_until(
                lambda: cluster.lease(tape, b1).events == len(PATHS),
                timeout=PATIENCE_SECONDS,
                what="the hits shipped through the surviving replica",
            )

        # A fork of the leased branch through the survivor asks the holder back first.
        (child,) = cluster.fork(tape, 1, parent=b1, via=survivor)
        released = cluster.lease(tape, b1)
        assert (released.holder, released.epoch) == (None, held.epoch)
        assert released.shipped == released.events == len(PATHS)
        shipped = cluster.events(tape, b1, survivor)
        assert [(e["decision"], e["occurrence"]) for e in shipped] == [
            ("shared", occurrence) for occurrence in OCCURRENCES
        ]
        assert [e["exchange_id"] for e in shipped] == [
            e["exchange_id"] for e in cluster.events(tape, b0, survivor)
        ], "every hit was served the bytes recorded at its occurrence"
        keys = {e["request_key"] for e in shipped}
        assert cluster.counters(tape, b1) == {
            key: 1 + max(e["occurrence"] for e in shipped if e["request_key"] == key)
            for key in keys
        }
        report = cluster.admin("GET", f"/v1/tapes/{tape}/report", survivor).json()
        assert report["branches"][b1]["decisions"] == {"shared": len(PATHS)}

        # The child starts after every hit its parent's sidecar served: each address it asks
        # is past what was recorded, so it reaches the world and is answered anew.
        onward = [cluster.ask(tape, child, upstream.url + path) for path in ("/item/a", "/item/c")]
        assert [r.decision for r in onward] == ["recorded"] * 2
        assert occurrences(onward) == [2, 1]
        assert distinct(recorded + onward)
        assert upstream.state.count() == world_calls + 2


def test_with_every_replica_dead_held_hits_are_served_and_misses_refused_until_one_is_back(
    postgres_url: str, upstream: Upstream, tmp_path: Path
) -> None:
    ship = ("--set", "groundhog_lease_ship_seconds=0.2")
    with running_cluster(postgres_url, tmp_path, *ship) as cluster:
        tape = "replicas-all-dead"
        cluster.admin("POST", "/v1/tapes", json={"name": tape})
        b0, b1 = cluster.fork(tape, 2)
        paths = ["/item/a", "/item/b", "/item/c"]
        recorded = [cluster.ask(tape, b0, upstream.url + path) for path in paths]
        assert cluster.ask(tape, b1, upstream.url + paths[0]).decision == "shared"  # leased
        held = cluster.lease(tape, b1)
        assert held.holder is not None

        cluster.kill(0)
        cluster.kill(1)
        served = [cluster.ask(tape, b1, upstream.url + path) for path in paths[1:]]
        calls = upstream.state.count()
        miss = cluster.ask(tape, b1, upstream.url + "/item/new")

        assert [r.decision for r in served] == ["shared"] * 2
        assert [r.body for r in served] == [r.body for r in recorded[1:]]
        assert miss.status == 503, miss  # fail closed: nothing reaches the world unrecorded
        assert upstream.state.count() == calls
        assert cluster.balancer.turned_away >= 1, "the sidecar's asks found no replica"

        cluster.restart(0)
        # The sidecar ships what it served meanwhile on its own, and keeps the lease at its
        # epoch: it may have lapsed while no replica was there, but nobody else took it.
        wait_until(
            lambda: cluster.lease(tape, b1).events == len(paths),
            timeout=PATIENCE_SECONDS,
            what="the held hits shipped to the restarted replica",
        )
        back = cluster.lease(tape, b1)
        assert (back.holder, back.epoch, back.shipped) == (held.holder, held.epoch, len(paths))

        # And the branch goes on where its worker stood.
        again = cluster.ask(tape, b1, upstream.url + "/item/a")
        new = cluster.ask(tape, b1, upstream.url + "/item/new")
        assert [(r.decision, *occurrences([r])) for r in (again, new)] == [
            ("recorded", 1),
            ("recorded", 0),
        ]
        events = cluster.events(tape, b1, cluster.replicas[0])
        assert [(e["decision"], e["occurrence"]) for e in events] == [
            ("shared", 0),
            ("shared", 0),
            ("shared", 0),
            ("recorded", 1),
            ("recorded", 0),
        ]


def test_a_held_key_asked_anew_while_every_replica_is_dead_is_answered_past_its_hits(
    postgres_url: str, upstream: Upstream, tmp_path: Path
) -> None:
    """The branch's next ask of a key it was served locally, a miss, is asked of the resolver
    while every replica is dead (the sidecar waits within its resolve window); a replica back,
    the served hit must reach the store before the ask does, or the resolver would answer the
    occurrence the worker was served already."""
    flags = (
        *("--set", "groundhog_lease_ship_seconds=60"),
        *("--set", "groundhog_resolve_retry=120"),
    )
    with running_cluster(postgres_url, tmp_path, *flags) as cluster:
        tape = "replicas-held-key"
        cluster.admin("POST", "/v1/tapes", json={"name": tape})
        b0, b1 = cluster.fork(tape, 2)
        url = upstream.url + "/item/a"
        recorded = cluster.ask(tape, b0, url)
        hit = cluster.ask(tape, b1, url)
        assert (hit.decision, hit.body) == ("shared", recorded.body)
        cluster.kill(0)
        cluster.kill(1)

        answers: list[Reply] = []
        asking = threading.Thread(target=lambda: answers.append(cluster.ask(tape, b1, url)))
        asking.start()
        try:
            # The ask has reached the sidecar, which found no replica to ship the branch's hit
            # to first (the only shipment tried: the ship window is a minute).
            wait_until(lambda: "could not ship" in cluster.proxy.log(), what="the ask to wait")
            cluster.restart(1)
        finally:
            asking.join(timeout=PATIENCE_SECONDS)
        (again,) = answers
        assert (again.decision, *occurrences([again])) == ("recorded", 1)
        assert again.body != recorded.body
        events = cluster.events(tape, b1, cluster.replicas[1])
        assert [(e["decision"], e["occurrence"]) for e in events] == [
            ("shared", 0),
            ("recorded", 1),
        ]
