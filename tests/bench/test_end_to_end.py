"""`python -m bench --quick` through the real worldsim, resolver and proxy processes.

Checks directions only (the sizes are small): Groundhog's contrast variance is below the naive
baseline's, replay is biased negative against the live world, Groundhog reproduces live
rollouts exactly, and every output file is written.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from bench.harness import REPO_ROOT
from groundhog.lifetime import tied_command
from tests.support.servers import HANG_GUARD_SECONDS

pytestmark = [pytest.mark.slow, pytest.mark.timeout(HANG_GUARD_SECONDS)]


@pytest.fixture(scope="module")
def quick_outcome(tmp_path_factory) -> tuple[dict, object] | str:
    """One benchmark run per module: its results, or why it failed (never re-run per test)."""
    out = tmp_path_factory.mktemp("bench-quick")
    command = [sys.executable, "-m", "bench", "--quick", "--no-speed", "--no-progress"]
    # No wall-clock budget: a loaded machine is slow, not wrong. Tied: it dies with the run.
    completed = subprocess.run(
        tied_command([*command, "--out", str(out)]), cwd=REPO_ROOT, capture_output=True, text=True
    )
    if completed.returncode != 0:
        return f"python -m bench exited {completed.returncode}:\n{completed.stderr[-4000:]}"
    return json.loads((out / "benchmark.json").read_text()), out


@pytest.fixture
def quick_run(quick_outcome: tuple[dict, object] | str) -> tuple[dict, object]:
    if isinstance(quick_outcome, str):
        pytest.fail(quick_outcome)
    return quick_outcome


def test_every_output_file_is_written(quick_run) -> None:
    results, out = quick_run
    for name in ("benchmark.json", "benchmark.md", "variance.png", "significance.png", "grpo.png"):
        assert (out / name).stat().st_size > 0, name
    assert results["meta"]["quick"] is True
    assert "| (1) advantage contrast variance |" in (out / "benchmark.md").read_text()


def test_groundhog_variance_is_below_naive(quick_run) -> None:
    rows = quick_run[0]["conditions"]
    assert rows["groundhog"]["contrast_variance"] < rows["naive"]["contrast_variance"]
    assert rows["groundhog"]["levene_vs_naive"]["p"] < 0.05


def test_replay_is_biased_negative_and_blind_to_its_write(quick_run) -> None:
    replay = quick_run[0]["conditions"]["replay"]
    assert replay["bias"]["value"] < 0
    assert replay["blind_to_own_write"] == 1.0
    assert replay["lie_rate"] > 0


def test_groundhog_reproduces_live_rollouts_exactly(quick_run) -> None:
    groundhog = quick_run[0]["conditions"]["groundhog"]
    equivalence = groundhog["exact_equivalence"]
    assert equivalence["total"] > 0
    assert equivalence["identical"] == equivalence["total"]
    assert equivalence["max_abs_diff"] == 0
    assert groundhog["lie_rate"] == 0
    assert groundhog["blind_to_own_write"] == 0


def test_live_calls_are_counted_at_the_world(quick_run) -> None:
    rows = quick_run[0]["conditions"]
    assert rows["groundhog"]["live_calls_per_group"] < rows["naive"]["live_calls_per_group"]
    # What the world counted equals what the resolver says it sent live.
    for row in rows.values():
        assert row["live_calls_per_group"] == row["resolver_live_calls_per_group"]
