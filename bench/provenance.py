"""Where and how a benchmark run was made: the commit, the machine, its wall and CPU time.

A committed benchmark.json that does not say which code produced it, on what machine and at
what cost cannot be checked by a reader who did not watch it run (issue 58). This is recorded
into `meta.provenance` by bench/run.py; nothing here decides anything.
"""

from __future__ import annotations

import os
import platform
import resource
import subprocess
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def commit(root: Path = ROOT) -> dict[str, Any]:
    """The checkout's commit and whether tracked files differed from it; `None`s outside git."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return {"commit": None, "dirty": None}
    return {"commit": head, "dirty": bool(status.strip())}


def machine() -> dict[str, Any]:
    return {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "processor": platform.machine(),
    }


def cpu_seconds() -> float:
    """CPU time of this process and of the children it has waited for (the servers it ran)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def record(cells: dict[str, Any], *, wall_seconds: float, cpu_at_start: float) -> dict[str, Any]:
    """`meta.provenance`: each cell's sizes as run (not the config's defaults) and the costs."""
    return {
        **commit(),
        "machine": machine(),
        "wall_seconds": wall_seconds,
        "cpu_seconds": cpu_seconds() - cpu_at_start,
        "cell_sizes": {name: cell.get("sizes") for name, cell in cells.items()},
    }
