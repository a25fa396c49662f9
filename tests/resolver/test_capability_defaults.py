"""`python -m resolver` picks the deployment's `branch_capabilities` from where it listens."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from resolver import __main__ as resolver_main
from resolver.capabilities import BranchCapabilities

TOKENS = ("GROUNDHOG_ADMIN_TOKEN", "GROUNDHOG_PROXY_TOKEN")


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The apps uvicorn was asked to serve (it is never really started)."""
    apps: list[Any] = []
    monkeypatch.setattr(resolver_main.uvicorn, "run", lambda app, **_: apps.append(app))
    for name in TOKENS:
        monkeypatch.setenv(name, "secret")
    monkeypatch.delenv("GROUNDHOG_BRANCH_CAPABILITIES", raising=False)
    return apps


@pytest.mark.parametrize(
    ("host", "environment", "expected"),
    [
        ("127.0.0.1", None, BranchCapabilities.OPTIONAL),
        ("0.0.0.0", None, BranchCapabilities.REQUIRED),
        ("0.0.0.0", "optional", BranchCapabilities.OPTIONAL),
        ("127.0.0.1", "required", BranchCapabilities.REQUIRED),
    ],
)
def test_required_by_default_beyond_loopback_unless_the_deployment_says(
    host: str,
    environment: str | None,
    expected: BranchCapabilities,
    started: list[Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if environment is not None:
        monkeypatch.setenv("GROUNDHOG_BRANCH_CAPABILITIES", environment)
    resolver_main.main(["--host", host, "--data", str(tmp_path)])
    (app,) = started
    assert app.state.resolver.capabilities.default is expected


def test_a_deployment_value_that_is_no_policy_is_refused_at_start(
    started: list[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GROUNDHOG_BRANCH_CAPABILITIES", "sometimes")
    with pytest.raises(ValueError, match="'required'"):
        resolver_main.main(["--host", "127.0.0.1", "--data", str(tmp_path)])
    assert started == []
