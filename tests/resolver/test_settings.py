"""Unit tests of settings: environment prefix, overrides and derived paths."""

from __future__ import annotations

from pathlib import Path

import pytest

from resolver.settings import load_settings


def test_defaults_and_derived_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GROUNDHOG_DATABASE_URL", raising=False)
    settings = load_settings(data_dir=Path("/tmp/gh-x"))
    assert settings.database_url == "sqlite:////tmp/gh-x/groundhog.sqlite3"
    assert settings.ca_dir == Path("/tmp/gh-x/ca")
    assert settings.max_body_bytes == 8 * 1024 * 1024 and settings.claim_seconds == 30.0


def test_environment_prefix_and_override_precedence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GROUNDHOG_PROXY_TOKEN", "t")
    monkeypatch.setenv("GROUNDHOG_RESOLVE_WAIT_SECONDS", "5")
    settings = load_settings(resolve_wait_seconds=None, database_url="sqlite:///x.db")
    assert settings.proxy_token == "t" and settings.resolve_wait_seconds == 5.0
    assert settings.database_url == "sqlite:///x.db"
    with pytest.raises(ValueError, match="greater than 0"):
        load_settings(max_body_bytes=0)


def test_fail_closed_settings_and_their_defaults() -> None:
    settings = load_settings(database_url="sqlite:///x.db", max_body_bytes=1000)
    assert settings.disk_reserve_bytes == 2000 and settings.sqlite_synchronous == "NORMAL"
    assert settings.max_tape_config_bytes == 256 * 1024 and settings.resolve_wait_seconds == 20.0
    assert load_settings(disk_reserve_bytes=0).disk_reserve_bytes == 0
    assert load_settings(sqlite_synchronous="FULL").sqlite_synchronous == "FULL"
    with pytest.raises(ValueError, match="NORMAL"):
        load_settings(sqlite_synchronous="OFF")


def test_claim_seconds_by_its_name_and_by_its_deprecated_alias(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv("GROUNDHOG_CLAIM_SECONDS", raising=False)
    monkeypatch.setenv("GROUNDHOG_CLAIM_LEASE_SECONDS", "7.5")
    with caplog.at_level("WARNING", logger="resolver.settings"):
        assert load_settings().claim_seconds == 7.5
    assert "GROUNDHOG_CLAIM_LEASE_SECONDS is deprecated" in caplog.text
    monkeypatch.setenv("GROUNDHOG_CLAIM_SECONDS", "4")  # the new name wins over the old
    assert load_settings().claim_seconds == 4.0
    monkeypatch.delenv("GROUNDHOG_CLAIM_LEASE_SECONDS")
    assert load_settings().claim_seconds == 4.0
    assert load_settings(claim_seconds=2.5).claim_seconds == 2.5  # an override by name
    with pytest.raises(ValueError, match="greater than 0"):
        load_settings(claim_seconds=0)
