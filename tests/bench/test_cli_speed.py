"""bench/cli_speed.py runs the real CLI against a real resolver and computes pairwise ratios.

No timing is asserted (speed is measured, never tested): the test checks the script runs the
commands it names, and that its ratios are the pairs' own quotients.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from bench import cli_speed
from tests.support.servers import REPO_ROOT, ServerProcess, running_server


@pytest.fixture(scope="module")
def resolver(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    with running_server(["resolver", "--data", str(tmp_path_factory.mktemp("cli"))]) as server:
        yield server


def test_ratios_are_taken_pair_by_pair() -> None:
    summary = cli_speed.summarise([0.4, 0.9, 0.6], [0.2, 0.3, 0.3])
    assert summary["ratio_median"] == 2.0  # of 2.0, 3.0, 2.0: not 0.6 / 0.3 of the medians
    assert (summary["ratio_min"], summary["ratio_max"], summary["runs"]) == (2.0, 3.0, 3)
    assert summary["median_seconds"] == 0.6 and summary["yardstick_median_seconds"] == 0.3


def test_the_script_times_tape_ls_and_fork_against_the_yardstick(resolver: ServerProcess) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.cli_speed", "--runs", "2", "--resolver-url", resolver.url],
        capture_output=True, text=True, timeout=600, cwd=REPO_ROOT, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["yardstick"] == "-c import httpx"
    assert set(result["commands"]) == {"tape ls", "tape fork"}
    for row in result["commands"].values():
        assert row["runs"] == 2 and row["ratio_min"] <= row["ratio_median"] <= row["ratio_max"]
        assert row["median_seconds"] > 0 and row["yardstick_median_seconds"] > 0


def test_a_failing_command_is_an_error_not_a_time() -> None:
    with pytest.raises(RuntimeError, match="exited 3"):
        cli_speed.timed([sys.executable, "-c", "raise SystemExit(3)"], env={})
