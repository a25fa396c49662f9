"""A worker cannot reach Groundhog itself through the proxy (issue 31, item 4).

With no tokens set (the default `make up`), the resolver's admin routes answer whoever reaches
them. Through the real proxy and resolver, a worker's `POST /v1/tapes/victim/unseal` and
`DELETE /v1/tapes/victim` sent to the resolver's address (by IP, by a name that resolves to it,
over a CONNECT tunnel), a request for the proxy's own address and one for an admin port the
deployment names are all refused with a problem; the victim stays sealed and present, and
nothing lands on the worker's tape. A world on loopback at another port is still recorded:
only Groundhog's own addresses are refused, not loopback in general.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.proxy.clients import proxy_url
from tests.proxy.stack import Stack, running_stack
from tests.proxy.upstream_server import Upstream


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Stack, Upstream, Upstream]]:
    data: Path = tmp_path_factory.mktemp("self-guard")
    with (
        Upstream(name="world") as world,
        Upstream(name="admin") as admin_port,
        running_stack(data, "--admin-address", str(admin_port.port)) as stack,
    ):
        yield stack, world, admin_port


def _refused(answer: httpx.Response, what: str) -> None:
    assert answer.status_code == 403, answer.text
    assert answer.headers["x-groundhog-decision"] == "refused"
    assert answer.headers["content-type"].startswith("application/problem+json")
    problem = answer.json()
    assert problem["type"].endswith("forbidden-target")
    assert what in problem["detail"] and "never forwards to Groundhog itself" in problem["detail"]


def test_a_worker_cannot_unseal_or_delete_a_tape_through_the_proxy(guarded) -> None:
    stack, _world, _admin = guarded
    victim = stack.open_tape()
    stack.seal(victim)
    worker = stack.open_tape()
    resolver = stack.resolver.port
    with httpx.Client(
        proxy=proxy_url(stack.proxy.port, worker, "root"), timeout=30, trust_env=False
    ) as client:
        for host in ("127.0.0.1", "localhost"):
            base = f"http://{host}:{resolver}/v1/tapes/{victim}"
            _refused(client.post(f"{base}/unseal"), "the resolver")
            _refused(client.delete(base), "the resolver")
        _refused(client.get(f"http://localhost:{resolver}/v1/tapes"), "resolves to it")
    with (
        httpx.Client(
            proxy=proxy_url(stack.proxy.port, worker, "root"),
            timeout=30,
            trust_env=False,
        ) as tunnelled,
        pytest.raises(httpx.ProxyError, match="403"),
    ):
        tunnelled.post(f"https://127.0.0.1:{resolver}/v1/tapes/{victim}/unseal")
    tape = stack.admin("GET", f"/v1/tapes/{victim}").json()
    assert tape["online"] is False  # still sealed, still there
    events = stack.admin("GET", f"/v1/tapes/{worker}/events", params={"branch": "root"}).json()
    assert events["events"] == []
    assert stack.admin("GET", f"/v1/tapes/{worker}").json()["exchanges"] == 0


def test_the_proxys_own_address_and_named_admin_ports_are_refused(guarded) -> None:
    stack, world, admin_port = guarded
    worker = stack.open_tape()
    with httpx.Client(
        proxy=proxy_url(stack.proxy.port, worker, "root"), timeout=30, trust_env=False
    ) as client:
        _refused(client.get(f"http://127.0.0.1:{stack.proxy.port}/"), "listen address")
        _refused(client.get(f"http://127.0.0.1:{admin_port.port}/x"), "an admin address")
        # Loopback at any other port is a world like any other.
        recorded = client.get(f"{world.url}/page")
        assert recorded.status_code == 200
        assert recorded.headers["x-groundhog-decision"] == "recorded"
    assert admin_port.state.count() == 0
    assert world.state.count("/page") == 1
