"""Unit tests for the reliability load: request choice, outcomes, percentiles, a tiny real drive."""

from __future__ import annotations

import asyncio
import hashlib
import random
from collections import Counter

import pytest
from aiohttp.test_utils import TestServer

from bench.harness import free_port
from bench.reliability.load import (
    READ_STATUS,
    WRITE_STATUS,
    BackgroundLoad,
    LoadPlan,
    LoadResult,
    Outcome,
    _choose,
    _problem,
    drive,
    percentile,
)
from bench.reliability.upstream import STATS, create_app


def plan(**overrides: object) -> LoadPlan:
    values: dict[str, object] = {
        "proxies": [""],
        "upstream_url": "http://127.0.0.1:9",
        "tape": "t",
        "branches": ["root/b0"],
        "workers": 1,
        "seconds": 30.0,
        "max_requests": 10,
    }
    values.update(overrides)
    return LoadPlan(**values)  # type: ignore[arg-type]


def test_percentile_of_nothing_is_zero() -> None:
    assert percentile([], 0.5) == 0.0


def test_percentile_picks_the_nearest_rank_of_sorted_values() -> None:
    values = [float(v) for v in (9, 1, 5, 3, 7)]  # sorted: 1 3 5 7 9
    assert percentile(values, 0.0) == 1.0
    assert percentile(values, 0.5) == 5.0
    assert percentile(values, 0.75) == 7.0
    assert percentile(values, 1.0) == 9.0


def test_percentile_clamps_fractions_outside_zero_to_one() -> None:
    values = [2.0, 4.0, 6.0]
    assert percentile(values, -1.0) == 2.0
    assert percentile(values, 5.0) == 6.0


def test_percentile_does_not_reorder_the_callers_list() -> None:
    values = [3.0, 1.0, 2.0]
    percentile(values, 0.5)
    assert values == [3.0, 1.0, 2.0]


def test_choose_splits_writes_doc_reads_and_item_reads() -> None:
    rng = random.Random(3)
    picks = [_choose(rng, plan(keys=5, write_share=0.1)) for _ in range(4000)]
    kinds = Counter((method, path.split("/")[1]) for method, path in picks)
    assert set(kinds) == {("POST", "docs"), ("GET", "docs"), ("GET", "item")}
    # Expected shares 0.10, 0.20, 0.70; 4000 draws keep each well inside these bands.
    assert 0.07 < kinds[("POST", "docs")] / 4000 < 0.13
    assert 0.16 < kinds[("GET", "docs")] / 4000 < 0.24
    assert 0.66 < kinds[("GET", "item")] / 4000 < 0.74
    keys = {int(path.rsplit("/", 1)[1]) for _, path in picks}
    assert keys == set(range(5))


def test_choose_with_no_write_share_never_writes() -> None:
    rng = random.Random(0)
    assert all(_choose(rng, plan(write_share=0.0))[0] == "GET" for _ in range(500))


def test_outcome_is_ok_only_with_its_expected_status_and_no_error() -> None:
    read = Outcome(0, 0, "root", "GET", "/item/1", 0.0, 0.0, status=READ_STATUS)
    write = Outcome(0, 0, "root", "POST", "/docs/1", 0.0, 0.0, status=WRITE_STATUS)
    assert read.expected_status == 200 and write.expected_status == 201
    assert read.ok and write.ok
    assert not Outcome(0, 0, "root", "POST", "/docs/1", 0.0, 0.0, status=200).ok
    assert not Outcome(0, 0, "root", "GET", "/item/1", 0.0, 0.0, status=503).ok
    failed = Outcome(0, 0, "root", "GET", "/item/1", 0.0, 0.0, status=200, error="reset")
    assert not failed.ok


def test_elapsed_never_reaches_zero() -> None:
    assert LoadResult(started=10.0, finished=12.5).elapsed == 2.5
    assert LoadResult(started=5.0, finished=5.0).elapsed > 0


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b'{"type": "urn:x", "detail": "bad"}', ("urn:x", "bad")),
        (b'{"type": "urn:x"}', ("urn:x", "")),
        (b"not json", (None, None)),
        (b"[1, 2]", (None, None)),
    ],
)
def test_problem_reads_type_and_detail(body: bytes, expected: tuple) -> None:
    assert _problem(body) == expected


def test_problem_detail_is_cut_to_300_characters() -> None:
    _, detail = _problem(b'{"type": "t", "detail": "' + b"d" * 1000 + b'"}')
    assert detail == "d" * 300


def test_drive_spends_exactly_its_budget_against_a_real_upstream() -> None:
    async def run() -> tuple[LoadResult, int]:
        async with TestServer(create_app(), host="127.0.0.1") as server:
            url = str(server.make_url("")).rstrip("/")
            result = await drive(plan(upstream_url=url, workers=3, max_requests=12, seed=4))
            return result, sum(server.app[STATS]["per_path"].values())

    result, calls = asyncio.run(run())
    assert len(result.outcomes) == 12
    assert calls == 12
    assert all(outcome.ok for outcome in result.outcomes), [
        (o.method, o.status, o.error) for o in result.outcomes
    ]
    assert {outcome.worker for outcome in result.outcomes} == {0, 1, 2}
    for outcome in result.outcomes:
        assert outcome.body_sha is not None and len(outcome.body_sha) == 64
        assert outcome.decision is None  # no proxy in between, so no Groundhog headers
    assert result.finished >= result.started


def test_drive_notes_transport_errors_instead_of_raising() -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    result = asyncio.run(drive(plan(upstream_url=dead, max_requests=2)))
    assert len(result.outcomes) == 2
    assert all(o.error is not None and o.status is None for o in result.outcomes)
    assert not any(o.ok for o in result.outcomes)


def test_background_load_stops_when_joined() -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    load = BackgroundLoad(plan(upstream_url=dead, max_requests=10**6, seconds=60.0)).start()
    result = load.join()
    # join() set the stop event: far fewer than the budget were attempted.
    assert len(result.outcomes) < 10**6
    assert load.outcomes() == result.outcomes


def test_body_hash_matches_what_the_upstream_sent() -> None:
    async def run() -> LoadResult:
        async with TestServer(create_app(), host="127.0.0.1") as server:
            url = str(server.make_url("")).rstrip("/")
            return await drive(plan(upstream_url=url, max_requests=1, write_share=0.0, seed=1))

    outcome = asyncio.run(run()).outcomes[0]
    # The first call to a path is number 1; the upstream's JSON is compact and key-sorted.
    body = f'{{"call":1,"path":"{outcome.path}","query":""}}'.encode()
    assert outcome.body_sha == hashlib.sha256(body).hexdigest()
