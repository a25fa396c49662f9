"""`groundhog tape rules T --from-openapi` through the real proxy and resolver (issue 56, item 2).

After importing an API's OpenAPI document, its read operations (a GET, and a POST search the
user confirmed) are shared by siblings, its writes stay each sibling's own, and a write still
invalidates the branch's later reads of the API.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
from typer.testing import CliRunner

from groundhog.cli import app
from tests.proxy.clients import proxy_url
from tests.proxy.stack import Stack
from tests.proxy.upstream_server import Upstream


def _spec(upstream: Upstream) -> dict:
    return {
        "openapi": "3.0.3",
        "info": {"title": "items", "version": "1"},
        "servers": [{"url": upstream.url}],
        "paths": {
            "/items": {"get": {"operationId": "listItems"}, "post": {"operationId": "addItem"}},
            "/search": {"post": {"operationId": "searchItems"}},
        },
    }


def test_imported_reads_share_and_writes_do_not(
    stack: Stack, upstream: Upstream, tmp_path: Path
) -> None:
    spec = tmp_path / "openapi.json"
    spec.write_text(json.dumps(_spec(upstream)))
    tape = "openapi-import"
    done = CliRunner().invoke(
        app,
        ["tape", "rules", tape, "--from-openapi", str(spec), "--accept-inferred"],
        env={"GROUNDHOG_RESOLVER_URL": stack.resolver.url, "COLUMNS": "200"},
    )
    assert done.exit_code == 0, done.output
    assert "searchItems" in done.output and "inferred" in done.output
    assert stack.admin("GET", f"/v1/tapes/{tape}").json()["dependency_model"] == "rules"

    branches = stack.fork(tape, 2)

    def call(branch: str, method: str, path: str) -> str:
        with httpx.Client(proxy=proxy_url(stack.proxy.port, tape, branch), trust_env=False) as c:
            answer = c.request(method, f"{upstream.url}{path}", json={"q": "groundhog"})
        assert answer.status_code == 200, answer.text
        return answer.headers["x-groundhog-decision"]

    assert [call(b, "POST", "/search") for b in branches] == ["recorded", "shared"]
    assert [call(b, "GET", "/items") for b in branches] == ["recorded", "shared"]
    assert [call(b, "POST", "/items") for b in branches] == ["write", "write"]
    assert upstream.state.count("/search") == 1
    assert upstream.state.count("/items", method="POST") == 2
    # Each branch wrote to the API: its search is asked of the world again, not the base.
    assert call(branches[0], "POST", "/search") == "refetched"
