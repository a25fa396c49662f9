"""`python -m resolver --host H --port P --data DIR [--database-url URL]`: run the resolver."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import uvicorn

from resolver.app import create_app
from resolver.settings import load_settings


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m resolver", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8070)
    parser.add_argument("--data", type=Path, default=None, help="directory for the store and CA")
    parser.add_argument(
        "--database-url", default=None, help="sqlite:///… or postgresql+psycopg://…"
    )
    parser.add_argument("--log-level", default="info")
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper())
    settings = load_settings(data_dir=args.data, database_url=args.database_url)
    uvicorn.run(
        create_app(settings),
        host=args.host,
        port=args.port,
        log_level=args.log_level,
        # One line per resolve is noise and costs the hot path; --log-level debug turns it on.
        access_log=args.log_level.lower() == "debug",
    )


if __name__ == "__main__":
    main()
