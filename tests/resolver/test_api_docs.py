"""`/docs` works offline and renders: local assets only, and the operations appear in Chromium.

Serving the assets is not enough: Swagger UI 4 loaded fine and then said "Unable to render this
definition" for FastAPI's OpenAPI 3.1. The browser test reads the page as a person would.
"""

from __future__ import annotations

import re

import httpx

from tests.support.chromium import loopback_page, needs_chromium
from tests.support.servers import ServerProcess


def test_docs_page_loads_swagger_from_the_resolver_itself(resolver_server: ServerProcess) -> None:
    with httpx.Client(base_url=resolver_server.url, trust_env=False) as http:
        page = http.get("/docs")
        assert page.status_code == 200
        sources = re.findall(r'(?:src|href)="([^"]+)"', page.text)
        assert sources, page.text
        assert all(source.startswith("/docs/assets/") for source in sources), sources
        for source in sources:
            asset = http.get(source)
            assert asset.status_code == 200 and len(asset.content) > 100, source
        assert "SwaggerUIBundle" in http.get("/docs/assets/swagger-ui-bundle.js").text
        assert http.get("/docs/assets/LICENSE").status_code == 200, "the licence ships alongside"
        assert http.get("/redoc").status_code == 404, "ReDoc would load from a CDN"
        assert http.get("/openapi.json").json()["openapi"].startswith("3.1")


def _operations(spec: dict[str, object]) -> set[tuple[str, str]]:
    paths = spec["paths"]
    assert isinstance(paths, dict)
    verbs = {"get", "put", "post", "delete", "patch", "head", "options"}
    return {(verb.upper(), path) for path, item in paths.items() for verb in item if verb in verbs}


@needs_chromium
def test_docs_renders_every_operation_in_chromium(resolver_server: ServerProcess) -> None:
    spec = httpx.get(f"{resolver_server.url}/openapi.json", trust_env=False).json()
    expected = _operations(spec)
    assert ("POST", "/v1/tapes/{tape}/fork") in expected
    with loopback_page() as page:
        page.goto(f"{resolver_server.url}/docs")
        page.wait_for_selector(".opblock", timeout=60_000)
        assert "Unable to render this definition" not in page.content()
        shown = set()
        for block in page.locator(".opblock-summary").all():
            method = block.locator(".opblock-summary-method").inner_text().strip()
            path = block.locator(".opblock-summary-path").get_attribute("data-path")
            shown.add((method, path))
        foreign, errors = page.foreign_requests, page.console_errors
    assert shown == expected, (expected - shown, shown - expected)
    assert foreign == [], "offline: nothing but the resolver was asked"
    assert errors == []
