"""`python -m resolver --host H --port P --data DIR [--database-url URL]`: run the resolver.

Start-up refuses, with one line naming the fix, the two mistakes that would otherwise be silent
or cryptic: listening beyond loopback without tokens (anyone on the network could rewrite tapes
and record answers) and a store that cannot be written (a 40-line SQLAlchemy traceback).
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import sys
from pathlib import Path

import uvicorn
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

from resolver.app import create_app, uvicorn_protocol
from resolver.capabilities import default_for
from resolver.settings import Settings, load_settings
from store.migrate import SchemaError

# Seconds an idle keep-alive connection stays open; proxy/resolver_client.py closes its idle
# connections after CLIENT_KEEP_ALIVE_SECONDS, well before this.
KEEP_ALIVE_SECONDS = 75


def is_loopback(host: str) -> bool:
    """Whether `host` only accepts connections from this machine (0.0.0.0 and :: do not)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name other than localhost may resolve anywhere
        return False


def refuse_open_bind(host: str, settings: Settings) -> None:
    if is_loopback(host) or (settings.admin_token and settings.proxy_token):
        return
    sys.stderr.write(
        f"refusing to listen on {host} without GROUNDHOG_ADMIN_TOKEN and GROUNDHOG_PROXY_TOKEN: "
        "anyone who can reach this port could rewrite tapes and record answers. Set both tokens, "
        "or use --host 127.0.0.1.\n"
    )
    raise SystemExit(2)


def store_refusal(database_url: str, error: OperationalError) -> str:
    """One line saying why the store cannot be opened and what to do about it."""
    url = make_url(database_url)
    shown = url.render_as_string(hide_password=True)
    if url.get_backend_name() == "sqlite":
        return (
            f"cannot open the store {shown} for writing ({error.orig}): it is read-only or its "
            "directory is not writable; fix its permissions or point --data/--database-url "
            "elsewhere"
        )
    return (
        f"cannot open the store {shown} ({error.orig}): check that the database server is "
        "running and reachable and that the user may create tables, or point --database-url "
        "elsewhere"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m resolver", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8070)
    parser.add_argument("--data", type=Path, default=None, help="directory for the store and CA")
    parser.add_argument(
        "--database-url", default=None, help="sqlite:///… or postgresql+psycopg://…"
    )
    parser.add_argument(
        "--proxy-url", default=None, help="the proxy workers use, announced at GET /v1/info"
    )
    parser.add_argument("--log-level", default="info")
    parser.add_argument(
        "--no-migrate",
        action="store_true",
        help="refuse a store whose schema is behind instead of migrating it (groundhog migrate)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper())
    settings = load_settings(
        data_dir=args.data,
        database_url=args.database_url,
        proxy_url=args.proxy_url,
        migrate_on_start=False if args.no_migrate else None,
    )
    refuse_open_bind(args.host, settings)
    if settings.branch_capabilities is None:
        loopback_only = is_loopback(args.host)
        settings.branch_capabilities = default_for(loopback_only=loopback_only)
    try:
        app = create_app(settings)
    except OperationalError as error:
        sys.stderr.write(store_refusal(settings.database_url, error) + "\n")
        raise SystemExit(2) from None
    except SchemaError as error:
        sys.stderr.write(f"refusing to start: {error}\n")
        raise SystemExit(2) from None
    # One line per resolve is noise and costs the hot path; --log-level debug turns it on, and
    # with it uvicorn's own protocol, whose access log sees every request.
    access_log = args.log_level.lower() == "debug"
    hot_protocol = settings.hot_protocol and not access_log
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        log_level=args.log_level,
        access_log=access_log,
        http=uvicorn_protocol(app) if hot_protocol else "httptools",
        # Longer than the proxy client's idle keep-alive (proxy/resolver_client.py): the client
        # must be the side that closes an idle connection, or it may send a resolve on a socket
        # the server is closing and see ServerDisconnectedError (a spurious 503) under load.
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
    )


if __name__ == "__main__":
    main()
