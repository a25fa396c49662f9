"""Fixtures for the reliability tests: each scenario runs once per module against real processes.

The scenarios start their own upstream, resolver and proxies on loopback and end them by pid;
a module-scoped fixture runs one and the tests of that module each check one promise in its
figures, so a failure names the promise without re-running the scenario.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session", autouse=True)
def _no_ambient_proxy() -> Iterator[None]:
    """A proxy set in the developer's shell must not reroute the scenarios' own clients."""
    names = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY")
    saved = {name: os.environ.pop(name) for name in names if name in os.environ}
    yield
    os.environ.update(saved)
