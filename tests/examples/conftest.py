"""Real resolver, proxy and worldsim processes for running the examples as users would."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.servers import ServerProcess, running_server


@dataclass(frozen=True)
class Stack:
    resolver: ServerProcess
    proxy: ServerProcess
    world: ServerProcess
    data: Path


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    data = tmp_path_factory.mktemp("examples-data")
    with (
        running_server(["resolver", "--data", str(data)]) as resolver,
        running_server(
            ["proxy", "--resolver-url", resolver.url, "--data", str(data)], health_path=None
        ) as proxy,
        running_server(["worldsim", "--seed", "3"]) as world,
    ):
        yield Stack(resolver, proxy, world, data)
