"""Tests for the speed rows' tapes: bodies, bulk load, branches, and every ask a hit.

A five-exchange tape is loaded and asked through an in-process resolver.
"""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from bench.perf_tapes import (
    BRANCHES,
    HOST,
    bulk_load,
    drop_tapes,
    hit_bodies,
    item_request,
    resolve_body,
    tape_name,
)
from resolver.app import create_app
from resolver.schemas import check_tape_name
from resolver.settings import load_settings


def test_item_request_addresses_the_indexed_item() -> None:
    request = item_request(42)
    assert (request.method, request.scheme, request.host, request.port) == (
        "GET",
        "https",
        HOST,
        443,
    )
    assert request.path == "/items/42"
    assert request.url() == f"https://{HOST}/items/42?q=x"


def test_resolve_body_is_a_get_for_the_item_on_the_branch() -> None:
    body = resolve_body("tape-a", "root/b3", 7)
    assert body["tape"] == "tape-a" and body["branch"] == "root/b3"
    assert (body["method"], body["host"], body["port"]) == ("GET", HOST, 443)
    assert body["path"] == "/items/7"
    assert body["query"] == [["q", "x"]]
    assert body["headers"] == [] and body["body"] == ""


def test_hit_bodies_are_distinct_branch_and_item_pairs() -> None:
    size = 10
    bodies = hit_bodies("t", size, 50, random.Random(1))
    pairs = [(body["branch"], body["path"]) for body in bodies]
    assert len(pairs) == 50
    assert len(set(pairs)) == 50
    for branch, path in pairs:
        assert 0 <= int(branch.removeprefix("root/b")) < BRANCHES
        assert 0 <= int(path.removeprefix("/items/")) < size


def test_hit_bodies_never_ask_more_pairs_than_exist() -> None:
    bodies = hit_bodies("t", 2, 1000, random.Random(0))
    pairs = {(body["branch"], body["path"]) for body in bodies}
    assert len(bodies) == len(pairs) == 2 * BRANCHES


def exchange_rows(path: Path) -> list[tuple[str, int, str, str]]:
    with sqlite3.connect(path) as connection:
        return connection.execute(
            "SELECT request_url, occurrence, fingerprint, key_hash FROM gh_exchanges"
        ).fetchall()


@pytest.fixture(scope="module")
def loaded_tape(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("resolver-perf")
    bulk_load(f"sqlite:///{data / 'groundhog.sqlite3'}", "perf-5", 5)
    return data


def test_bulk_load_writes_one_exchange_per_item_at_occurrence_zero(loaded_tape: Path) -> None:
    rows = exchange_rows(loaded_tape / "groundhog.sqlite3")
    assert sorted(url for url, _, _, _ in rows) == sorted(
        f"https://{HOST}/items/{index}?q=x" for index in range(5)
    )
    assert {(occurrence, fingerprint) for _, occurrence, fingerprint, _ in rows} == {(0, "")}
    assert len({key for _, _, _, key in rows}) == 5


def test_bulk_load_forks_the_branches(loaded_tape: Path) -> None:
    with sqlite3.connect(loaded_tape / "groundhog.sqlite3") as connection:
        names = {row[0] for row in connection.execute("SELECT path FROM gh_branches")}
    assert {f"root/b{index}" for index in range(BRANCHES)} <= names


def test_every_hit_body_is_served_shared_by_the_real_resolver(loaded_tape: Path) -> None:
    """The property the benchmark relies on: each (branch, item) pair is a hit."""
    settings = load_settings(data_dir=loaded_tape)
    with TestClient(create_app(settings)) as client:
        for body in hit_bodies("perf-5", 5, 6, random.Random(2)):
            answer = client.post("/v1/resolve", json=body).json()
            assert answer["decision"] == "shared", answer
            assert answer["action"] == "serve"


def test_tape_names_differ_between_runs_and_are_valid() -> None:
    first, second = tape_name(1_000), tape_name(1_000)
    assert first != second
    assert first.startswith("perf-1000-")
    assert check_tape_name(first) == first


def test_drop_tapes_deletes_the_named_tapes_only(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'groundhog.sqlite3'}"
    bulk_load(url, "kept", 3)
    bulk_load(url, "dropped", 4)
    drop_tapes(url, ["dropped", "never-made"])
    with sqlite3.connect(tmp_path / "groundhog.sqlite3") as connection:
        names = [row[0] for row in connection.execute("SELECT name FROM gh_tapes")]
        exchanges = connection.execute("SELECT count(*) FROM gh_exchanges").fetchone()[0]
    assert names == ["kept"]
    assert exchanges == 3
