"""Real servers for the groundhog package's tests: one resolver, one proxy, two upstreams.

Started once per session (each takes a second or two) and shared; every test uses its own
tape name, so tests never see each other's recordings.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from groundhog.client import Groundhog
from tests.groundhog.upstream import Upstream, serving
from tests.support.servers import ServerProcess, running_server


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("groundhog-data")


@pytest.fixture(scope="session")
def resolver(data_dir: Path) -> Iterator[ServerProcess]:
    with running_server(["resolver", "--data", str(data_dir)]) as server:
        yield server


@pytest.fixture(scope="session")
def proxy(resolver: ServerProcess, data_dir: Path) -> Iterator[ServerProcess]:
    args = ["proxy", "--resolver-url", resolver.url, "--data", str(data_dir), "--ssl-insecure"]
    with running_server(args, health_path=None) as server:
        yield server


@pytest.fixture(scope="session")
def http_upstream() -> Iterator[Upstream]:
    with serving() as upstream:
        yield upstream


@pytest.fixture(scope="session")
def https_upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Upstream]:
    with serving(tmp_path_factory.mktemp("upstream-tls")) as upstream:
        yield upstream


@pytest.fixture
def isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No inherited Groundhog or proxy settings; CA downloads land in a temporary cache."""
    for name in (
        "GROUNDHOG_RESOLVER_URL",
        "GROUNDHOG_ADMIN_TOKEN",
        "GROUNDHOG_PROXY_URL",
        "GROUNDHOG_CA_FILE",
        "GROUNDHOG_NO_PROXY",
        "GROUNDHOG_RECORD_URLS",
        "OPENAI_BASE_URL",
        "GROUNDHOG_WORLD_SEED",
        "GROUNDHOG_BRANCH",
        "GROUNDHOG_SHIM_COUNTERS",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "http_proxy",
        "https_proxy",
        "NO_PROXY",
        "no_proxy",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path


@pytest.fixture
def gh(resolver: ServerProcess, isolated_env: Path) -> Iterator[Groundhog]:
    with Groundhog(resolver.url, proxy_url="http://127.0.0.1:9") as client:
        yield client


@pytest.fixture
def gh_proxied(
    resolver: ServerProcess, proxy: ServerProcess, isolated_env: Path
) -> Iterator[Groundhog]:
    with Groundhog(resolver.url, proxy_url=proxy.url) as client:
        yield client


@pytest.fixture
def tape_name(request: pytest.FixtureRequest) -> str:
    base = request.node.name.replace("[", "-").replace("]", "")[:60]
    return f"{base}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def export_route(resolver: ServerProcess) -> None:
    """Skip, visibly, while the resolver's OpenAPI lists no export route."""
    paths = httpx.get(f"{resolver.url}/openapi.json", trust_env=False).json().get("paths", {})
    if not any(path.endswith("/export") for path in paths):
        pytest.skip("the resolver has no GET /v1/tapes/{tape}/export route yet")
