"""`/docs`: the interactive API reference, served with its own assets so it works offline.

FastAPI's default page loads Swagger UI from a CDN, so on an air-gapped cluster (or a laptop on
a plane) `/docs` is a blank page. Swagger UI 5 (`swagger-ui-dist` from npm, vendored in
`resolver/docs_assets/` with its licence; SOURCE.md says how to update it) is served from here
under `/docs/assets/`: it reads the OpenAPI 3.1 FastAPI emits, which the 4.x of the
`swagger-ui-bundle` PyPI package cannot ("Unable to render this definition").
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

ASSETS = "/docs/assets"
ASSETS_DIRECTORY = Path(__file__).with_name("docs_assets")

router = APIRouter(include_in_schema=False)


@router.get("/docs")
def docs() -> HTMLResponse:
    return get_swagger_ui_html(
        openapi_url="/openapi.json",
        title="Groundhog resolver API",
        swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
        swagger_css_url=f"{ASSETS}/swagger-ui.css",
        swagger_favicon_url=f"{ASSETS}/favicon-32x32.png",
        # Swagger UI would otherwise send the spec's URL to validator.swagger.io for a badge.
        swagger_ui_parameters={"validatorUrl": None},
    )


def install_api_docs(app: FastAPI) -> None:
    """Serve `/docs` and its assets locally (create the app with `docs_url=None`)."""
    app.mount(ASSETS, StaticFiles(directory=ASSETS_DIRECTORY), name="docs-assets")
    app.include_router(router)
