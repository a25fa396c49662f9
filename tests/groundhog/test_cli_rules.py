"""groundhog/cli_rules.py: `tape rules T --from-openapi SPEC` reads JSON or YAML, from a path or
an http(s) URL (issue 56: `spec.json|URL`; most published OpenAPI documents are YAML)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from typer.testing import CliRunner

from groundhog.cli import app
from tests.support.threaded_server import ThreadedServer

SPEC_YAML = """\
openapi: 3.0.3
info: {title: items, version: "1"}
servers:
  - url: http://search.stand-in.test
paths:
  /items:
    get: {operationId: listItems}
    post: {operationId: addItem}
  /find:
    post: {operationId: searchItems}
"""


def _rules(arguments: list[str], out: Path) -> list[dict]:
    done = CliRunner().invoke(
        app, ["tape", "rules", "t", *arguments, "--accept-inferred", "--out", str(out)]
    )
    assert done.exit_code == 0, done.output
    config = json.loads(out.read_text())
    assert config["dependency_model"] == "rules"
    return config["rules"]


def _paths(rules: list[dict]) -> set[tuple[str, str]]:
    return {(rule["method"], rule["path"]) for rule in rules}


def test_a_yaml_document_is_read(tmp_path: Path) -> None:
    spec = tmp_path / "openapi.yaml"
    spec.write_text(SPEC_YAML)
    found = _paths(_rules(["--from-openapi", str(spec)], tmp_path / "rules.json"))
    assert {("GET", "/items"), ("POST", "/find")} <= found


@pytest.fixture
def spec_server() -> Iterator[str]:
    """A local HTTP server answering /openapi.yaml and /openapi.json, and 404 elsewhere."""
    bodies = {
        "/openapi.yaml": (SPEC_YAML.encode(), "application/yaml"),
        "/openapi.json": (json.dumps({"openapi": "3.0.3"} | _yaml_as_json()).encode(), "json"),
    }

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body, kind = bodies.get(self.path, (b"not here", "text/plain"))
            self.send_response(200 if self.path in bodies else 404)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with ThreadedServer(server):
        yield f"http://127.0.0.1:{server.server_port}"


def _yaml_as_json() -> dict:
    import yaml

    return yaml.safe_load(SPEC_YAML)


@pytest.mark.parametrize("name", ["openapi.yaml", "openapi.json"])
def test_a_document_at_a_url_is_fetched(spec_server: str, name: str, tmp_path: Path) -> None:
    found = _paths(_rules(["--from-openapi", f"{spec_server}/{name}"], tmp_path / "rules.json"))
    assert {("GET", "/items"), ("POST", "/find")} <= found


def test_a_url_that_fails_and_a_document_that_is_neither_are_refused(
    spec_server: str, tmp_path: Path
) -> None:
    runner = CliRunner()
    missing = runner.invoke(app, ["tape", "rules", "t", "--from-openapi", f"{spec_server}/x"])
    assert missing.exit_code != 0 and "cannot fetch" in missing.output
    garbled = tmp_path / "bad.yaml"
    garbled.write_text("openapi: [unclosed\n")
    refused = runner.invoke(app, ["tape", "rules", "t", "--from-openapi", str(garbled)])
    assert refused.exit_code != 0 and "neither JSON nor YAML" in refused.output
