"""`python -m tests.resolver.ui.ui_server --host H --port P --data DIR`: a resolver with /ui.

Until `create_app` mounts the viewer itself, the browser tests need a real resolver process
that serves it; this runs the real app with the router added, nothing else changed.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import uvicorn
from fastapi import FastAPI

from resolver.app import create_app
from resolver.settings import load_settings
from resolver.ui import router


def serves_ui(app: FastAPI) -> bool:
    try:
        app.url_path_for("stylesheet")
    except Exception:  # starlette raises NoMatchFound; newer FastAPI may wrap it
        return False
    return True


def app_with_ui(**overrides: object) -> FastAPI:
    app = create_app(load_settings(**overrides))
    if not serves_ui(app):
        app.include_router(router)
    return app


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--data", type=Path, required=True)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    uvicorn.run(
        app_with_ui(data_dir=args.data), host=args.host, port=args.port, log_level="warning"
    )


if __name__ == "__main__":
    main()
