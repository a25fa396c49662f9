"""Start the world, the resolver and the proxy for a benchmark run, or use running ones.

The benchmark measures the real system: three separate processes talking TCP. Something has
to start them on free loopback ports, wait until each answers, and end them whatever happens,
or a failed run leaves servers behind and the next run measures the wrong ones. Under
docker-compose the services already run, so the same run can connect to them by URL instead.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import logging
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

from groundhog.launcher import PROXY_VARIABLES, free_port, stop_process
from groundhog.lifetime import tied_command

LOOPBACK = "127.0.0.1"
REPO_ROOT = Path(__file__).resolve().parents[1]
# Groups drop their sandboxes when they end; the cap only bounds concurrent groups' branches.
SANDBOX_CAP = 4096

logger = logging.getLogger(__name__)


class ServiceError(RuntimeError):
    """A service did not start or did not answer in time."""


@dataclass(frozen=True)
class Services:
    """Where the three services answer."""

    world_url: str
    resolver_url: str
    proxy_url: str
    uncooperative_world_url: str | None = None
    shop_world_url: str | None = None
    shop_uncooperative_world_url: str | None = None
    mcp_world_url: str | None = None

    def world(self, mode: str, kind: str = "research") -> str:
        """The world ``kind`` ("research", "shop" or "mcp") serving ``mode``."""
        urls = {
            ("research", "cooperative"): self.world_url,
            ("research", "uncooperative"): self.uncooperative_world_url,
            ("shop", "cooperative"): self.shop_world_url,
            ("shop", "uncooperative"): self.shop_uncooperative_world_url,
            ("mcp", "uncooperative"): self.mcp_world_url,
        }
        url = urls.get((kind, mode))
        if url is None:
            if kind == "mcp":
                raise ServiceError(f"no {mode} MCP world: give --mcp-world-url (uncooperative)")
            shop = "shop-" if kind == "shop" else ""
            uncooperative = "uncooperative-" if mode == "uncooperative" else ""
            flag = f"--{shop}{uncooperative}world-url"
            raise ServiceError(f"no {mode} {kind} world: give {flag}")
        return url


@dataclass
class ChildService:
    """One child process serving on ``port``; its output goes to ``log_path``."""

    name: str
    command: list[str]
    port: int
    process: subprocess.Popen[bytes]
    log_path: Path

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    def log_tail(self, characters: int = 4000) -> str:
        return self.log_path.read_text(errors="replace")[-characters:]

    def stop(self) -> None:
        stop_process(self.process)


def cpu_seconds(pid: int) -> float:
    """The CPU time (user and system, all threads) process `pid` has used so far (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    user, system = int(fields[11]), int(fields[12])  # utime, stime: fields 14 and 15
    return (user + system) / os.sysconf("SC_CLK_TCK")


def wait_until(predicate: Callable[[], bool], *, timeout: float, what: str) -> None:
    """Poll ``predicate`` until true, or raise ServiceError naming ``what`` at the deadline."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        # A short pause between polls of a condition, not a guess at readiness.
        time.sleep(0.05)
    raise ServiceError(f"gave up after {timeout:.0f}s waiting for {what}")


def healthy(url: str, *, timeout: float = 1.0) -> bool:
    """True when ``url``/healthz answers 200 within ``timeout`` seconds."""
    try:
        return httpx.get(f"{url}/healthz", timeout=timeout, trust_env=False).status_code == 200
    except httpx.HTTPError:
        return False


def accepting(url: str) -> bool:
    """True when the host:port of ``url`` accepts a TCP connection."""
    parsed = httpx.URL(url)
    with (
        contextlib.suppress(OSError),
        socket.create_connection((parsed.host, parsed.port or 80), timeout=0.5),
    ):
        return True
    return False


def child_command(module_args: Sequence[str], port: int) -> list[str]:
    """``python -m <module_args> --host 127.0.0.1 --port P`` with this interpreter."""
    return [sys.executable, "-m", *module_args, "--host", LOOPBACK, "--port", str(port)]


def child_environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This environment plus ``extra``, unbuffered, without proxy variables.

    A child that inherited HTTP_PROXY would send its own traffic through whatever proxy the
    caller uses, and measure or test that instead of itself.
    """
    environment = {**os.environ, "PYTHONUNBUFFERED": "1", **(extra or {})}
    for variable in PROXY_VARIABLES:
        environment.pop(variable, None)
    return environment


def wait_for_child(
    name: str,
    command: Sequence[str],
    process: subprocess.Popen[bytes],
    *,
    url: str,
    health: str,
    timeout: float,
    log_tail: Callable[[], str],
    http_timeout: float = 1.0,
) -> None:
    """Poll until the child answers on ``url``; stop it and raise ServiceError if it never does.

    ``health`` is "http" (GET /healthz) or "tcp" (the port accepts connections). A child that
    exits while we wait is reported at once with ``log_tail()``, not after the whole deadline.
    """

    def ready() -> bool:
        if process.poll() is not None:
            raise ServiceError(f"{name} exited early ({' '.join(command)}):\n{log_tail()}")
        return healthy(url, timeout=http_timeout) if health == "http" else accepting(url)

    try:
        wait_until(ready, timeout=timeout, what=f"{name} on port {httpx.URL(url).port}")
    except BaseException:
        stop_process(process)
        raise


def spawn_child(
    name: str,
    module_args: Sequence[str],
    *,
    log_dir: Path,
    env: Mapping[str, str] | None = None,
) -> ChildService:
    """Run ``python -m <module_args> --host 127.0.0.1 --port P`` without waiting for it
    (``env``: variables to set beside this environment's, e.g. a resolver setting)."""
    port = free_port()
    command = child_command(module_args, port)
    log_path = log_dir / f"{name}.log"
    with log_path.open("wb") as log_file:
        process = subprocess.Popen(
            tied_command(command),  # never outlives the benchmark, however it ends
            stdout=log_file,
            stderr=subprocess.STDOUT,
            cwd=REPO_ROOT,
            env=child_environment(dict(env or {})),
        )
    return ChildService(name, command, port, process, log_path)


def await_child(child: ChildService, *, health: str, timeout: float = 60.0) -> ChildService:
    """Poll until ``child`` answers (see wait_for_child); stop it and raise if it never does."""
    wait_for_child(
        child.name,
        child.command,
        child.process,
        url=child.url,
        health=health,
        timeout=timeout,
        log_tail=child.log_tail,
    )
    logger.info("%s ready at %s", child.name, child.url)
    return child


def start_child(
    name: str,
    module_args: Sequence[str],
    *,
    health: str,
    timeout: float = 60.0,
    log_dir: Path,
    env: Mapping[str, str] | None = None,
) -> ChildService:
    """Run ``python -m <module_args> --host 127.0.0.1 --port P`` and wait until it answers.

    ``health`` is "http" (GET /healthz) or "tcp" (the port accepts connections).
    """
    return await_child(
        spawn_child(name, module_args, log_dir=log_dir, env=env), health=health, timeout=timeout
    )


ALL_CELLS: tuple[tuple[str, str], ...] = (
    *itertools.product(("research", "shop"), ("cooperative", "uncooperative")),
    ("mcp", "uncooperative"),
)


@contextlib.contextmanager
def started_services(
    *,
    world_seed: int = 0,
    data_dir: Path | None = None,
    cells: Sequence[tuple[str, str]] = ALL_CELLS,
    timeout: float = 60.0,
) -> Iterator[Services]:
    """Start worldsim, the resolver and the proxy as children; stop them all on exit.

    ``cells`` are the (world, mode) pairs to serve; the cooperative research world always runs
    (the faults row uses it). Every child starts at once and is then awaited: each spends its
    start importing, and a serial start left the cores idle while each one's health was polled.
    """
    wanted = [cell for cell in ALL_CELLS if cell in {*cells, ("research", "cooperative")}]
    with contextlib.ExitStack() as stack:
        if data_dir is None:
            data_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="gh-bench-")))
        data_dir.mkdir(parents=True, exist_ok=True)
        # Each child is stopped by the stack as soon as it is spawned, even if a later one fails.
        worlds = {}
        for kind, mode in wanted:
            arguments = ["worldsim", "--seed", str(world_seed), "--sandbox-cap", str(SANDBOX_CAP)]
            arguments += ["--world", kind]
            arguments += ["--uncooperative"] if mode == "uncooperative" else []
            worlds[kind, mode] = spawn_child(f"worldsim-{kind}-{mode}", arguments, log_dir=data_dir)
            stack.callback(worlds[kind, mode].stop)
        resolver = spawn_child(
            "resolver", ["resolver", "--data", str(data_dir / "resolver")], log_dir=data_dir
        )
        stack.callback(resolver.stop)
        # The proxy asks the resolver nothing until a request arrives, so it starts alongside.
        proxy = spawn_child(
            "proxy",
            ["proxy", "--resolver-url", resolver.url, "--data", str(data_dir / "proxy")],
            log_dir=data_dir,
        )
        stack.callback(proxy.stop)
        for world in worlds.values():
            await_child(world, health="http", timeout=timeout)
        await_child(resolver, health="http", timeout=timeout)
        await_child(proxy, health="tcp", timeout=timeout)

        def url(kind: str, mode: str) -> str | None:
            world = worlds.get((kind, mode))
            return world.url if world else None

        yield Services(
            world_url=worlds["research", "cooperative"].url,
            resolver_url=resolver.url,
            proxy_url=proxy.url,
            uncooperative_world_url=url("research", "uncooperative"),
            shop_world_url=url("shop", "cooperative"),
            shop_uncooperative_world_url=url("shop", "uncooperative"),
            mcp_world_url=url("mcp", "uncooperative"),
        )


@contextlib.contextmanager
def connected_services(
    world_url: str,
    resolver_url: str,
    proxy_url: str,
    *,
    uncooperative_world_url: str | None = None,
    shop_world_url: str | None = None,
    shop_uncooperative_world_url: str | None = None,
    mcp_world_url: str | None = None,
    timeout: float = 30.0,
) -> Iterator[Services]:
    """Use services someone else runs (docker-compose); check each answers first."""
    worlds = (
        world_url,
        uncooperative_world_url,
        shop_world_url,
        shop_uncooperative_world_url,
        mcp_world_url,
    )
    for url in filter(None, worlds):
        wait_until(functools.partial(healthy, url), timeout=timeout, what=f"worldsim at {url}")
    wait_until(lambda: healthy(resolver_url), timeout=timeout, what=f"resolver at {resolver_url}")
    for url in [part.strip() for part in proxy_url.split(",") if part.strip()]:
        wait_until(functools.partial(accepting, url), timeout=timeout, what=f"proxy at {url}")
    yield Services(
        world_url=world_url,
        resolver_url=resolver_url,
        proxy_url=proxy_url,
        uncooperative_world_url=uncooperative_world_url,
        shop_world_url=shop_world_url,
        shop_uncooperative_world_url=shop_uncooperative_world_url,
        mcp_world_url=mcp_world_url,
    )
