"""Tokens, redaction, the CA key and constant-time comparison (bench/reliability/security.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench.reliability import security

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def secrets_and_ca(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return security.check_secrets_and_ca(tmp_path_factory.mktemp("secrets"))


def test_resolver_refuses_to_listen_beyond_loopback_without_tokens(tmp_path: Path) -> None:
    figures = security.check_refuses_open_bind(tmp_path)
    assert not figures["listened_without_tokens"], figures
    assert figures["exit_code"] not in (None, 0), figures
    assert figures["message_names_the_fix"], figures


def test_open_bind_check_never_leaves_a_listener(tmp_path: Path) -> None:
    figures = security.check_refuses_open_bind(tmp_path)
    # Whatever the resolver does, the check ends it: either it exited or it was killed.
    assert figures["exit_code"] is not None


def test_secrets_never_reach_the_store_or_logs(secrets_and_ca: dict[str, Any]) -> None:
    figures = secrets_and_ca["secrets"]
    assert figures["world_received_them"], "the secrets must really pass through"
    assert figures["world_sets_cookie"], "the world must really send a cookie"
    # Recorder and sibling alike get the stored form, whose Set-Cookie placeholder is not served.
    assert not figures["recorder_received_set_cookie"], figures
    assert not figures["sibling_received_set_cookie"], figures
    assert figures["store_bytes_searched"] > 0
    assert figures["found_in_store"] == [], figures
    assert figures["found_in_logs"] == [], figures


def test_ca_private_key_is_never_served_or_logged(secrets_and_ca: dict[str, Any]) -> None:
    figures = secrets_and_ca["ca"]
    assert figures["status"] == 200 and figures["serves_certificate"]
    assert figures["private_key_exists_on_disk"], "the check must have a key to leak"
    assert not figures["serves_private_key"] and not figures["private_key_in_logs"]


def test_tokens_are_required_and_separated_by_role(tmp_path: Path) -> None:
    figures = security.check_tokens(tmp_path)
    assert figures["held"], figures


def test_tokens_are_compared_in_constant_time() -> None:
    figures = security.check_constant_time()
    assert figures["guard_uses_compare_digest"]
    assert figures["plain_comparisons"] == []


def test_constant_time_check_finds_a_plain_comparison(tmp_path: Path) -> None:
    for package in security.SOURCE_PACKAGES:
        (tmp_path / package).mkdir()
    (tmp_path / "resolver" / "auth.py").write_text(
        "def ok(token, expected):\n    return token == expected\n"
    )
    (tmp_path / "resolver" / "kinds.py").write_text(
        "def is_token_kind(scope):\n    return scope == 'token'\n"
    )
    figures = security.check_constant_time(tmp_path)
    assert not figures["held"]
    # The literal 'token' names a kind and compares no secret: only the real comparison is found.
    assert figures["plain_comparisons"] == ["resolver/auth.py:2: token == expected"]
