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


PROC = Path("/proc")


def _stat_fields(pid: int) -> list[str] | None:
    """/proc/PID/stat after the command's closing parenthesis (a name may hold spaces)."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None  # gone since it was listed
    return text.rsplit(")", 1)[1].split()


def live_descendants_cpu_seconds(root: int | None = None) -> float:
    """CPU of every live descendant of ``root`` (this process), with what each has reaped.

    `resource.RUSAGE_CHILDREN` counts a child only once it is waited for; the worlds, resolver
    and proxy a run starts are still running when it records its cost. Linux only (read from
    /proc); elsewhere 0.
    """
    if not PROC.is_dir():
        return 0.0
    root = os.getpid() if root is None else root
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    ticks = os.sysconf("SC_CLK_TCK")
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(int(entry.name))
        if fields is None:
            continue
        # After the name: state ppid ... utime (12) stime (13) cutime (14) cstime (15).
        parents[int(entry.name)] = int(fields[1])
        times[int(entry.name)] = sum(int(value) for value in fields[11:15]) / ticks
    total, frontier = 0.0, [root]
    while frontier:
        parent = frontier.pop()
        for pid, ppid in parents.items():
            if ppid == parent:
                total += times[pid]
                frontier.append(pid)
    return total


def cpu_seconds() -> float:
    """CPU time of this process, of the children it has waited for, and of those still running
    (the servers it started)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    waited = own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
    return waited + live_descendants_cpu_seconds()


def record(cells: dict[str, Any], *, wall_seconds: float, cpu_at_start: float) -> dict[str, Any]:
    """`meta.provenance`: each cell's sizes as run (not the config's defaults) and the costs."""
    return {
        **commit(),
        "machine": machine(),
        "wall_seconds": wall_seconds,
        "cpu_seconds": cpu_seconds() - cpu_at_start,
        "cell_sizes": {name: cell.get("sizes") for name, cell in cells.items()},
    }
