"""Fixtures for the viewer: an in-process resolver app with /ui, and a proxy double on it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.resolver.proxy_double import ProxyDouble, World
from tests.resolver.ui.ui_server import app_with_ui
from tests.resolver.ui.workflow import Recorded, record_fork


@pytest.fixture(scope="module")
def ui_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    data: Path = tmp_path_factory.mktemp("ui-data")
    with TestClient(app_with_ui(data_dir=data)) as client:
        yield client


@pytest.fixture(scope="module")
def ui_proxy(ui_client: TestClient) -> ProxyDouble:
    double = ProxyDouble("http://testserver", World())
    double.http.close()
    double.http = ui_client
    return double


@pytest.fixture(scope="module")
def recorded(ui_proxy: ProxyDouble) -> Recorded:
    return record_fork(ui_proxy, "viewer-demo")
