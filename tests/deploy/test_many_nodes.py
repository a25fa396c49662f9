"""Many nodes on PostgreSQL: two resolver replicas, a proxy each, 16 workers, one world.

What a Kubernetes deployment promises (docs/deploy.md, "PostgreSQL for many nodes"): replicas
share nothing but the database, yet single flight holds across them (no address is fetched
upstream twice), no exchange is lost, and the tape is the same one a single node records
(equal digests). Both replicas start at once on a fresh database, so their schema migrations
race and the migration lock must serialise them. Skipped with a reason without PostgreSQL.
"""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import psycopg
import pytest
from sqlalchemy.engine import make_url

from tests.deploy.counting_world import CountingWorld
from tests.support.servers import ServerProcess, start_server

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

WORKERS = 16
READS = [("GET", "/search?q=alpha"), ("GET", "/search?q=beta"), ("GET", "/search?q=alpha")]
# Groups of branches: 0 and 1 write different bodies before reading the document back;
# 2 and 3 only read it. Under `closure` a write changes the fingerprint of the reads after it.
WRITES = {0: b'{"text": "x"}', 1: b'{"text": "y"}'}
# Distinct read addresses: alpha at occurrences 0 and 1, beta, /clock, /docs/1 unwritten (groups
# 2, 3), /docs/1 after write x (group 0), /docs/1 after write y (group 1).
DISTINCT_READS = 7


@dataclass(frozen=True)
class Step:
    method: str
    path: str
    body: bytes = b""


def workflow(worker: int) -> list[Step]:
    steps = [Step(method, path) for method, path in READS] + [Step("GET", "/clock")]
    if worker % 4 in WRITES:
        steps.append(Step("POST", "/docs/1", WRITES[worker % 4]))
    return [*steps, Step("GET", "/docs/1")]


@dataclass(frozen=True)
class Answer:
    step: Step
    status: int
    decision: str
    body: bytes


def admin(resolver: str, method: str, route: str, **kwargs: object) -> httpx.Response:
    answer = httpx.request(method, resolver + route, timeout=30, trust_env=False, **kwargs)
    assert answer.status_code < 400, f"{method} {route}: {answer.status_code} {answer.text}"
    return answer


def run_workflow(world: str, resolver: str, proxies: list[str], tape: str) -> list[list[Answer]]:
    """Open the tape, fork 16 branches, run every worker at once; each worker's answers."""
    config = {"name": tape, "world_seed": 7, "mode": "groundhog", "dependency_model": "closure"}
    admin(resolver, "POST", "/v1/tapes", json={**config, "online": True})
    fork = admin(
        resolver, "POST", f"/v1/tapes/{tape}/fork", json={"parent": "root", "children": WORKERS}
    )
    branches = fork.json()["branches"]
    start = threading.Barrier(WORKERS)

    def worker(index: int) -> list[Answer]:
        headers = {"X-Groundhog-Tape": tape, "X-Groundhog-Branch": branches[index]}
        proxy = proxies[index % len(proxies)]
        answers = []
        with httpx.Client(proxy=proxy, trust_env=False, timeout=60, headers=headers) as client:
            start.wait(timeout=30)
            for step in workflow(index):
                response = client.request(step.method, world + step.path, content=step.body)
                decision = response.headers.get("X-Groundhog-Decision", "")
                answers.append(Answer(step, response.status_code, decision, response.content))
        return answers

    with ThreadPoolExecutor(WORKERS) as pool:
        return list(pool.map(worker, range(WORKERS)))


def events(resolver: str, tape: str) -> list[dict[str, object]]:
    found: list[dict[str, object]] = []
    after: int | None = 0
    while after is not None:
        page = admin(
            resolver, "GET", f"/v1/tapes/{tape}/events", params={"after": after, "limit": 1000}
        )
        found += page.json()["events"]
        after = page.json()["next_after"]
    return found


def digest(resolver: str, tape: str) -> dict[str, object]:
    return admin(resolver, "GET", f"/v1/tapes/{tape}/digest").json()


@contextmanager
def fresh_database(postgres_url: str) -> Iterator[str]:
    """A new, empty PostgreSQL database for this test, dropped afterwards."""
    name = f"groundhog_many_{secrets.token_hex(5)}"
    plain = postgres_url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(plain, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    try:
        yield make_url(postgres_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(plain, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def start_all(launches: list[tuple[list[str], str | None]]) -> list[ServerProcess]:
    """Start servers at the same moment (replicas racing to migrate one database)."""
    with ThreadPoolExecutor(len(launches)) as pool:
        futures = [pool.submit(start_server, args, health_path=health) for args, health in launches]
    return [future.result() for future in futures]


@contextmanager
def nodes(database_urls: list[str], data: Path) -> Iterator[tuple[list[str], list[str]]]:
    """A resolver per URL and a proxy in front of each; (resolver URLs, proxy URLs)."""
    with ExitStack() as stack:
        resolvers = start_all(
            [
                (["resolver", "--data", str(data / f"r{i}"), "--database-url", url], "/healthz")
                for i, url in enumerate(database_urls)
            ]
        )
        for server in resolvers:
            stack.callback(server.stop)
        proxies = start_all(
            [
                (["proxy", "--resolver-url", server.url, "--data", str(data / f"r{i}")], None)
                for i, server in enumerate(resolvers)
            ]
        )
        for server in proxies:
            stack.callback(server.stop)
        yield [s.url for s in resolvers], [s.url for s in proxies]


@pytest.fixture(scope="module")
def world() -> Iterator[CountingWorld]:
    with CountingWorld() as running:
        yield running


@pytest.fixture(scope="module")
def single_node_digest(world: CountingWorld, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The tape one resolver on SQLite records for the workflow: the reference."""
    data = tmp_path_factory.mktemp("single")
    with nodes([f"sqlite:///{data / 'store.sqlite3'}"], data) as (resolvers, proxies):
        run_workflow(world.url, resolvers[0], proxies, "reference")
        reference = digest(resolvers[0], "reference")
    world.reset()
    return str(reference["digest"])


def test_two_replicas_share_single_flight_lose_nothing_and_match_one_node(
    postgres_url: str, world: CountingWorld, single_node_digest: str, tmp_path: Path
) -> None:
    with fresh_database(postgres_url) as url, nodes([url, url], tmp_path) as (resolvers, proxies):
        answers = run_workflow(world.url, resolvers[0], proxies, "many")
        recorded = events(resolvers[1], "many")
        many = digest(resolvers[1], "many")

    # Every worker got the world's own answer to every step.
    for index, worker_answers in enumerate(answers):
        assert [a.step for a in worker_answers] == workflow(index)
        for answer in worker_answers:
            assert answer.status == 200, answer
            expected = {
                "method": answer.step.method,
                "path": answer.step.path,
                "body": answer.step.body.decode(),
            }
            assert json.loads(answer.body) == expected, answer

    # Single flight across replicas: each read address reached the world exactly once.
    reads = [a for worker_answers in answers for a in worker_answers if a.step.method == "GET"]
    read_events = [e for e in recorded if e["method"] == "GET"]
    addresses = {(e["request_key"], e["occurrence"], e["fingerprint"]) for e in read_events}
    assert len(addresses) == DISTINCT_READS
    assert world.count("GET") == DISTINCT_READS
    fetched = [a for a in reads if a.decision in ("recorded", "refetched")]
    assert len(fetched) == DISTINCT_READS
    assert {a.decision for a in reads} <= {"recorded", "refetched", "shared"}
    # Writes are forwarded live from every branch that makes them (its sandbox must see them).
    writers = sum(1 for index in range(WORKERS) if index % 4 in WRITES)
    assert world.count("POST") == writers

    # Nothing lost: an event per ask, each pointing at a recorded exchange.
    assert len(recorded) == sum(len(workflow(index)) for index in range(WORKERS))
    assert all(e["exchange_id"] is not None for e in recorded)
    assert many["exchanges"] == DISTINCT_READS + len(WRITES)

    # The same tape as one node on SQLite records.
    assert many["digest"] == single_node_digest
