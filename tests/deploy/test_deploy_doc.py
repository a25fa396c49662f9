"""docs/deploy.md names only variables, files and ports that the artefacts really have."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.deploy.compose_local import REPO_ROOT
from tests.deploy.conftest import KUBERNETES_DIR

GUIDE = REPO_ROOT / "docs" / "deploy.md"


@pytest.fixture(scope="module")
def guide() -> str:
    return GUIDE.read_text()


def variables_in(text: str) -> set[str]:
    return set(re.findall(r"GROUNDHOG_[A-Z_]+[A-Z]", text))


def test_every_variable_the_guide_names_exists(guide: str) -> None:
    known = variables_in((REPO_ROOT / "docker-compose.yml").read_text())
    known |= variables_in((REPO_ROOT / "Dockerfile").read_text())
    for manifest in KUBERNETES_DIR.glob("*.yaml"):
        known |= variables_in(manifest.read_text())
    # What a worker's environment carries (`groundhog env`, a pinned sidecar's capability).
    known |= variables_in((REPO_ROOT / "groundhog" / "worker_env.py").read_text())
    try:
        from resolver.settings import Settings
    except ImportError:
        pass
    else:
        known |= {f"GROUNDHOG_{name.upper()}" for name in Settings.model_fields}
        # A setting read under other names (a deprecated alias) is known by each of them.
        for field in Settings.model_fields.values():
            choices = getattr(field.validation_alias, "choices", ())
            known |= {choice for choice in choices if isinstance(choice, str)}
    assert sorted(variables_in(guide) - known) == []


def test_every_file_in_the_table_exists(guide: str) -> None:
    table = guide[guide.index("## Files") :]
    paths = re.findall(r"^\| `([^`]+)`(?:, `([^`]+)`)? \|", table, flags=re.M)
    named = [path for pair in paths for path in pair if path]
    assert len(named) >= 5
    assert [path for path in named if not (REPO_ROOT / path).exists()] == []


def test_every_loopback_port_the_guide_names_is_published(
    guide: str, compose: dict[str, Any]
) -> None:
    published = {
        int(entry.split(":")[1])
        for service in compose["services"].values()
        for entry in service.get("ports") or []
    }
    named = {int(port) for port in re.findall(r"127\.0\.0\.1:(\d{4})", guide)}
    assert named and named - published == set()
    in_parentheses = {
        int(port) for port in re.findall(r"\((?:127\.0\.0\.1:)?(80[0-9]{2})\)", guide)
    }
    assert in_parentheses and in_parentheses <= published


def test_the_guide_covers_every_way_to_trust_the_ca(guide: str) -> None:
    section = guide[guide.index("## Trusting the CA") :]
    for needle in (
        "REQUESTS_CA_BUNDLE",
        "httpx",
        "aiohttp",
        "trust_env=True",
        "NODE_EXTRA_CA_CERTS",
        "--cacert",
        "CURL_CA_BUNDLE",
        "SSL_CERT_FILE",
        "Go",
    ):
        assert needle in section, needle
