"""Child processes for the reliability scenarios: start, health-poll, kill -9, restart, RSS.

Crash scenarios need more than the benchmark harness offers: a resolver restarted on the *same*
port and store after `kill -9` (so proxies keep their URL), environment overrides (tokens, short
leases), and the resident memory of each process. Starting, polling and stopping one process is
bench.harness's; this adds the restartable, inspectable child around it. Every child is ended
by its own pid; all listen on loopback only.
"""

from __future__ import annotations

import contextlib
import logging
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench.harness import (
    LOOPBACK,
    REPO_ROOT,
    child_command,
    child_environment,
    free_port,
    stop_process,
    wait_for_child,
)
from groundhog.lifetime import tied_command

# The resolver under crash and fault load can take longer than a benchmark run's to answer.
_HEALTH_TIMEOUT_SECONDS = 2.0

logger = logging.getLogger(__name__)


def rss_kib(pid: int) -> int | None:
    """Resident set size of `pid` in KiB from /proc, or None once it has exited."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


@dataclass
class Child:
    """One `python -m <module_args> --host 127.0.0.1 --port P` process, restartable in place."""

    name: str
    module_args: list[str]
    port: int
    log_path: Path
    health: str = "http"
    env: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None
    starts: int = 0
    log_offset: int = 0

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log(self) -> str:
        """Everything every start of this child printed."""
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def log_of_this_start(self) -> str:
        """What the current (or last) start printed, without earlier runs' output."""
        if not self.log_path.exists():
            return ""
        with self.log_path.open("rb") as handle:
            handle.seek(self.log_offset)
            return handle.read().decode(errors="replace")

    def start(self, timeout: float = 60.0) -> Child:
        command = child_command(self.module_args, self.port)
        self.log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        with self.log_path.open("ab") as log_file:
            self.process = subprocess.Popen(
                tied_command(command),
                stdout=log_file,
                stderr=subprocess.STDOUT,
                cwd=REPO_ROOT,
                env=child_environment(self.env),
            )
        self.starts += 1
        wait_for_child(
            self.name,
            command,
            self.process,
            url=self.url,
            health=self.health,
            timeout=timeout,
            log_tail=self.log_of_this_start,
            http_timeout=_HEALTH_TIMEOUT_SECONDS,
        )
        logger.info("%s ready at %s (pid %d)", self.name, self.url, self.pid)
        return self

    def kill_hard(self) -> None:
        """SIGKILL, as a crash would: no shutdown hook runs."""
        if self.alive():
            assert self.process is not None
            self.process.kill()
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is not None:
            stop_process(self.process)

    def rss_kib(self) -> int | None:
        return rss_kib(self.pid) if self.alive() else None


def start_child(
    name: str,
    module_args: Sequence[str],
    *,
    log_dir: Path,
    health: str = "http",
    env: dict[str, str] | None = None,
    port: int | None = None,
) -> Child:
    child = Child(
        name=name,
        module_args=list(module_args),
        port=port or free_port(),
        log_path=log_dir / f"{name}.log",
        health=health,
        env=env or {},
    )
    return child.start()


class Children:
    """Every child a scenario started; `close` stops them all, newest first."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.started: list[Child] = []

    def start(self, name: str, module_args: Sequence[str], **kwargs: object) -> Child:
        child = start_child(name, module_args, log_dir=self.log_dir, **kwargs)  # type: ignore[arg-type]
        self.started.append(child)
        return child

    def close(self) -> None:
        for child in reversed(self.started):
            child.stop()


@contextlib.contextmanager
def children(log_dir: Path) -> Iterator[Children]:
    group = Children(log_dir)
    try:
        yield group
    finally:
        group.close()


@contextlib.contextmanager
def scenario_children(prefix: str, root: Path | None = None) -> Iterator[tuple[Path, Children]]:
    """A scenario's working directory (``root``, else a temporary one) and its children.

    The children are stopped before the temporary directory goes, so none writes into a
    directory being removed.
    """
    with tempfile.TemporaryDirectory(prefix=prefix) as scratch:
        base = Path(root or scratch)
        with children(base) as group:
            yield base, group


def resolver_args(data_dir: Path, database_url: str | None = None) -> list[str]:
    args = ["resolver", "--data", str(data_dir), "--log-level", "warning"]
    if database_url:
        args += ["--database-url", database_url]
    return args


def proxy_args(resolver_url: str, data_dir: Path, *, upstream_timeout: float = 10.0) -> list[str]:
    return [
        "proxy",
        "--resolver-url",
        resolver_url,
        "--data",
        str(data_dir),
        "--upstream-timeout",
        str(upstream_timeout),
        "--log-level",
        "warn",
    ]
