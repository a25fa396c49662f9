"""`groundhog run --capture`: run a command whose every connection goes through the sidecar.

The command runs in a network namespace of its own (groundhog/capture_net.py) registered with
the sidecar under the tape and branch it was started for (groundhog/capture_registry.py), so
the worker sets nothing and cannot name another branch. The namespace, its rules and its
registry entry go when the command ends, when this process is stopped, and — through a small
watcher in a session of its own — when this process is killed with SIGKILL; a run that left
anything behind anyway (the machine lost power) is cleaned at the next start.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import FrameType

from groundhog import capture_net, capture_registry
from groundhog.capture_net import CaptureNet, Loopback
from groundhog.capture_registry import CapturedWorker
from groundhog.lifetime import start_time
from groundhog.worker_env import CAPABILITY_ENV

log = logging.getLogger(__name__)

# Proxy variables would point the worker at the proxy's regular port, which inside the
# namespace is redirected to the transparent listener like any address: it must dial directly.
PROXY_VARIABLES = (
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "no_proxy",
)
WATCH_POLL_S = 0.2


def captured_environment(environment: dict[str, str]) -> dict[str, str]:
    """The worker's environment without proxy variables (CA trust and seed stay)."""
    captured = {k: v for k, v in environment.items() if k not in PROXY_VARIABLES}
    captured["GROUNDHOG_CAPTURED"] = "1"
    return captured


def _invoking_user() -> tuple[int, int] | None:
    """The user `sudo` ran us for, so the command runs as them and not as root."""
    uid, gid = os.environ.get("SUDO_UID"), os.environ.get("SUDO_GID")
    if os.geteuid() != 0 or not uid or not gid or not uid.isdigit() or not gid.isdigit():
        return None
    return int(uid), int(gid)


CA_VARIABLES = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS")


def readable_ca_files(environment: dict[str, str], directory: Path) -> dict[str, str]:
    """The CA variables pointed at world-readable copies in `directory`.

    Under sudo the CA was cached in root's home, which the invoking user cannot read; a worker
    that cannot read its trust file fails every TLS handshake with the proxy."""
    directory.mkdir(mode=0o755, exist_ok=True)
    copies: dict[str, str] = {}
    for name in CA_VARIABLES:
        source = environment.get(name)
        if not source or not Path(source).is_file():
            continue
        target = directory / Path(source).name
        shutil.copyfile(source, target)
        target.chmod(0o644)
        copies[name] = str(target)
    return copies


def _child_setup(net: CaptureNet, user: tuple[int, int] | None) -> None:
    capture_net.enter_namespace(net)
    if user is not None:
        os.setgroups([])
        os.setgid(user[1])
        os.setuid(user[0])


def stop_namespace_processes(net: CaptureNet) -> None:
    """SIGKILL whatever still runs in the namespace (a worker's children included)."""
    completed = subprocess.run(
        ["ip", "netns", "pids", net.namespace], capture_output=True, text=True, check=False
    )
    for pid in completed.stdout.split():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            continue


def teardown(net: CaptureNet, capture_dir: Path) -> None:
    stop_namespace_processes(net)
    capture_registry.unregister(capture_dir, net.worker_address, net.owner_pid)
    capture_net.destroy(net)


def _start_watcher(net: CaptureNet, capture_dir: Path) -> None:
    """A process in its own session that tears the namespace down if this one is killed."""
    started = start_time(os.getpid())
    subprocess.Popen(
        [
            sys.executable,
            "-m",
            "groundhog.capture_run",
            str(net.owner_pid),
            str(started),
            str(net.slot),
            str(capture_dir),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def _raise_exit(signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def run_captured(
    command: list[str],
    environment: dict[str, str],
    *,
    tape: str,
    branch: str,
    capture_dir: Path,
    loopback: Loopback = Loopback.LOCAL,
) -> int:
    """Run `command` captured as `tape`/`branch`; its exit status (`loopback`: where its
    127.0.0.0/8 goes, capture_net.Loopback).

    Raises CaptureUnavailable or RegistryError (naming the fix) before anything runs."""
    capture_net.check_privileges()
    listeners = capture_registry.sidecar(capture_dir)
    owner = os.getpid()
    # From here on SIGTERM unwinds through the clean-up below instead of skipping it.
    previous = signal.signal(signal.SIGTERM, _raise_exit)
    try:
        net = capture_net.allocate_and_create(owner, listeners.transparent, listeners.dns, loopback)
    except BaseException:
        signal.signal(signal.SIGTERM, previous)
        raise
    scratch = tempfile.TemporaryDirectory(prefix="groundhog-capture-")
    Path(scratch.name).chmod(0o755)
    try:
        _start_watcher(net, capture_dir)
        worker = CapturedWorker(
            net.worker_address,
            tape,
            branch,
            owner_pid=owner,
            capability=environment.get(CAPABILITY_ENV),
        )
        capture_registry.register(capture_dir, worker)
        log.info("captured %s as %s/%s from %s", command[0], tape, branch, net.worker_address)
        user = _invoking_user()
        worker_environment = captured_environment(environment)
        if user is not None:
            trust = Path(scratch.name)
            worker_environment.update(readable_ca_files(worker_environment, trust))
        child = subprocess.Popen(
            command,
            env=worker_environment,
            preexec_fn=lambda: _child_setup(net, user),
        )
        return child.wait()
    finally:
        teardown(net, capture_dir)
        scratch.cleanup()
        signal.signal(signal.SIGTERM, previous)


def watch(owner_pid: int, owner_started: int, slot: int, capture_dir: Path) -> None:
    """Wait for the run to end; if it left its namespace behind, remove it."""
    while start_time(owner_pid) == owner_started:
        time.sleep(WATCH_POLL_S)
    net = CaptureNet(owner_pid=owner_pid, slot=slot)
    teardown(net, capture_dir)


if __name__ == "__main__":
    pid, started, link_slot, directory = sys.argv[1:5]
    watch(int(pid), int(started), int(link_slot), Path(directory))
