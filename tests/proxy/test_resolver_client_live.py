"""proxy/resolver_client.py against a real resolver: a frozen resolver is a quick 503, and a
slow single-flight fetch that renews its lease is made once and shared byte for byte.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bench.reliability.single_flight import run_slow_group
from proxy.resolver_client import ResolverClient, ResolverUnavailable
from tests.proxy.stack import running_stack
from tests.proxy.upstream_server import Upstream
from tests.support.servers import ServerProcess, running_server

SLOW_SECONDS = 4.0


@pytest.fixture(scope="module")
def one_second_lease(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    env = {"GROUNDHOG_CLAIM_SECONDS": "1", "GROUNDHOG_RESOLVE_WAIT_SECONDS": "3"}
    data = tmp_path_factory.mktemp("lease-resolver")
    with running_server(["resolver", "--data", str(data)], env=env) as server:
        yield server


def _frozen(server: ServerProcess):
    """SIGSTOP the resolver for the block (it holds its sockets open but answers nothing)."""
    os.kill(server.process.pid, signal.SIGSTOP)
    return _Thaw(server)


class _Thaw:
    def __init__(self, server: ServerProcess) -> None:
        self.server = server

    def __enter__(self) -> None:
        return None

    def __exit__(self, *_exc: object) -> None:
        os.kill(self.server.process.pid, signal.SIGCONT)


def test_a_frozen_resolver_gives_the_worker_a_503_within_the_resolve_timeout(
    tmp_path: Path, upstream: Upstream
) -> None:
    with running_stack(tmp_path, "--resolve-timeout", "1") as stack:
        tape = stack.open_tape()
        with _frozen(stack.resolver):
            reply = httpx.get(
                upstream.url + "/frozen",
                proxy=stack.proxy.url,
                headers={"X-Groundhog-Tape": tape, "X-Groundhog-Branch": "root"},
                timeout=60,  # generous: the 90 s hang of issue 12 would still fail it
                trust_env=False,
            )
        assert reply.status_code == 503
        assert reply.json()["type"].endswith("/resolver-unavailable")
        assert reply.elapsed.total_seconds() < 30
        assert upstream.state.count("/frozen") == 0


def test_the_client_times_a_frozen_resolver_out_as_unavailable(
    one_second_lease: ServerProcess,
) -> None:
    client = ResolverClient(one_second_lease.url, resolve_timeout=0.5)

    async def ask() -> None:
        try:
            await client.resolve(
                {"tape": "t", "branch": "root", "method": "GET", "host": "h", "port": 80}
            )
        finally:
            await client.close()

    with _frozen(one_second_lease), pytest.raises(ResolverUnavailable, match="Timeout"):
        asyncio.run(ask())


def test_a_slow_fetch_that_renews_is_made_once_and_every_asker_gets_the_stored_bytes(
    one_second_lease: ServerProcess,
) -> None:
    figures = run_slow_group(one_second_lease.url, "slow-renewed", renew=True)
    assert figures["world_calls"] == 1, figures
    assert figures["decisions"] == ["recorded"] + ["shared"] * 3, figures
    assert figures["distinct_bodies"] == 1 and not figures["set_cookie_served"], figures


@pytest.mark.slow
def test_without_renewals_the_same_slow_fetch_is_taken_over(
    one_second_lease: ServerProcess,
) -> None:
    """The control: the check above can fail — a holder that stops renewing loses its claim."""
    figures = run_slow_group(one_second_lease.url, "slow-unrenewed", renew=False)
    assert figures["world_calls"] >= 2, figures
    # Even then, first recording wins: every asker is served the stored bytes.
    assert figures["distinct_bodies"] == 1, figures
