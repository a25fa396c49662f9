"""The capture registry: entries by address, owned by their run; the sidecar's announcement."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from groundhog.capture_registry import (
    CapturedWorker,
    RegistryError,
    SidecarListeners,
    announce,
    lookup,
    register,
    sidecar,
    unregister,
)


def test_an_entry_is_found_by_address_and_removed_only_by_its_owner(tmp_path: Path) -> None:
    first = CapturedWorker("169.254.64.2", "demo", "root/b0", owner_pid=10, capability=None)
    register(tmp_path, first)
    assert lookup(tmp_path, "169.254.64.2") == first
    assert lookup(tmp_path, "169.254.64.6") is None
    # The address was handed to a later run: the earlier run's clean-up leaves it alone.
    later = CapturedWorker("169.254.64.2", "demo", "root/b1", owner_pid=11, capability="c0ffee" * 5)
    register(tmp_path, later)
    unregister(tmp_path, "169.254.64.2", owner_pid=10)
    assert lookup(tmp_path, "169.254.64.2") == later
    unregister(tmp_path, "169.254.64.2", owner_pid=11)
    assert lookup(tmp_path, "169.254.64.2") is None


def test_the_sidecar_is_found_only_while_it_runs(tmp_path: Path) -> None:
    with pytest.raises(RegistryError, match="--capture-dir"):
        sidecar(tmp_path)
    announce(tmp_path, SidecarListeners(os.getpid(), ("127.0.0.1", 4000), ("127.0.0.1", 4001)))
    assert sidecar(tmp_path).transparent == ("127.0.0.1", 4000)
    announce(tmp_path, SidecarListeners(2**22 + 1, ("127.0.0.1", 4000), None))
    with pytest.raises(RegistryError, match="is not running"):
        sidecar(tmp_path)
