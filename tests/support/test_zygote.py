"""tests/support/zygote.py: a forked server is a real process of its own that stops, dies and is
reaped like a `python -m` child, and dies with the test run that started it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import httpx
import pytest

from groundhog.lifetime import start_time
from tests.support import zygote
from tests.support.servers import REPO_ROOT, start_server, wait_until

pytestmark = pytest.mark.skipif(not zygote.enabled(), reason="the zygote is off or not Linux")


def test_a_forked_resolver_serves_and_is_reaped_with_its_exit_status(tmp_path: Path) -> None:
    server = start_server(
        ["resolver", "--data", str(tmp_path)],
        env={"GROUNDHOG_CLAIM_SECONDS": "7.5"},
        own_group=True,
    )
    try:
        assert isinstance(server.process, zygote.ForkedProcess)
        assert httpx.get(f"{server.url}/healthz", trust_env=False).status_code == 200
        assert os.getsid(server.process.pid) == server.process.pid  # its own group, as asked
        with pytest.raises(subprocess.TimeoutExpired):
            server.process.wait(timeout=0.1)
        assert server.process.poll() is None
    finally:
        server.kill_group_hard()
    assert server.process.returncode == -signal.SIGKILL
    assert start_time(server.process.pid) is None  # reaped: no zombie is left


def test_the_environment_given_is_the_childs(tmp_path: Path) -> None:
    """A setting read from the environment at start-up takes the test's value, not the
    zygote's: a bad value is refused by the child, which exits with the resolver's error."""
    with pytest.raises(RuntimeError, match="exited early") as refused:
        start_server(
            ["resolver", "--data", str(tmp_path)],
            env={"GROUNDHOG_MIGRATE_ON_START": "sometimes"},
            timeout=60,
        )
    assert "migrate_on_start" in str(refused.value).lower()


def test_only_what_an_interpreter_would_start_alike_is_forked(tmp_path: Path) -> None:
    assert zygote.can_fork(["resolver"], {"GROUNDHOG_X": "1"}, REPO_ROOT)
    assert zygote.can_fork(["proxy"], {"PYTHONUNBUFFERED": "1"}, REPO_ROOT)
    assert not zygote.can_fork(["worldsim"], {}, REPO_ROOT)
    assert not zygote.can_fork(["resolver"], {"PYTHONPATH": "/elsewhere"}, REPO_ROOT)
    assert not zygote.can_fork(["resolver"], {"GROUNDHOG_SHIM": "1"}, REPO_ROOT)
    assert not zygote.can_fork(["resolver"], {}, tmp_path)


def test_a_forked_server_dies_with_the_test_run_that_started_it(tmp_path: Path) -> None:
    """A test run killed with SIGKILL runs no clean-up; its forked resolver must go anyway."""
    pid_file = tmp_path / "pid"
    script = textwrap.dedent(
        f"""
        import signal
        from pathlib import Path
        from tests.support.servers import start_server
        server = start_server(["resolver", "--data", {str(tmp_path)!r}])
        Path({str(pid_file) + ".new"!r}).write_text(str(server.process.pid))
        Path({str(pid_file) + ".new"!r}).rename({str(pid_file)!r})
        signal.pause()  # until the test kills this stand-in test run
        """
    )
    run = subprocess.Popen([sys.executable, "-c", script], cwd=REPO_ROOT)
    try:
        wait_until(lambda: pid_file.exists() or run.poll() is not None, timeout=120, what="start")
        assert run.poll() is None, "the test run exited before its resolver started"
        server_pid = int(pid_file.read_text())
        assert start_time(server_pid) is not None
    finally:
        run.kill()
        run.wait(timeout=30)
    wait_until(lambda: start_time(server_pid) is None, timeout=60, what="the orphan to go")
