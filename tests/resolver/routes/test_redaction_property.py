"""Property: a random secret planted in a random place never reaches the store (issue 31).

Through the real resolver's record path (the test plays the proxy; the world echoes the secret
back in its answer's body and a header), a secret under a credential name in the query, a
header, a form, a multipart part or JSON at any depth, or in a secret format in the path, is
found in none of: the SQLite file and its `-wal` and `-shm`, the export, the events, the
exchanges. The audit calls every such tape clean (so the export is not refused).
"""

from __future__ import annotations

import base64
import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from tests.resolver.proxy_double import ProxyDouble, World
from tests.support.planted_secrets import planted, stored_leaks
from tests.support.servers import ServerProcess, running_server

_tapes = itertools.count()


@dataclass
class EchoWorld(World):
    """Answers every live call with the secret echoed (as echo services and error pages do)."""

    echo: str = ""

    def answer(self, branch: str, method: str, host: str, path: str, body: bytes) -> dict[str, Any]:
        payload = json.dumps({"you_sent": self.echo, "path": path}).encode()
        return {
            "status": 200,
            "headers": [["Content-Type", "application/json"], ["X-Echo", self.echo]],
            "body": base64.b64encode(payload).decode(),
        }


@pytest.fixture(scope="module")
def recorder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, Path]]:
    data: Path = tmp_path_factory.mktemp("redaction-property")
    with running_server(["resolver", "--data", str(data)]) as server:
        yield server, data


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(planted())
def test_a_planted_secret_never_reaches_the_store(recorder, plant) -> None:
    server, data = recorder
    place, secret, ask = plant
    world = EchoWorld(echo=secret)
    proxy = ProxyDouble(server.url, world=world)
    tape = f"planted-{next(_tapes)}"
    proxy.open(tape)
    served = proxy.ask(tape, "root", **ask)
    assert served.decision in ("recorded", "write"), (place, served.decision)
    found = stored_leaks(proxy.http, data, tape, secret)
    assert found == [], (place, ask, found)
