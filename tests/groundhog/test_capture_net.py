"""Capture namespaces: what is missing is named; links never overlap; a user gets no capture."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from groundhog import capture_net


def test_without_the_capabilities_capture_names_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(capture_net, "_effective_capabilities", lambda: 0)
    with pytest.raises(capture_net.CaptureUnavailable) as raised:
        capture_net.check_privileges()
    assert "CAP_NET_ADMIN" in str(raised.value) and "CAP_SYS_ADMIN" in str(raised.value)
    assert "nothing was run uncaptured" in str(raised.value)


def test_links_of_different_slots_never_overlap() -> None:
    nets = [capture_net.CaptureNet(owner_pid=5, slot=slot) for slot in (0, 1, 4095)]
    addresses = [(net.host_address, net.worker_address) for net in nets]
    assert addresses[0] == ("169.254.64.1", "169.254.64.2")
    assert addresses[1] == ("169.254.64.5", "169.254.64.6")
    assert addresses[2] == ("169.254.127.253", "169.254.127.254")
    assert len(nets[0].host_interface) <= 15 and nets[0].namespace == "ghcap-5"


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="needs root and setpriv to run the CLI without CAP_NET_ADMIN and CAP_SYS_ADMIN",
)
def test_an_unprivileged_capture_exits_naming_what_it_needs_and_runs_nothing(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "ran"
    dropped = "-net_admin,-sys_admin"
    command = ["setpriv", f"--inh-caps={dropped}", f"--bounding-set={dropped}"]
    command += [sys.executable, "-m", "groundhog.cli", "run", "--capture", "--capture-dir"]
    command += [str(tmp_path), "--tape", "t", "--", "touch", str(marker)]
    environment = {**os.environ, "GROUNDHOG_RESOLVER_URL": "http://127.0.0.1:9"}
    completed = subprocess.run(
        command, capture_output=True, text=True, env=environment, timeout=60, check=False
    )
    assert completed.returncode == 1
    assert "CAP_NET_ADMIN" in completed.stderr and "uncaptured" in completed.stderr
    assert not marker.exists()
