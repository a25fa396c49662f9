"""Unit tests of groundhog/launcher.py: spawning children, readiness, stopping, signals."""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
from pathlib import Path

import pytest

from groundhog.launcher import (
    LaunchError,
    Service,
    connect_host,
    http_ready,
    port_ready,
    signals_held,
    sigterm_as_interrupt,
    spawn,
    url_for,
    wait_for_exit,
    wait_ready,
)

CHILD_MODULE = """
import json, os, signal, sys
mode = sys.argv[1]
if mode == "env":
    names = ["HTTP_PROXY", "https_proxy", "ALL_PROXY", "KEEP_ME"]
    print(json.dumps({name: os.environ.get(name) for name in names}))
elif mode == "fail":
    print("line one")
    print("something broke", file=sys.stderr)
    sys.exit(3)
elif mode == "wait":
    print("waiting", flush=True)
    signal.pause()
"""


@pytest.fixture
def child_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    package = tmp_path / "modules"
    package.mkdir()
    (package / "launcher_child.py").write_text(CHILD_MODULE)
    monkeypatch.setenv("PYTHONPATH", str(package))
    return "launcher_child"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_spawn_logs_output_and_drops_proxy_variables(
    child_module: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("HTTP_PROXY", "https_proxy", "ALL_PROXY"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")
    monkeypatch.setenv("KEEP_ME", "yes")
    child = spawn("helper", [child_module, "env"], tmp_path / "logs")
    assert child.process.wait(timeout=30) == 0
    assert child.log_path == tmp_path / "logs" / "helper.log"
    seen = json.loads(child.log_path.read_text())
    assert seen == {"HTTP_PROXY": None, "https_proxy": None, "ALL_PROXY": None, "KEEP_ME": "yes"}


def test_a_child_that_exits_while_starting_is_reported_with_its_log(
    child_module: str, tmp_path: Path
) -> None:
    child = spawn("resolver", [child_module, "fail"], tmp_path)
    with pytest.raises(LaunchError) as error:
        wait_ready(child, lambda: False, timeout=30, what="/healthz")
    message = str(error.value)
    assert "the resolver exited with code 3 while starting" in message
    assert "something broke" in message and str(child.log_path) in message


def test_a_child_that_never_gets_ready_times_out_and_stops(
    child_module: str, tmp_path: Path
) -> None:
    child = spawn("proxy", [child_module, "wait"], tmp_path)
    try:
        with pytest.raises(LaunchError, match="the proxy did not answer port 1 within 0s"):
            wait_ready(child, lambda: False, timeout=0.3, what="port 1")
    finally:
        child.stop(timeout=10)
    assert child.process.returncode == -signal.SIGTERM
    child.stop()  # stopping an exited child is a no-op


def test_wait_ready_returns_once_ready(child_module: str, tmp_path: Path) -> None:
    child = spawn("proxy", [child_module, "wait"], tmp_path)
    calls: list[int] = []
    try:
        wait_ready(child, lambda: calls.append(1) or len(calls) >= 2, timeout=30, what="x")
    finally:
        child.stop()
    assert len(calls) == 2


def test_wait_for_exit_returns_the_child_that_exited(child_module: str, tmp_path: Path) -> None:
    waiting = spawn("resolver", [child_module, "wait"], tmp_path)
    quitting = spawn("proxy", [child_module, "fail"], tmp_path)
    try:
        assert wait_for_exit((waiting, quitting)) is quitting
    finally:
        waiting.stop()


def test_log_tail_keeps_the_last_lines_and_tolerates_a_missing_log(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text("".join(f"line {n}\n" for n in range(50)))
    child = Service("x", None, log)  # type: ignore[arg-type]
    assert child.log_tail(3) == "line 47\nline 48\nline 49"
    assert Service("y", None, tmp_path / "absent.log").log_tail() == ""  # type: ignore[arg-type]


def test_port_and_http_readiness_probes() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        assert port_ready("127.0.0.1", listener.getsockname()[1])
    closed = _free_port()
    assert not port_ready("127.0.0.1", closed)
    assert not http_ready(f"http://127.0.0.1:{closed}/healthz")


@pytest.mark.parametrize(
    ("host", "reach", "url"),
    [
        ("0.0.0.0", "127.0.0.1", "http://127.0.0.1:80"),
        ("", "127.0.0.1", "http://127.0.0.1:80"),
        ("::", "::1", "http://[::1]:80"),
        ("127.0.0.2", "127.0.0.2", "http://127.0.0.2:80"),
        ("fe80::1", "fe80::1", "http://[fe80::1]:80"),
    ],
)
def test_wildcard_binds_are_reached_on_loopback(host: str, reach: str, url: str) -> None:
    assert connect_host(host) == reach
    assert url_for(host, 80) == url


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigterm_becomes_keyboard_interrupt_only_inside_the_block() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt), sigterm_as_interrupt():
        os.kill(os.getpid(), signal.SIGTERM)
    assert signal.getsignal(signal.SIGTERM) is before


def test_signals_held_while_stopping_children_then_restored() -> None:
    # A second SIGTERM during clean-up must not abort it and leave children running.
    with sigterm_as_interrupt():
        with signals_held():
            os.kill(os.getpid(), signal.SIGTERM)
            os.kill(os.getpid(), signal.SIGINT)
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGTERM)
