"""The capability check's row (bench/capability_cost.py): computed from what was measured, and
measured through the real resolver and proxy with the check actually made."""

from __future__ import annotations

import asyncio
import math
import time
from pathlib import Path

import aiohttp
import pytest

from bench.capability_cost import (
    CAPABILITY_ROW,
    OPTIONAL,
    REQUIRED,
    capability_row,
    describe,
    measure_capability_cost,
)
from bench.harness import LOOPBACK, start_child
from bench.proxy_load import get_ok, load_session
from bench.proxy_rows import table
from bench.proxy_stack import child_processes, proxy_arguments, resolver_arguments
from groundhog.worker_env import proxy_url_with_credentials


def rounds_with(factor: float, count: int = 6) -> list[dict[str, list[float]]]:
    """Rounds whose required hits take `factor` times the optional ones, with some spread."""
    rounds = []
    for index in range(count):
        base = [0.002 + 0.0001 * ((index * 7 + k) % 5) for k in range(8)]
        jitter = 1.0 + 0.01 * ((index % 3) - 1)
        rounds.append({OPTIONAL: base, REQUIRED: [x * factor * jitter for x in base]})
    return rounds


def test_the_row_is_the_measured_ratio_with_an_interval_around_it() -> None:
    slower = capability_row(rounds_with(1.2))
    faster = capability_row(rounds_with(0.9))
    assert slower["condition"] == CAPABILITY_ROW and slower["rounds"] == 6
    assert slower["requests"] == 6 * 16
    assert math.isclose(slower["capability_ratio"], 1.2, rel_tol=0.02)
    assert math.isclose(faster["capability_ratio"], 0.9, rel_tol=0.02)
    for row, factor in ((slower, 1.2), (faster, 0.9)):
        assert row["capability_ratio_low"] < factor * 1.0001
        assert row["capability_ratio_high"] > factor * 0.9999
        assert row["capability_ratio_low"] < row["capability_ratio_high"]
    assert slower["required_p50_ms"] > slower["optional_p50_ms"] > 0


def test_the_sentence_says_met_only_when_the_interval_is_under_the_goal() -> None:
    assert describe(capability_row(rounds_with(1.0))).endswith(": met")
    assert describe(capability_row(rounds_with(1.2))).endswith(": not shown")
    single = capability_row(rounds_with(1.0, count=1))  # one round: no interval
    assert single["capability_ratio_high"] is None
    assert describe(single).endswith(": not shown")


def test_the_proxy_table_prints_the_row_as_a_sentence() -> None:
    printed = table([{**capability_row(rounds_with(1.01)), "store": "sqlite"}])
    assert "The capability check (goal: under 5% of a hit)" in printed
    assert "| capability check" not in printed  # not a latency row against no-addon


async def _status_without_capability(proxy: str, url: str) -> int:
    async with load_session() as session:
        try:
            await get_ok(session, proxy, url)
        except RuntimeError as refused:
            return int(str(refused).rsplit(" ", 1)[-1])
        except aiohttp.ClientError:
            return -1
    return 200


def test_measured_through_the_real_resolver_and_proxy(tmp_path: Path) -> None:
    tape = f"test-capability-{time.time_ns()}"
    with child_processes() as kids:
        upstream = start_child(
            "upstream", ["bench.proxy_perf", "--serve-upstream"], health="tcp", log_dir=tmp_path
        )
        kids.append(upstream)
        resolver = start_child(
            "resolver", resolver_arguments(tmp_path, None), health="http", log_dir=tmp_path
        )
        kids.append(resolver)
        proxy = start_child(
            "proxy", proxy_arguments(resolver.url, tmp_path), health="tcp", log_dir=tmp_path
        )
        kids.append(proxy)
        row = measure_capability_cost(resolver.url, proxy.port, upstream.url, tape, rounds=2)
        # The required tape checks: its hitter without the capability is refused.
        base = f"http://{LOOPBACK}:{proxy.port}"
        bare = proxy_url_with_credentials(base, f"{tape}-{REQUIRED}", "root/b1")
        status = asyncio.run(_status_without_capability(bare, f"{upstream.url}/item?cap=x"))
    assert status == 403
    assert row["rounds"] == 2 and row["requests"] == 2 * 2 * 8
    assert row["required_p50_ms"] > 0 and row["optional_p50_ms"] > 0
    assert row["capability_ratio"] > 0
    assert row["capability_ratio_low"] is not None


@pytest.fixture(autouse=True)
def _no_ambient_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
