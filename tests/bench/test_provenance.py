"""A run records which commit made it, where, and what it cost."""

from __future__ import annotations

import subprocess
import sys

from bench import provenance


def test_the_commit_is_the_checkouts_head_and_a_changed_tracked_file_is_dirty(tmp_path) -> None:
    def git(*arguments: str) -> str:
        return subprocess.run(
            ["git", "-c", "user.email=t@example.org", "-c", "user.name=t", *arguments],
            cwd=tmp_path,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()

    git("init", "-q")
    (tmp_path / "f").write_text("a")
    git("add", "f")
    git("commit", "-qm", "one")
    head = git("rev-parse", "HEAD")
    assert provenance.commit(tmp_path) == {"commit": head, "dirty": False}
    (tmp_path / "f").write_text("b")
    assert provenance.commit(tmp_path) == {"commit": head, "dirty": True}


def test_outside_git_nothing_is_made_up(tmp_path) -> None:
    assert provenance.commit(tmp_path) == {"commit": None, "dirty": None}


def test_the_record_carries_each_cells_sizes_as_run_and_the_cpu_spent() -> None:
    start = provenance.cpu_seconds()
    sum(i * i for i in range(200_000))  # some CPU of our own, so the difference is positive
    recorded = provenance.record(
        {"research/uncooperative": {"sizes": {"worlds": 610}}}, wall_seconds=1.5, cpu_at_start=start
    )
    assert recorded["cell_sizes"] == {"research/uncooperative": {"worlds": 610}}
    assert recorded["cpu_seconds"] > 0
    assert recorded["wall_seconds"] == 1.5
    assert recorded["machine"]["cpus"] >= 1


def test_the_cpu_of_children_still_running_is_counted() -> None:
    """The services a run starts (worlds, resolver, proxy) are alive when the run records its
    cost: their CPU is read from /proc, not only from the children already waited for."""
    burn = (
        "import sys, time\n"
        "while time.process_time() < 0.4: pass\n"
        "print('burnt', flush=True)\n"
        "sys.stdin.read()\n"
    )
    start = provenance.cpu_seconds()
    child = subprocess.Popen(
        [sys.executable, "-c", burn], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "burnt"
        assert provenance.cpu_seconds() - start >= 0.35
    finally:
        child.kill()
        child.wait()
