"""Children started through `tied_command` die when their parent is killed outright."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading

import pytest

from groundhog.lifetime import tied_command
from tests.support.servers import wait_until

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); it has exited all the same.
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


def test_a_tied_child_dies_when_its_parent_is_killed() -> None:
    parent_code = textwrap.dedent(
        """
        import subprocess, sys
        from groundhog.lifetime import tied_command
        sleeper = [sys.executable, "-c", "import time; time.sleep(600)"]
        child = subprocess.Popen(tied_command(sleeper))
        print(child.pid, flush=True)
        child.wait()
        """
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", parent_code], stdout=subprocess.PIPE, text=True
    )
    try:
        assert parent.stdout is not None
        child_pid = int(parent.stdout.readline())
        assert _alive(child_pid)
        parent.send_signal(signal.SIGKILL)  # no clean-up code runs in the parent
        parent.wait(timeout=30)
        wait_until(lambda: not _alive(child_pid), timeout=30, what="the orphan to die")
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()


def test_a_child_started_from_a_finished_thread_lives_on() -> None:
    """PR_SET_PDEATHSIG would kill it when the starting thread ends; the process still lives."""
    started: list[subprocess.Popen[bytes]] = []
    sleeper = [sys.executable, "-c", "import time; time.sleep(600)"]
    thread = threading.Thread(
        target=lambda: started.append(subprocess.Popen(tied_command(sleeper)))
    )
    thread.start()
    thread.join()
    (child,) = started
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            child.wait(timeout=2)  # several watcher polls: it would have stopped it by now
    finally:
        child.kill()
        child.wait()


def test_the_wrapper_runs_the_command_with_its_exit_code() -> None:
    done = subprocess.run(tied_command([sys.executable, "-c", "raise SystemExit(7)"]), timeout=60)
    assert done.returncode == 7


def test_a_child_whose_parent_is_already_gone_does_not_start() -> None:
    command = [sys.executable, "-m", "groundhog.lifetime", "1", "true"]  # pid 1 is not our parent
    assert subprocess.run(command, timeout=60).returncode == 1


class _Captured(Exception):
    pass


def _capture_popen(monkeypatch: pytest.MonkeyPatch, module: object) -> list[list[str]]:
    seen: list[list[str]] = []

    def popen(command: list[str], *args: object, **kwargs: object) -> None:
        seen.append(list(command))
        raise _Captured

    # One `subprocess` module for everyone: patched here, it is patched in every caller.
    monkeypatch.setattr(module.subprocess, "Popen", popen)  # type: ignore[attr-defined]
    return seen


def test_up_and_the_benchmark_start_their_services_tied(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    from bench import harness
    from groundhog import launcher

    seen = _capture_popen(monkeypatch, launcher)
    with pytest.raises(_Captured):
        launcher.spawn("resolver", ["resolver"], tmp_path)  # type: ignore[arg-type]
    with pytest.raises(_Captured):
        harness.start_child("worldsim", ["worldsim"], health="http", log_dir=tmp_path)  # type: ignore[arg-type]
    tied = [sys.executable, "-m", "groundhog.lifetime", str(os.getpid())]
    assert [command[:4] for command in seen] == [tied, tied]
