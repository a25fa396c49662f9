"""`python -m proxy`: run the Groundhog proxy from a shell or a test.

Without this entry point tests and containers would need the CLI package to start a proxy.
"""

from __future__ import annotations

import argparse
import logging
import os
import socket
import sys
from collections.abc import Sequence
from typing import Any

from proxy.egress import EgressConfigError, parse_upstream_proxy
from proxy.event_loop import EventLoop, resolved
from proxy.host_map import HostMapError, parse_host_map
from proxy.options import DEFAULT_MAX_BODY_BYTES
from proxy.self_guard import AdminAddressError, parse_admin_address
from proxy.server import CAUnavailable, run


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m proxy", description="Groundhog's recording proxy (mitmproxy + addon)."
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument(
        "--resolver-url",
        default=os.environ.get("GROUNDHOG_RESOLVER_URL", "http://127.0.0.1:8070"),
    )
    parser.add_argument(
        "--data",
        default=os.environ.get("GROUNDHOG_DATA_DIR", ".groundhog"),
        help="deployment directory; the CA is generated once into DATA/ca",
    )
    parser.add_argument(
        "--ca-dir",
        default=os.environ.get("GROUNDHOG_CA_DIR"),
        help="the interception CA's directory, shared with the resolver (default: DATA/ca)",
    )
    parser.add_argument(
        "--tape",
        default=None,
        help="pin the proxy to this tape: requests name none, or this one (others are refused)",
    )
    parser.add_argument(
        "--branch",
        default=None,
        help="pin the proxy to this branch (root with --tape): requests naming another are refused",
    )
    parser.add_argument(
        "--capability",
        default=None,
        help="the pinned branch's capability, presented for its worker (default: "
        "GROUNDHOG_CAPABILITY with --tape); needed where the tape requires capabilities",
    )
    parser.add_argument(
        "--proxy-token",
        default=os.environ.get("GROUNDHOG_PROXY_TOKEN"),
        help="bearer token the resolver requires on /v1/resolve and /v1/record",
    )
    parser.add_argument("--max-body-bytes", type=int, default=DEFAULT_MAX_BODY_BYTES)
    parser.add_argument(
        "--upstream-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="seconds to connect upstream (10) and to wait for the response head (60)",
    )
    parser.add_argument(
        "--upstream-ca",
        action="append",
        default=[],
        metavar="FILE",
        help="also trust this PEM CA for upstream TLS (repeatable; certifi's roots stay "
        "trusted; SSL_CERT_FILE and REQUESTS_CA_BUNDLE are added when set)",
    )
    parser.add_argument(
        "--resolve-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="seconds for the resolver to answer a resolve before the worker gets 503 (5)",
    )
    parser.add_argument(
        "--insecure-upstream",
        "--ssl-insecure",
        dest="ssl_insecure",
        action="store_true",
        help="do not verify upstream certificates at all (logged loudly; prefer --upstream-ca)",
    )
    parser.add_argument(
        "--upstream-proxy",
        default=None,
        metavar="URL",
        help="reach the world through this HTTP(S) proxy, http://[user:pass@]host:port",
    )
    parser.add_argument(
        "--tcp-passthrough-host",
        action="append",
        default=[],
        metavar="HOST",
        help="relay raw (non-HTTP, non-TLS) tunnels to HOST unrecorded while the tape is "
        "online (repeatable); every other raw tunnel is closed",
    )
    parser.add_argument(
        "--capture-dir",
        default=os.environ.get("GROUNDHOG_CAPTURE_DIR"),
        metavar="DIR",
        help="accept captured workers (groundhog run --capture): announce the transparent and "
        "DNS listeners in DIR and read each worker's tape and branch from it",
    )
    parser.add_argument(
        "--transparent-port",
        type=int,
        default=None,
        metavar="PORT",
        help="listen for redirected connections (iptables REDIRECT/DNAT, as a Kubernetes init "
        "container sets up) on --host:PORT; ephemeral with --capture-dir when not given",
    )
    parser.add_argument(
        "--dns-port",
        type=int,
        default=None,
        metavar="PORT",
        help="answer captured workers' DNS on --host:PORT; ephemeral with --capture-dir",
    )
    parser.add_argument(
        "--admin-address",
        action="append",
        default=[],
        metavar="PORT|HOST:PORT",
        help="another Groundhog admin endpoint the proxy must never forward to (repeatable); "
        "the resolver's address and the proxy's own are refused always",
    )
    parser.add_argument(
        "--map-host",
        action="append",
        default=[],
        metavar="HOST=ADDR:PORT",
        help="connect to ADDR:PORT for HOST, as curl's --resolve (repeatable); the Host header, "
        "TLS server name and request key keep HOST",
    )
    parser.add_argument(
        "--set",
        dest="settings",
        action="append",
        default=[],
        metavar="OPTION=VALUE",
        help="set any mitmproxy or groundhog_* option, as mitmdump's --set does "
        "(e.g. --set mode=upstream:http://egress:3128, --set groundhog_upstream_deadline=300)",
    )
    parser.add_argument(
        "--loop",
        default=os.environ.get("GROUNDHOG_PROXY_LOOP", EventLoop.AUTO.value),
        choices=[loop.value for loop in EventLoop],
        help="event loop: uvloop where installed (auto, the default) or asyncio's own",
    )
    parser.add_argument("--log-level", default="info", choices=["error", "warn", "info", "debug"])
    return parser


def capture_modes(args: argparse.Namespace) -> list[str]:
    """mitmproxy modes for the transparent and DNS listeners the flags ask for."""
    transparent, dns = args.transparent_port, args.dns_port
    if args.capture_dir:
        transparent = 0 if transparent is None else transparent
        # mitmproxy refuses two modes at one host:port spelling, port 0 included.
        dns = free_udp_and_tcp_port(args.host) if dns is None else dns
    modes = []
    if transparent is not None:
        modes.append(f"transparent@{args.host}:{transparent}")
    if dns is not None:
        modes.append(f"dns@{args.host}:{dns}")
    return modes


def free_udp_and_tcp_port(host: str) -> int:
    """A port free for both UDP and TCP on `host` now (DNS mode listens on both)."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
            udp.bind((host, 0))
            port = udp.getsockname()[1]
            with socket.socket() as tcp:
                try:
                    tcp.bind((host, port))
                except OSError:
                    continue
                return int(port)


def main(argv: Sequence[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.upstream_timeout is not None and args.upstream_timeout <= 0:
        parser.error(
            f"--upstream-timeout must be a positive number of seconds, not {args.upstream_timeout}"
        )
    if args.resolve_timeout is not None and args.resolve_timeout <= 0:
        parser.error(f"--resolve-timeout must be positive, not {args.resolve_timeout}")
    try:
        resolved(args.loop)  # GROUNDHOG_PROXY_LOOP is not checked against the choices
    except ValueError as error:
        parser.error(f"--loop (or GROUNDHOG_PROXY_LOOP): {error}")
    # mitmproxy's own terminal log prints our records; one line per connection is noise.
    logging.getLogger("mitmproxy.proxy.server").setLevel(logging.WARNING)
    if args.upstream_proxy:
        try:
            parse_upstream_proxy(args.upstream_proxy)
        except EgressConfigError as error:
            parser.error(str(error))
    for entry in args.admin_address:
        try:
            parse_admin_address(entry)
        except AdminAddressError as error:
            parser.error(f"--admin-address: {error}")
    try:
        parse_host_map(args.map_host)
    except HostMapError as error:
        parser.error(str(error))
    if args.capability and not args.tape:
        parser.error("--capability is the pinned branch's: give --tape (and --branch) with it")
    branch = args.branch or ("root" if args.tape else None)
    extra_options: dict[str, Any] = {"termlog_verbosity": args.log_level.lower()}
    capability = args.capability or (os.environ.get("GROUNDHOG_CAPABILITY") if args.tape else None)
    if capability:
        extra_options["groundhog_capability"] = capability
    if args.admin_address:
        extra_options["groundhog_admin_addresses"] = list(args.admin_address)
    if args.map_host:
        extra_options["groundhog_map_host"] = list(args.map_host)
    if args.upstream_timeout is not None:
        extra_options["groundhog_upstream_connect_timeout"] = str(args.upstream_timeout)
        extra_options["groundhog_upstream_read_timeout"] = str(args.upstream_timeout)
    if args.resolve_timeout is not None:
        extra_options["groundhog_resolve_timeout"] = str(args.resolve_timeout)
    if args.capture_dir:
        extra_options["groundhog_capture_dir"] = str(args.capture_dir)
    try:
        run(
            args.host,
            args.port,
            args.resolver_url,
            args.data,
            ca_dir=args.ca_dir,
            tape=args.tape,
            branch=branch,
            proxy_token=args.proxy_token,
            max_body_bytes=args.max_body_bytes,
            ssl_insecure=args.ssl_insecure,
            extra_options=extra_options,
            settings=args.settings,
            upstream_ca_files=args.upstream_ca,
            upstream_proxy=args.upstream_proxy,
            tcp_passthrough_hosts=args.tcp_passthrough_host,
            loop=args.loop,
            capture_modes=capture_modes(args),
        )
    except (CAUnavailable, EgressConfigError) as error:
        sys.stderr.write(f"{error}\n")
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
