"""Unit tests of groundhog/capture_run.py: the captured worker's environment, its CA copies,
and the order `run_captured` sets up and tears down in.

tests/groundhog/test_capture.py runs real captured workers end to end, but only where this
machine can make network namespaces (root, `ip`, iptables), and it cannot see what happens when
a step fails. Here the namespace calls (`capture_net`) and the watcher are replaced by recorders
while the registry and the command are real, so each step of `run_captured` is checked on any
machine: the worker is registered under its tape and branch while it runs, the environment it
gets, the exit status, and that the namespace, entry and signal handler are put back whatever
happens. The pure helpers are checked directly.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from groundhog import capture_net, capture_registry, capture_run
from groundhog.capture_net import CaptureNet, Loopback
from groundhog.capture_registry import SidecarListeners
from groundhog.capture_run import (
    CA_VARIABLES,
    PROXY_VARIABLES,
    captured_environment,
    readable_ca_files,
    run_captured,
)
from groundhog.worker_env import CAPABILITY_ENV

SLOT = 5


def test_the_captured_environment_drops_every_proxy_variable_and_says_captured() -> None:
    given = {name: "http://proxy:8080" for name in PROXY_VARIABLES}
    given |= {"SSL_CERT_FILE": "/ca.pem", "GROUNDHOG_SEED": "7", "PATH": "/bin"}
    captured = captured_environment(given)
    assert captured == {
        "SSL_CERT_FILE": "/ca.pem", "GROUNDHOG_SEED": "7", "PATH": "/bin",
        "GROUNDHOG_CAPTURED": "1",
    }  # fmt: skip
    assert "HTTP_PROXY" in given  # the caller's mapping is left as it was


def test_ca_files_are_copied_world_readable_and_missing_ones_skipped(tmp_path: Path) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    ca = private / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    ca.chmod(0o600)
    environment = {
        "SSL_CERT_FILE": str(ca),
        "REQUESTS_CA_BUNDLE": str(private / "missing.pem"),
        "CURL_CA_BUNDLE": str(private),  # a directory, not a file
        "UNRELATED_FILE": str(ca),
    }
    target = tmp_path / "trust"
    copies = readable_ca_files(environment, target)
    assert copies == {"SSL_CERT_FILE": str(target / "ca.pem")}
    assert Path(copies["SSL_CERT_FILE"]).read_text() == ca.read_text()
    assert stat.S_IMODE(os.stat(copies["SSL_CERT_FILE"]).st_mode) == 0o644
    assert stat.S_IMODE(os.stat(target).st_mode) & 0o755 == 0o755
    assert set(CA_VARIABLES) >= {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS"}


def test_stopping_the_namespace_kills_each_listed_pid(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[list[str]] = []
    killed: list[tuple[int, int]] = []

    class Listed:
        stdout = "101\n202\nnot-a-pid\n303\n"

    def run(command: list[str], **_options: Any) -> Listed:
        asked.append(command)
        return Listed()

    def kill(pid: int, signum: int) -> None:
        killed.append((pid, signum))
        if pid == 202:
            raise ProcessLookupError(pid)  # gone meanwhile: the others are still stopped

    monkeypatch.setattr(capture_run.subprocess, "run", run)
    monkeypatch.setattr(capture_run.os, "kill", kill)
    net = CaptureNet(owner_pid=4242, slot=SLOT)
    capture_run.stop_namespace_processes(net)
    assert asked == [["ip", "netns", "pids", net.namespace]]
    assert killed == [(101, signal.SIGKILL), (202, signal.SIGKILL), (303, signal.SIGKILL)]


def test_the_watcher_waits_for_its_owner_then_tears_down(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ages = iter([1000, 1000, 1000, None])  # the owner runs three looks, then is gone
    looks: list[int] = []

    def start_time(pid: int) -> int | None:
        looks.append(pid)
        return next(ages)

    torn: list[tuple[CaptureNet, Path]] = []
    monkeypatch.setattr(capture_run, "start_time", start_time)
    monkeypatch.setattr(capture_run, "WATCH_POLL_S", 0.0)
    monkeypatch.setattr(capture_run, "teardown", lambda net, path: torn.append((net, path)))
    capture_run.watch(4242, 1000, SLOT, tmp_path)
    assert looks == [4242] * 4
    assert torn == [(CaptureNet(owner_pid=4242, slot=SLOT), tmp_path)]


def test_a_reused_pid_counts_as_the_owner_gone(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    torn: list[CaptureNet] = []
    monkeypatch.setattr(capture_run, "start_time", lambda _pid: 2000)  # another process now
    monkeypatch.setattr(capture_run, "teardown", lambda net, _path: torn.append(net))
    capture_run.watch(4242, 1000, SLOT, tmp_path)
    assert torn == [CaptureNet(owner_pid=4242, slot=SLOT)]


@dataclass
class Namespaces:
    """Stands in for capture_net and the watcher, logging each call in order."""

    capture_dir: Path
    log: list[str] = field(default_factory=list)
    fail_create: bool = False
    # What the registry and the SIGTERM handler held when the worker was registered.
    registered: Any = None
    handler_while_running: Any = None

    def allocate_and_create(
        self, owner: int, transparent: tuple[str, int], dns: Any, loopback: Loopback
    ) -> CaptureNet:
        self.log.append(f"create {owner} {transparent} {dns} {loopback}")
        if self.fail_create:
            raise capture_net.CaptureUnavailable("no namespaces here")
        return CaptureNet(owner_pid=owner, slot=SLOT)


@pytest.fixture
def namespaces(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Namespaces]:
    capture_dir = tmp_path / "capture"
    capture_registry.announce(
        capture_dir, SidecarListeners(os.getpid(), ("127.0.0.1", 8081), ("127.0.0.1", 8053))
    )
    fake = Namespaces(capture_dir)
    register = capture_registry.register

    def registering(directory: Path, worker: capture_registry.CapturedWorker) -> Path:
        path = register(directory, worker)
        fake.log.append(f"register {worker.address}")
        fake.registered = capture_registry.lookup(directory, worker.address)
        fake.handler_while_running = signal.getsignal(signal.SIGTERM)
        return path

    monkeypatch.setattr(capture_net, "check_privileges", lambda: fake.log.append("check"))
    monkeypatch.setattr(capture_net, "allocate_and_create", fake.allocate_and_create)
    monkeypatch.setattr(capture_net, "destroy", lambda net: fake.log.append(f"destroy {net.slot}"))
    monkeypatch.setattr(capture_net, "enter_namespace", lambda _net: None)  # in the child
    monkeypatch.setattr(capture_registry, "register", registering)
    monkeypatch.setattr(
        capture_run, "_start_watcher", lambda net, _dir: fake.log.append(f"watch {net.slot}")
    )
    monkeypatch.setattr(
        capture_run, "stop_namespace_processes", lambda net: fake.log.append(f"stop {net.slot}")
    )
    for name in ("SUDO_UID", "SUDO_GID"):
        monkeypatch.delenv(name, raising=False)
    before = signal.getsignal(signal.SIGTERM)
    yield fake
    assert signal.getsignal(signal.SIGTERM) == before  # put back, however the run ended


def worker_address() -> str:
    return CaptureNet(owner_pid=os.getpid(), slot=SLOT).worker_address


def entry_exists(namespaces: Namespaces) -> bool:
    return capture_registry.lookup(namespaces.capture_dir, worker_address()) is not None


def test_a_run_registers_the_worker_runs_it_and_tears_everything_down(
    namespaces: Namespaces, capfd: pytest.CaptureFixture[str]
) -> None:
    environment = {
        "HTTPS_PROXY": "http://proxy:8080", "PATH": os.environ.get("PATH", "/bin"),
        CAPABILITY_ENV: "cap-123", "GROUNDHOG_SEED": "9",
    }  # fmt: skip
    show = "import json, os, sys; print(json.dumps(dict(os.environ))); sys.exit(7)"
    status = run_captured(
        [sys.executable, "-c", show], environment, tape="tape-a", branch="root/b3",
        capture_dir=namespaces.capture_dir, loopback=Loopback.SIDECAR,
    )  # fmt: skip
    assert status == 7
    owner = os.getpid()
    assert namespaces.log == [
        "check",
        f"create {owner} ('127.0.0.1', 8081) ('127.0.0.1', 8053) sidecar",
        f"watch {SLOT}",
        f"register {worker_address()}",
        f"stop {SLOT}",
        f"destroy {SLOT}",
    ]
    assert namespaces.registered == capture_registry.CapturedWorker(
        worker_address(), "tape-a", "root/b3", owner_pid=owner, capability="cap-123"
    )
    assert namespaces.handler_while_running is capture_run._raise_exit
    assert not entry_exists(namespaces)  # unregistered at the end
    seen = json.loads(capfd.readouterr().out.strip().splitlines()[-1])
    assert seen["GROUNDHOG_CAPTURED"] == "1" and seen["GROUNDHOG_SEED"] == "9"
    assert "HTTPS_PROXY" not in seen


def test_a_command_that_cannot_start_still_tears_down(namespaces: Namespaces) -> None:
    with pytest.raises(FileNotFoundError):
        run_captured(
            ["/nonexistent/worker"], {}, tape="t", branch="root",
            capture_dir=namespaces.capture_dir,
        )  # fmt: skip
    assert namespaces.log[-2:] == [f"stop {SLOT}", f"destroy {SLOT}"]
    assert not entry_exists(namespaces)


def test_a_namespace_that_cannot_be_made_leaves_nothing_to_tear_down(
    namespaces: Namespaces,
) -> None:
    namespaces.fail_create = True
    with pytest.raises(capture_net.CaptureUnavailable):
        run_captured(["true"], {}, tape="t", branch="root", capture_dir=namespaces.capture_dir)
    assert [entry.split()[0] for entry in namespaces.log] == ["check", "create"]
    assert namespaces.registered is None


def test_without_a_sidecar_nothing_is_made(namespaces: Namespaces, tmp_path: Path) -> None:
    with pytest.raises(capture_registry.RegistryError, match="--capture-dir"):
        run_captured(["true"], {}, tape="t", branch="root", capture_dir=tmp_path / "empty")
    assert namespaces.log == ["check"]


@pytest.mark.skipif(os.geteuid() != 0, reason="running a command as another user needs root")
def test_under_sudo_the_command_runs_as_the_invoking_user_with_readable_ca_copies(
    namespaces: Namespaces,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
) -> None:
    ca = tmp_path / "root-only" / "ca.pem"
    ca.parent.mkdir(mode=0o700)
    ca.write_text("the proxy's CA\n")
    ca.chmod(0o600)
    monkeypatch.setenv("SUDO_UID", "65534")
    monkeypatch.setenv("SUDO_GID", "65534")
    script = 'id -u; id -g; echo "$SSL_CERT_FILE"; cat "$SSL_CERT_FILE"'
    status = run_captured(
        ["/bin/sh", "-c", script], {"SSL_CERT_FILE": str(ca), "PATH": "/usr/bin:/bin"},
        tape="t", branch="root", capture_dir=namespaces.capture_dir,
    )  # fmt: skip
    uid, gid, copy, content = capfd.readouterr().out.strip().splitlines()[-4:]
    assert status == 0 and (uid, gid) == ("65534", "65534")
    assert copy != str(ca) and Path(copy).name == "ca.pem"
    assert "groundhog-capture-" in copy and not Path(copy).exists()  # scratch removed after
    assert content == "the proxy's CA"
