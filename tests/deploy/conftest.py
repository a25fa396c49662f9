"""Fixtures for the deployment artefacts: the parsed Dockerfile, compose file and manifests."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.deploy import compose_local, dockerfile_parser

REPO_ROOT = compose_local.REPO_ROOT
KUBERNETES_DIR = REPO_ROOT / "deploy" / "kubernetes"


@pytest.fixture(scope="session")
def dockerfile() -> dockerfile_parser.Dockerfile:
    return dockerfile_parser.load(REPO_ROOT / "Dockerfile")


@pytest.fixture(scope="session")
def compose() -> dict[str, Any]:
    return compose_local.load_compose()


@pytest.fixture(scope="session")
def kustomization() -> dict[str, Any]:
    return yaml.safe_load((KUBERNETES_DIR / "kustomization.yaml").read_text())


@pytest.fixture(scope="session")
def manifests(kustomization: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Every document of every file the kustomization lists, with the file it came from."""
    documents: list[tuple[str, dict[str, Any]]] = []
    for name in kustomization["resources"]:
        for document in yaml.safe_load_all((KUBERNETES_DIR / name).read_text()):
            if document:
                documents.append((name, document))
    return documents
