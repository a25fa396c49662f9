"""`python -m bench --quick` through the real worldsim (both modes), resolver and proxy processes.

Checks mechanisms, not magnitudes (the sizes are small): every protocol claim is printed with a
verdict, the world's oracle finds no lie in (C) and finds replay's, Groundhog reproduces live
rollouts exactly in the cooperative world, siblings share reads in the uncooperative world, and
every output file is written. The run has no wall-clock budget (a loaded machine is slow, not
wrong); it runs in its own process group, which is killed however the test ends, so no world,
resolver or proxy outlives it.
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys

import pytest

from bench import claims, rawfiles, recompute
from bench.harness import REPO_ROOT
from groundhog.lifetime import tied_command
from tests.support.servers import HANG_GUARD_SECONDS

pytestmark = [pytest.mark.slow, pytest.mark.timeout(HANG_GUARD_SECONDS)]


@pytest.fixture(scope="module")
def quick_outcome(tmp_path_factory) -> tuple[dict, object] | str:
    """One benchmark run per module: its results, or why it failed (never re-run per test)."""
    out = tmp_path_factory.mktemp("bench-quick")
    # --quick runs the research world only: the shop is covered by tests/worldsim and the
    # committed run.
    command = [sys.executable, "-m", "bench", "--quick", "--no-progress"]
    # No wall-clock budget: a loaded machine is slow, not wrong. Tied: it dies with the run.
    completed = subprocess.run(
        tied_command([*command, "--out", str(out)]), cwd=REPO_ROOT, capture_output=True, text=True
    )
    if completed.returncode != 0:
        return f"python -m bench exited {completed.returncode}:\n{completed.stderr[-4000:]}"
    assert "| metric |" in completed.stdout  # the table goes to stdout, progress to stderr
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
    assert set(results["cells"]) == {"research/uncooperative", "research/cooperative"}


def test_every_protocol_claim_gets_a_verdict(quick_run) -> None:
    results, out = quick_run
    ids = {claim["id"] for claim in claims.load()["claim"]}
    assert {claim["id"] for claim in results["claims"]} == ids
    # The shop did not run: its claims are "not measured", which is not support.
    assert all(
        claim["verdict"] == claims.NOT_MEASURED
        for claim in results["claims"]
        if claim["cell"].startswith("shop/")
    )
    text = (out / "benchmark.md").read_text()
    for claim in results["claims"]:
        # A quick run is a smoke test: the cells it ran print no verdict, only the direction.
        if claim["cell"].startswith("research/"):
            assert claim["verdict"] == claims.SMOKE and not claim["supported"]
            assert claim["direction"] in (
                claims.SUPPORTED,
                claims.NOT_SUPPORTED,
                claims.NOT_MEASURED,
                claims.NOT_A_GATE,
            )
        assert f"| {claim['id']} |" in text
    assert "Smoke test (`--quick`)" in text


def test_the_oracle_catches_replay_and_finds_no_lie_in_groundhog(quick_run) -> None:
    for cell in quick_run[0]["cells"].values():
        rows = cell["conditions"]
        assert rows["groundhog"]["lies"]["k"] == 0 and rows["groundhog"]["lies"]["n"] > 0
        assert rows["replay"]["lies"]["k"] > 0
        assert rows["replay"]["blind"]["value"] == 1.0
        assert rows["groundhog"]["blind"]["value"] == 0.0
        assert cell["dependency_models"]["path"]["lies"]["k"] > 0


def test_groundhog_reproduces_live_rollouts_in_the_cooperative_world(quick_run) -> None:
    groundhog = quick_run[0]["cells"]["research/cooperative"]["conditions"]["groundhog"]
    equivalence = groundhog["exact_equivalence"]
    assert equivalence["total"] > 0
    assert equivalence["identical"] == equivalence["total"]


def test_siblings_share_reads_without_the_worlds_cooperation(quick_run) -> None:
    rows = quick_run[0]["cells"]["research/uncooperative"]["conditions"]
    assert rows["groundhog"]["reads_shared"] > 0.3
    assert rows["naive"]["reads_shared"] == 0.0
    assert rows["groundhog"]["live_calls_per_group"] < rows["naive"]["live_calls_per_group"]


def test_every_number_of_the_run_recomputes_from_its_raw_files(quick_run) -> None:
    """Issue 58 item 1 on a real run: benchmark.json and benchmark.md follow from raw/."""
    _, out = quick_run
    assert recompute.check(out) == []
    run = rawfiles.read(out / rawfiles.RAW_DIR)
    # The live reference's pairs and their attention draws are in the raw files.
    reference = run.cells["research/uncooperative"]["reference"]
    assert reference.better and all(r.attention is not None for r in reference.better)


def test_a_tampered_raw_file_of_the_run_fails_recompute(quick_run, tmp_path, capsys) -> None:
    _, out = quick_run
    copy = tmp_path / "run"
    shutil.copytree(out, copy)
    reference = copy / rawfiles.RAW_DIR / rawfiles.REFERENCE
    lines = gzip.decompress(reference.read_bytes()).decode().splitlines()
    fields = lines[1].split(",")
    fields[5] = repr(float(fields[5]) + 1.0)  # the first live pair's better reward
    lines[1] = ",".join(fields)
    reference.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    assert recompute.main([str(copy)]) == 1
    assert "reference.contrast" in capsys.readouterr().out
