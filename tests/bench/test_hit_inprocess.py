"""The in-process hit bench measures real hits on a real SQLite file and refuses anything else."""

from __future__ import annotations

import pstats
from pathlib import Path

import pytest

from bench import hit_inprocess
from engine.resolve_request import ResolveRequest
from resolver.resolution import Resolver
from store.db import open_store


def test_measure_reports_per_hit_costs_and_a_profile(tmp_path: Path) -> None:
    profile = tmp_path / "hits.prof"
    result = hit_inprocess.measure(f"sqlite:///{tmp_path / 'h.sqlite3'}", 20, 2, profile)
    assert result["hits"] == 40
    assert result["database"] == "sqlite"
    assert result["p50_us"] > 0 and result["cpu_us"] > 0
    assert pstats.Stats(str(profile)).total_calls > 0


def test_a_miss_is_not_counted_as_a_hit(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.sqlite3'}"
    hit_inprocess.bulk_load(url, "t", 1)
    store = open_store(url)
    resolver = Resolver(store, max_body_bytes=1024, claim_seconds=30)
    unrecorded = ResolveRequest(**hit_inprocess.resolve_body("t", "root/b0", 5))
    with pytest.raises(RuntimeError, match="expected a shared hit"):
        hit_inprocess._hit(resolver, unrecorded)
    store.dispose()


def test_the_event_loop_path_is_measured_through_the_loop_writer(tmp_path: Path) -> None:
    result = hit_inprocess.measure(f"sqlite:///{tmp_path / 'l.sqlite3'}", 10, 1, None, on_loop=True)
    assert (result["path"], result["hits"]) == ("event loop", 10)
    assert result["p50_us"] > 0


@pytest.mark.postgres
def test_the_event_loop_path_is_refused_on_postgresql(postgres_url: str) -> None:
    with pytest.raises(SystemExit, match="synchronous=NORMAL"):
        hit_inprocess.measure(postgres_url, 10, 1, None, on_loop=True)
