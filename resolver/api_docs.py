"""`/docs`: the interactive API reference, served with its own assets so it works offline.

FastAPI's default page loads Swagger UI from a CDN, so on an air-gapped cluster (or a laptop on
a plane) `/docs` is a blank page. The `swagger-ui-bundle` package ships the same files; they are
served from here under `/docs/assets/`.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from swagger_ui_bundle import swagger_ui_path

ASSETS = "/docs/assets"

router = APIRouter(include_in_schema=False)


@router.get("/docs")
def docs() -> HTMLResponse:
    return get_swagger_ui_html(
        openapi_url="/openapi.json",
        title="Groundhog resolver API",
        swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
        swagger_css_url=f"{ASSETS}/swagger-ui.css",
        swagger_favicon_url=f"{ASSETS}/favicon-32x32.png",
    )


def install_api_docs(app: FastAPI) -> None:
    """Serve `/docs` and its assets locally (create the app with `docs_url=None`)."""
    app.mount(ASSETS, StaticFiles(directory=Path(swagger_ui_path)), name="docs-assets")
    app.include_router(router)
