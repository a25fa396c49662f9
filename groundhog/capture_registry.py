"""Who a captured worker is: the files `groundhog run --capture` and the sidecar share.

A captured worker sends no proxy credentials and no headers; the only thing the sidecar knows
about a connection is the address it came from, and that address is the worker's own network
namespace. `run --capture` writes one small JSON file per worker, named by its address, before
the command starts, and removes it when the namespace goes; the proxy reads it when a
connection arrives on its transparent listener. The sidecar announces where those listeners
are in `sidecar.json` in the same directory. Files, not an HTTP route: they need no token, no
running request loop, and several `run --capture` on one sidecar never race on shared state
(each owns its file). An entry may later carry more than tape and branch (a capability): it is
a JSON object read by name, so new fields do not break old readers.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from groundhog.errors import LocalProblem

CAPTURE_DIR_ENV = "GROUNDHOG_CAPTURE_DIR"
# Where `run --capture` looks when told nowhere else (the proxy needs --capture-dir all the same).
DEFAULT_CAPTURE_DIR = Path("/run/groundhog/capture")
SIDECAR_FILE = "sidecar.json"
WORKERS_DIR = "workers"


class RegistryError(LocalProblem, RuntimeError):
    """The capture directory does not hold what a captured worker needs."""


@dataclass(frozen=True)
class CapturedWorker:
    """One captured worker: its namespace's address and the identity it was started with."""

    address: str
    tape: str
    branch: str
    owner_pid: int
    # The branch's capability (resolver/capabilities.py), presented for the worker: a captured
    # worker names nothing itself, so the sidecar presents it from here.
    capability: str | None = None


@dataclass(frozen=True)
class SidecarListeners:
    """Where the sidecar's transparent (TCP) and DNS listeners are, on its own loopback."""

    pid: int
    transparent: tuple[str, int]
    dns: tuple[str, int] | None


def _write_atomically(path: Path, document: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # Written beside and renamed: a reader never sees half an entry.
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp") as out:
        json.dump(document, out)
    os.chmod(out.name, 0o644)
    Path(out.name).replace(path)


def _worker_file(directory: Path, address: str) -> Path:
    return Path(directory) / WORKERS_DIR / f"{address}.json"


def register(directory: Path, worker: CapturedWorker) -> Path:
    path = _worker_file(directory, worker.address)
    _write_atomically(path, asdict(worker))
    return path


def unregister(directory: Path, address: str, owner_pid: int) -> None:
    """Remove the entry for `address` if it is still `owner_pid`'s (a later worker may hold it)."""
    found = lookup(directory, address)
    if found is not None and found.owner_pid == owner_pid:
        _worker_file(directory, address).unlink(missing_ok=True)


def lookup(directory: Path, address: str) -> CapturedWorker | None:
    try:
        document = json.loads(_worker_file(directory, address).read_text())
        return CapturedWorker(
            address=str(document["address"]),
            tape=str(document["tape"]),
            branch=str(document["branch"]),
            owner_pid=int(document["owner_pid"]),
            capability=document.get("capability"),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def announce(directory: Path, listeners: SidecarListeners) -> None:
    document = {
        "pid": listeners.pid,
        "transparent": list(listeners.transparent),
        "dns": list(listeners.dns) if listeners.dns else None,
    }
    _write_atomically(Path(directory) / SIDECAR_FILE, document)


def sidecar(directory: Path) -> SidecarListeners:
    """The listeners a running sidecar announced in `directory`; RegistryError naming the fix."""
    path = Path(directory) / SIDECAR_FILE
    try:
        document = json.loads(path.read_text())
        host, port = document["transparent"]
        dns = document.get("dns")
        listeners = SidecarListeners(
            pid=int(document["pid"]),
            transparent=(str(host), int(port)),
            dns=(str(dns[0]), int(dns[1])) if dns else None,
        )
    except FileNotFoundError:
        raise RegistryError(
            f"no sidecar has announced itself in {str(directory)!r}: start the proxy with "
            f"--capture-dir {directory} (or point --capture-dir / {CAPTURE_DIR_ENV} at the proxy's)"
        ) from None
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise RegistryError(f"{path} is not a sidecar announcement: {error}") from error
    if not Path(f"/proc/{listeners.pid}").exists():
        raise RegistryError(
            f"the sidecar that announced itself in {path} (pid {listeners.pid}) is not running"
        )
    return listeners
