"""`python -m resolver` start-up refusals: an open bind without tokens, an unwritable store."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlalchemy.exc import OperationalError

from resolver import __main__ as resolver_main
from resolver.__main__ import is_loopback

TOKENS = ("GROUNDHOG_ADMIN_TOKEN", "GROUNDHOG_PROXY_TOKEN")


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.1.2.3", True),
        ("localhost", True),
        ("::1", True),
        ("[::1]", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.10", False),
        ("resolver.internal", False),
    ],
)
def test_only_loopback_addresses_count_as_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Hosts uvicorn was asked to listen on (it is never really started)."""
    hosts: list[str] = []
    monkeypatch.setattr(resolver_main.uvicorn, "run", lambda _app, host, **_: hosts.append(host))
    for name in TOKENS:
        monkeypatch.delenv(name, raising=False)
    return hosts


@pytest.mark.parametrize("tokens", [(), ("GROUNDHOG_ADMIN_TOKEN",), ("GROUNDHOG_PROXY_TOKEN",)])
def test_an_open_bind_without_both_tokens_is_refused(
    tokens: tuple[str, ...],
    served: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name in tokens:
        monkeypatch.setenv(name, "secret")
    with pytest.raises(SystemExit) as exit_info:
        resolver_main.main(["--host", "0.0.0.0", "--data", str(tmp_path)])
    assert exit_info.value.code == 2
    message = capsys.readouterr().err
    assert "0.0.0.0" in message and all(name in message for name in TOKENS)
    assert served == []


def test_an_open_bind_with_both_tokens_and_loopback_without_them_start(
    served: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    resolver_main.main(["--host", "127.0.0.1", "--data", str(tmp_path)])
    for name in TOKENS:
        monkeypatch.setenv(name, "secret")
    resolver_main.main(["--host", "0.0.0.0", "--data", str(tmp_path)])
    assert served == ["127.0.0.1", "0.0.0.0"]


@pytest.mark.parametrize(
    ("database_url", "advice"),
    [
        ("sqlite:////srv/store.sqlite3", "read-only or its directory is not writable"),
        ("postgresql+psycopg://u:pw@db:5432/g", "database server is running and reachable"),
    ],
)
def test_a_store_that_cannot_be_opened_is_refused_in_one_line(
    database_url: str,
    advice: str,
    served: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    orig = sqlite3.OperationalError("unable to open database file")

    def unwritable(_settings: object) -> None:
        raise OperationalError("PRAGMA journal_mode=WAL", {}, orig)

    monkeypatch.setattr(resolver_main, "create_app", unwritable)
    with pytest.raises(SystemExit) as exit_info:
        resolver_main.main(["--database-url", database_url])
    assert exit_info.value.code == 2
    message = capsys.readouterr().err
    assert message.count("\n") == 1 and advice in message
    assert "unable to open database file" in message and "pw" not in message
    assert served == []


@pytest.mark.parametrize(
    ("environment", "arguments", "lane"),
    [
        ({}, [], True),
        ({"GROUNDHOG_HOT_PROTOCOL": "false"}, [], False),
        ({}, ["--log-level", "debug"], False),  # the access log needs uvicorn's own protocol
    ],
)
def test_the_hot_protocol_serves_unless_turned_off_or_the_access_log_is_on(
    environment: dict[str, str],
    arguments: list[str],
    lane: bool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    protocols: list[object] = []
    monkeypatch.setattr(
        resolver_main.uvicorn, "run", lambda _app, http, **_: protocols.append(http)
    )
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    resolver_main.main(["--data", str(tmp_path), *arguments])
    [protocol] = protocols
    if lane:
        assert isinstance(protocol, type) and protocol.__name__ == "HotRoutesProtocol"
    else:
        assert protocol == "httptools"
