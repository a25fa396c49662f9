"""Property, through the real proxy: a random secret planted in a random place never reaches
the store (issue 31, item 6, the full-proxy subset of tests/resolver/routes/
test_redaction_property.py).

A real client sends each planted request through the real proxy (mitmproxy and the addon) to a
real upstream that echoes everything it received (path, headers, body) back in its answer; the
SQLite file, `-wal`, `-shm`, the export, the events and the exchanges hold the secret nowhere.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings

from tests.proxy.clients import proxy_url
from tests.proxy.stack import Stack, running_stack
from tests.proxy.upstream_server import Upstream
from tests.support.planted_secrets import planted, stored_leaks

_tapes = itertools.count()


@pytest.fixture(scope="module")
def stack_and_world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Stack, Upstream]]:
    data: Path = tmp_path_factory.mktemp("redaction-property-proxy")
    with Upstream(name="echo") as upstream, running_stack(data) as stack:
        yield stack, upstream


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(planted())
def test_a_secret_planted_through_the_proxy_never_reaches_the_store(stack_and_world, plant) -> None:
    stack, upstream = stack_and_world
    place, secret, ask = plant
    tape = stack.open_tape(name=f"proxy-planted-{next(_tapes)}")
    with httpx.Client(
        proxy=proxy_url(stack.proxy.port, tape, "root"), timeout=30, trust_env=False
    ) as client:
        answer = client.request(
            ask["method"],
            f"{upstream.url}{ask['path']}",
            params=[tuple(pair) for pair in ask.get("query", [])],
            headers=[tuple(pair) for pair in ask.get("headers", [])],
            content=ask.get("body"),
        )
    assert answer.status_code == 200, answer.text
    assert answer.headers["x-groundhog-decision"] in ("recorded", "write"), place
    with httpx.Client(base_url=stack.resolver.url, timeout=30, trust_env=False) as admin:
        found = stored_leaks(admin, stack.data_dir, tape, secret)
    assert found == [], (place, ask, found)
