"""docs/recipes.md names the exact release each integration's CI test runs against.

The dev set pins those releases (pyproject.toml); a pin moved without the page (or the page
edited without the pin) would claim a version nothing tested.
"""

from __future__ import annotations

import re
import tomllib

from tests.support.servers import REPO_ROOT

INTEGRATIONS = ("verifiers", "skyrl-gym", "openpipe-art", "openenv-core")


def dev_pins() -> dict[str, str]:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    pins = {}
    for requirement in project["optional-dependencies"]["dev"]:
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)==([^;\s]+)", requirement.strip())
        if match:
            pins[match[1].lower()] = match[2]
    return pins


def test_every_integration_is_pinned_in_the_dev_set_and_named_at_that_version() -> None:
    pins = dev_pins()
    assert set(INTEGRATIONS) <= set(pins), "an integration's CI test runs an unpinned release"
    recipes = (REPO_ROOT / "docs" / "recipes.md").read_text()
    table = [line for line in recipes.splitlines() if line.startswith("| ")]
    for package in INTEGRATIONS:
        named = f"{package} {pins[package]} "
        assert any(named in row for row in table), f"docs/recipes.md's table lacks {named!r}"
