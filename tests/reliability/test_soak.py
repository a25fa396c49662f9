"""The soak through the real proxy: 64 workers over 16 branches, briefly (bench/soak.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench.soak import main, run_soak

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def soak(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return run_soak(
        workers=64,
        branches=16,
        seconds=10,
        max_requests=20_000,
        root=tmp_path_factory.mktemp("soak"),
        baseline_seconds=1.5,
    )


def test_no_errors_the_world_did_not_cause(soak: dict[str, Any]) -> None:
    assert soak["requests"] > 64, soak
    assert soak["errors"] == 0, soak["error_examples"]
    assert soak["ok"] == soak["requests"]


def test_every_live_call_had_a_forward_decision(soak: dict[str, Any]) -> None:
    assert soak["world_live_calls"] > 0
    assert soak["silent_live_calls"] == 0
    assert soak["world_live_calls"] == soak["forward_decisions"], soak["decisions"]


def test_siblings_share_and_writes_go_live(soak: dict[str, Any]) -> None:
    decisions = soak["decisions"]
    assert decisions.get("shared", 0) > 0 and decisions.get("write", 0) > 0, decisions


def test_latency_throughput_and_baseline_are_reported(soak: dict[str, Any]) -> None:
    assert 0 < soak["p50_ms"] <= soak["p99_ms"]
    assert soak["throughput_rps"] > 0 and soak["baseline_direct"]["throughput_rps"] > 0
    assert soak["throughput_vs_direct"] > 0


def test_memory_of_both_processes_is_sampled_with_a_verdict(soak: dict[str, Any]) -> None:
    names = {series["name"] for series in soak["memory"]}
    assert names == {"resolver", "proxy0"}
    for series in soak["memory"]:
        assert series["samples"] >= 3 and series["flat"] in (True, False)
        assert series["peak_mib"] >= series["first_third_mib"] > 0


def test_cli_refuses_unbounded_or_empty_runs(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--workers", "0", "--seconds", "1", "--max-requests", "1"])
    assert exit_info.value.code == 2
    assert "must be positive" in capsys.readouterr().err


def test_soak_writes_json_figures(tmp_path: Path) -> None:
    out = tmp_path / "soak.json"
    code = main(
        ["--workers", "4", "--branches", "2", "--seconds", "2", "--max-requests", "40",
         "--json", str(out)]
    )  # fmt: skip
    assert code == 0 and '"requests": 40' in out.read_text()
