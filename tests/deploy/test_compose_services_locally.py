"""docker-compose.yml's default profile, run as local processes: the quick benchmark completes.

There is no Docker engine here, so tests/deploy/compose_local.py turns each service into the
command and environment its container would run (service names become loopback ports, volumes
become folders). This test starts the worlds (the MCP world among them), the resolver and the
proxy exactly so, then runs the bench service's own command against them and checks what it
wrote: every cell, the MCP world's included, ran through the compose services. It fails when the
compose file and the programs drift apart: a flag a program no longer takes, a variable it no
longer reads, a health path that never answers, a volume layout that hides the CA.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

import pytest

from groundhog.lifetime import tied_command
from tests.deploy.compose_local import LocalService, local_services
from tests.support.servers import (
    HANG_GUARD_SECONDS,
    REPO_ROOT,
    ServerProcess,
    free_ports,
    start_server,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(HANG_GUARD_SECONDS)]

# Appended to the bench service's command: they only keep the workload at its smallest (the
# fewest worlds the statistics accept, as --quick has today, and no progress bars), while every
# flag, URL and variable the compose file gives is still parsed and used.
SHRINK_FLAGS = ["--worlds", "8", "--no-progress"]
# What a benchmark.json must hold for the table and figures (bench/assemble.py).
BENCH_SECTIONS = {"meta", "cells", "claims", "speed"}
CELL_SECTIONS = {"reference", "conditions", "dependency_models", "reproducibility"}


def start_service(service: LocalService) -> ServerProcess:
    service.prepare()
    return start_server(
        service.module_args(),
        port=service.port,
        health_path=service.health_path if service.readiness == "http" else None,
        env=service.env,
    )


@pytest.fixture
def services(tmp_path: Path) -> dict[str, LocalService]:
    servers = [
        "worldsim",
        "worldsim-uncooperative",
        "worldsim-shop",
        "worldsim-shop-uncooperative",
        "worldsim-mcp",
        "resolver",
        "proxy",
    ]
    ports = dict(zip(servers, free_ports(len(servers)), strict=True))
    return local_services(volumes_root=tmp_path, ports=ports)


@pytest.fixture
def running(services: dict[str, LocalService]) -> Iterator[dict[str, ServerProcess]]:
    """Every server of the default profile, started as compose starts them, stopped afterwards.

    Compose starts a service once everything it depends on is up, so services with nothing
    between them start together: here in waves, each wave at once, in depends_on order.
    """
    servers = {name: service for name, service in services.items() if service.is_server}
    with ExitStack() as stack:
        started: dict[str, ServerProcess] = {}
        while len(started) < len(servers):
            wave = [
                name
                for name, service in servers.items()
                if name not in started
                and all(dependency in started for dependency in service.depends_on)
            ]
            assert wave, f"depends_on never satisfied: {sorted(set(servers) - set(started))}"
            with ThreadPoolExecutor(max_workers=len(wave)) as pool:
                futures = {name: pool.submit(start_service, servers[name]) for name in wave}
            # Every server that did start is stopped, even when another in its wave failed.
            for name, future in futures.items():
                if future.exception() is None:
                    started[name] = future.result()
                    stack.callback(started[name].stop)
            for future in futures.values():
                if future.exception() is not None:
                    raise future.exception()  # type: ignore[misc]
        yield started


def test_the_default_profile_is_the_four_parts(services: dict[str, LocalService]) -> None:
    assert list(services) == [
        "worldsim",
        "worldsim-uncooperative",
        "worldsim-shop",
        "worldsim-shop-uncooperative",
        "worldsim-mcp",
        "resolver",
        "proxy",
        "bench",
    ]
    bench = services["bench"]
    assert not bench.is_server
    assert "--quick" in bench.arguments


def test_the_bench_service_runs_the_quick_benchmark_through_the_services(
    services: dict[str, LocalService], running: dict[str, ServerProcess]
) -> None:
    bench = services["bench"]
    bench.prepare()
    out = Path(bench.arguments[bench.arguments.index("--out") + 1])
    # The proxy fetches the CA the resolver created in the shared volume.
    assert (services["proxy"].folders["/data/ca"] / "mitmproxy-ca-cert.pem").exists()

    child_env = {**os.environ, "PYTHONUNBUFFERED": "1", **bench.env}
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"):
        child_env.pop(name, None)
    command = [*bench.command_line(), *SHRINK_FLAGS]
    # No wall-clock budget (a loaded machine is slow, not wrong); the job runs in its own
    # process group, killed however the test ends.
    process = subprocess.Popen(
        tied_command(command),
        env=child_env,
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 0, f"{command}\n{stdout}\n{stderr}"

    report = json.loads((out / "benchmark.json").read_text())
    assert set(report) >= BENCH_SECTIONS, sorted(report)
    # Both HTTP worlds in both modes, and the MCP world in its one mode.
    assert set(report["cells"]) == {
        f"{world}/{mode}"
        for world in ("research", "shop")
        for mode in ("uncooperative", "cooperative")
    } | {"mcp/uncooperative"}
    for cell in report["cells"].values():
        assert set(cell) >= CELL_SECTIONS
        assert set(cell["conditions"]) == {"naive", "replay", "groundhog"}
    assert report["meta"]["quick"] is True
    assert (out / "benchmark.md").exists()
    # It used the compose services (all three worlds) instead of starting its own.
    assert report["meta"]["services"] == {
        "world_url": running["worldsim"].url,
        "uncooperative_world_url": running["worldsim-uncooperative"].url,
        "shop_world_url": running["worldsim-shop"].url,
        "shop_uncooperative_world_url": running["worldsim-shop-uncooperative"].url,
        "resolver_url": running["resolver"].url,
        "proxy_url": running["proxy"].url,
        "mcp_world_url": running["worldsim-mcp"].url,
    }
    for name, server in running.items():
        assert server.process.poll() is None, f"{name} exited during the benchmark:\n{server.log()}"
