"""With an admin token the viewer is closed: bearer header or the login cookie opens it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.resolver.ui.ui_server import app_with_ui

TOKEN = "viewer-token-123"


@pytest.fixture
def guarded(tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(app_with_ui(data_dir=tmp_path, admin_token=TOKEN)) as client:
        yield client


def test_pages_need_the_token(guarded: TestClient) -> None:
    for path in ("/ui", "/ui/tapes/x", "/ui/tapes/x/timeline"):
        refused = guarded.get(path)
        assert refused.status_code == 401 and 'name="token"' in refused.text
    allowed = guarded.get("/ui", headers={"Authorization": f"Bearer {TOKEN}"})
    assert allowed.status_code == 200 and "<h1>Tapes</h1>" in allowed.text
    assert guarded.get("/ui/style.css").status_code == 200


def test_login_sets_a_strict_httponly_cookie(guarded: TestClient) -> None:
    wrong = guarded.post("/ui/login", data={"token": "nope"}, follow_redirects=False)
    assert wrong.status_code == 401 and "does not match" in wrong.text
    assert "set-cookie" not in wrong.headers
    right = guarded.post("/ui/login", data={"token": TOKEN}, follow_redirects=False)
    assert right.status_code == 303 and right.headers["location"] == "/ui"
    cookie = right.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie and "path=/ui" in cookie
    assert guarded.get("/ui").status_code == 200  # the client kept the cookie
