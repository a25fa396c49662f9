"""`/docs` works offline: the page names only local assets, and those assets are served."""

from __future__ import annotations

import re

import httpx

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
        assert http.get("/redoc").status_code == 404, "ReDoc would load from a CDN"
