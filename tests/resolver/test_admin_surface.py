"""The admin surface (issue 14, item 4): private files, /metrics behind the token, a signed
expiring viewer session instead of the raw token, throttled logins."""

from __future__ import annotations

import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from resolver.deployment_key import KeyFileError, load_or_create_key
from resolver.ui.access import (
    COOKIE_NAME,
    MAX_FAILED_LOGINS,
    SESSION_SECONDS,
    LoginThrottle,
    session_is_valid,
)
from services.ca import CA_KEY_NAME, ensure_ca
from tests.resolver.ui.ui_server import app_with_ui

TOKEN = "admin-token-for-the-surface"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def guarded(tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(app_with_ui(data_dir=tmp_path / "data", admin_token=TOKEN)) as client:
        yield client


def test_store_key_and_data_directory_are_private(guarded: TestClient, tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert guarded.get("/healthz").status_code == 200
    assert mode(data) == 0o700
    for name in ("groundhog.sqlite3", "groundhog.sqlite3-wal", "redaction.key"):
        assert mode(data / name) == 0o600, name
    assert mode(data / "ca" / CA_KEY_NAME) == 0o600


def test_a_loose_existing_store_is_tightened(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    (data / "groundhog.sqlite3").touch(mode=0o644)
    (data / "groundhog.sqlite3").chmod(0o644)
    with TestClient(app_with_ui(data_dir=data)):
        assert mode(data) == 0o700 and mode(data / "groundhog.sqlite3") == 0o600


def test_ca_key_is_tightened_on_start(tmp_path: Path) -> None:
    ensure_ca(tmp_path)
    (tmp_path / CA_KEY_NAME).chmod(0o644)
    ensure_ca(tmp_path)
    assert mode(tmp_path / CA_KEY_NAME) == 0o600


def test_the_redaction_key_is_made_once_and_kept(tmp_path: Path) -> None:
    first = load_or_create_key(tmp_path / "keys" / "redaction.key")
    assert first == load_or_create_key(tmp_path / "keys" / "redaction.key") and len(first) == 32
    assert mode(tmp_path / "keys") == 0o700


def test_metrics_need_the_admin_token(guarded: TestClient) -> None:
    assert guarded.get("/metrics").status_code == 401
    allowed = guarded.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert allowed.status_code == 200 and "groundhog_decisions" in allowed.text


def test_login_gives_a_signed_expiring_session_not_the_token(guarded: TestClient) -> None:
    right = guarded.post("/ui/login", data={"token": TOKEN}, follow_redirects=False)
    assert right.status_code == 303
    header = right.headers["set-cookie"]
    assert TOKEN not in header
    assert f"Max-Age={SESSION_SECONDS}" in header and "Secure" not in header
    value = right.cookies[COOKIE_NAME]
    assert guarded.get("/ui").status_code == 200
    guarded.cookies.clear()
    expires, nonce, signature = value.split(".")
    forged = f"{int(expires) + 10**6}.{nonce}.{signature}"
    guarded.cookies.set(COOKIE_NAME, forged, path="/ui")
    assert guarded.get("/ui").status_code == 401


def test_sessions_expire(guarded: TestClient) -> None:
    right = guarded.post("/ui/login", data={"token": TOKEN}, follow_redirects=False)
    value = right.cookies[COOKIE_NAME]
    request = type("R", (), {"app": guarded.app})()
    expires = int(value.split(".")[0])
    assert session_is_valid(request, value, now=expires - 1)
    assert not session_is_valid(request, value, now=expires + 1)


def test_session_cookie_is_secure_behind_tls(guarded: TestClient) -> None:
    right = guarded.post(
        "/ui/login",
        data={"token": TOKEN},
        headers={"X-Forwarded-Proto": "https"},
        follow_redirects=False,
    )
    header = right.headers["set-cookie"].lower()
    assert "secure" in header and "httponly" in header and "samesite=strict" in header


def test_failed_logins_are_throttled(guarded: TestClient) -> None:
    for _ in range(MAX_FAILED_LOGINS):
        assert guarded.post("/ui/login", data={"token": "wrong"}).status_code == 401
    throttled = guarded.post("/ui/login", data={"token": TOKEN}, follow_redirects=False)
    assert throttled.status_code == 429 and int(throttled.headers["retry-after"]) > 0
    assert "set-cookie" not in throttled.headers


def test_throttle_window_slides() -> None:
    throttle = LoginThrottle(limit=2, window=10.0)
    throttle.failed("a", now=0.0)
    throttle.failed("a", now=1.0)
    assert throttle.retry_after("a", now=2.0) > 0 and throttle.retry_after("b", now=2.0) == 0
    assert throttle.retry_after("a", now=10.5) == 0


def test_replicas_share_a_key_given_in_the_environment(tmp_path: Path) -> None:
    shared = "ab" * 32
    apps = [app_with_ui(data_dir=tmp_path / name, redaction_key=shared) for name in ("a", "b")]
    keys = {app.state.resolver.redaction_key for app in apps}
    assert keys == {bytes.fromhex(shared)}
    assert not (tmp_path / "a" / "redaction.key").exists()
    with pytest.raises(KeyFileError, match="GROUNDHOG_REDACTION_KEY"):
        app_with_ui(data_dir=tmp_path / "c", redaction_key="change-me")
