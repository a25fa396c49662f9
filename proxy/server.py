"""Start mitmproxy with the Groundhog addon, configured so nothing goes live silently.

The CLI (`groundhog proxy`, `groundhog up`) and `python -m proxy` both call `run`. The
options set here are part of the contract: `connection_strategy=lazy` and
`upstream_cert=false` mean a tape hit opens no upstream connection at all (not even a TLS
peek for the certificate), and the CA lives in `<data>/ca` (or `--ca-dir`), generated once per
deployment by `services.ca.ensure_ca` — the same function the resolver uses, so a proxy and a
resolver starting together can never create two different CAs. Without this module each caller
would assemble those options by hand.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mitmproxy import master as mitm_master
from mitmproxy import options as mitm_options
from mitmproxy.addons import (
    block,
    core,
    disable_h2c,
    errorcheck,
    next_layer,
    proxyserver,
    tlsconfig,
)

from proxy.addon import GroundhogAddon
from proxy.egress import INSECURE_WARNING, EgressAuth, parse_upstream_proxy, trust_bundle
from proxy.errors import ProxyError
from proxy.event_loop import EventLoop, loop_factory
from proxy.h2c import PriorKnowledgeH2
from proxy.header_deadline import HeaderDeadline
from proxy.options import DEFAULT_MAX_BODY_BYTES
from proxy.startup_checks import warn_if_resolver_dead
from proxy.tunnels import Tunnels
from services.ca import ensure_ca

log = logging.getLogger(__name__)

CA_CERT_FILENAME = "mitmproxy-ca-cert.pem"


class CAUnavailable(ProxyError, RuntimeError):
    """The CA directory has no CA and none can be created there."""


@dataclass
class ProxyConfig:
    host: str = "127.0.0.1"
    port: int = 8080
    resolver_url: str = "http://127.0.0.1:8070"
    data_dir: Path = Path(".groundhog")
    tape: str | None = None
    branch: str | None = None
    proxy_token: str | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    ssl_insecure: bool = False
    extra_options: dict[str, Any] = field(default_factory=dict)
    ca_directory: Path | None = None
    settings: list[str] = field(default_factory=list)  # "option=value", as mitmdump's --set
    upstream_ca_files: tuple[Path, ...] = ()
    upstream_proxy: str | None = None
    tcp_passthrough_hosts: tuple[str, ...] = ()
    # Extra listeners for captured workers, e.g. "transparent@127.0.0.1:0" (proxy/capture.py).
    capture_modes: tuple[str, ...] = ()

    @property
    def ca_dir(self) -> Path:
        """`ca_directory` when given (the resolver's GROUNDHOG_CA_DIR), else `<data>/ca`."""
        return Path(self.ca_directory or Path(self.data_dir) / "ca")


def ca_cert_path(data_dir: Path | str, ca_dir: Path | str | None = None) -> Path:
    """Where the deployment's CA certificate (what workers must trust) is written."""
    return Path(ca_dir or Path(data_dir) / "ca") / CA_CERT_FILENAME


def mitmproxy_options(config: ProxyConfig) -> dict[str, Any]:
    """mitmproxy's own options for Groundhog (the addon's options are set separately)."""
    return {
        "listen_host": config.host,
        "listen_port": config.port,
        "confdir": str(config.ca_dir),
        "connection_strategy": "lazy",
        "upstream_cert": False,
        "ssl_insecure": config.ssl_insecure,
        "http2": True,
        **config.extra_options,
    }


def groundhog_options(config: ProxyConfig) -> dict[str, Any]:
    return {
        "groundhog_resolver_url": config.resolver_url,
        "groundhog_tape": config.tape,
        "groundhog_branch": config.branch,
        "groundhog_proxy_token": config.proxy_token,
        "groundhog_max_body_bytes": config.max_body_bytes,
        "groundhog_tcp_passthrough_hosts": list(config.tcp_passthrough_hosts),
    }


def lease_dir(config: ProxyConfig) -> str:
    """Where `python -m proxy` keeps its branch leases' holder id and log."""
    return str(Path(config.data_dir) / "leases")


def apply_settings(options: mitm_options.Options, settings: list[str]) -> None:
    """Apply `option=value` specs with mitmdump's own --set parser (durations are text too)."""
    if settings:
        options.set(*settings)


def egress_options(config: ProxyConfig) -> dict[str, Any]:
    """mitmproxy's options for reaching the world: upstream trust and an egress proxy.

    Reads the CA files (and SSL_CERT_FILE / REQUESTS_CA_BUNDLE) and writes their bundle under
    the data directory; raises `EgressConfigError` naming a file or URL it cannot use.
    """
    options: dict[str, Any] = {}
    bundle = trust_bundle(Path(config.data_dir) / "upstream-trust", config.upstream_ca_files)
    if bundle is not None:
        options["ssl_verify_upstream_trusted_ca"] = str(bundle)
    if config.upstream_proxy:
        upstream = parse_upstream_proxy(config.upstream_proxy)
        options["mode"] = [upstream.mode]
        options["upstream_auth"] = upstream.auth
    return options


def build_master() -> mitm_master.Master:
    """mitmproxy with only the addons a recording proxy needs, plus Groundhog.

    mitmdump's default set (about thirty addons: replay, map-local, cookies, HAR export…) is
    consulted for every event of every flow; measured, that dispatch is a large part of
    mitmproxy's own per-request cost. Kept: the proxy core, TLS interception, protocol
    detection, `block_global` (refuse clients from public addresses), h2c refusal, and the
    start-up error check (exit when the port is taken), and
    credentials for an egress proxy (`--upstream-proxy`). Must be called inside a running loop.
    """
    master = mitm_master.Master(mitm_options.Options(), with_termlog=True)
    groundhog = GroundhogAddon()
    master.addons.add(
        core.Core(),
        block.Block(),
        disable_h2c.DisableH2C(),
        proxyserver.Proxyserver(),
        next_layer.NextLayer(),
        tlsconfig.TlsConfig(),
        errorcheck.ErrorCheck(),
        groundhog,
        HeaderDeadline(),  # after Groundhog: it reads the options Groundhog declares
        EgressAuth(),  # after Groundhog: it must not overwrite the worker's credentials
        Tunnels(groundhog.capture),  # after NextLayer: it vets the layer NextLayer chose
        PriorKnowledgeH2(),  # after NextLayer: h2c with prior knowledge speaks HTTP/2
    )
    return master


async def serve(config: ProxyConfig, on_ready: Callable[[], None] | None = None) -> None:
    """Run the proxy in the current event loop until it is shut down (SIGINT/SIGTERM)."""
    try:
        # Before mitmproxy starts: its CertStore would otherwise create a CA of its own.
        await asyncio.to_thread(ensure_ca, config.ca_dir)
    except Exception as error:  # mitmproxy and the OS raise assorted errors here
        raise CAUnavailable(
            f"no CA in {str(config.ca_dir)!r} and none can be created there ({error}); "
            "point --ca-dir (or GROUNDHOG_CA_DIR) at the resolver's CA directory"
        ) from error
    egress = await asyncio.to_thread(egress_options, config)
    if config.ssl_insecure:
        log.warning(INSECURE_WARNING)
    master = build_master()
    master.options.update(**mitmproxy_options(config), **egress, **groundhog_options(config))
    apply_settings(master.options, config.settings)
    # The lease dir last: a lease book is made (its holder id written) the moment leases are on
    # with a directory, so `--set groundhog_branch_leases=false` must land before it.
    if master.options.groundhog_lease_dir is None:
        master.options.update(groundhog_lease_dir=lease_dir(config))
    if config.capture_modes:
        master.options.mode = [*master.options.mode, *config.capture_modes]

    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        # Off the main thread (an embedding caller) signals stay with the caller.
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signum, master.shutdown)

    async def announce_ready() -> None:
        while not await _accepts(config.host, config.port):
            await asyncio.sleep(0.02)
        log.info(
            "groundhog proxy ready on %s:%d (resolver %s, CA %s, event loop %s)",
            config.host,
            config.port,
            config.resolver_url,
            ca_cert_path(config.data_dir, config.ca_dir),
            type(asyncio.get_running_loop()).__module__.partition(".")[0],
        )
        if on_ready is not None:
            on_ready()
        await asyncio.to_thread(warn_if_resolver_dead, config.resolver_url)

    ready_task = asyncio.create_task(announce_ready())
    try:
        await master.run()
    finally:
        ready_task.cancel()


def run(
    host: str,
    port: int,
    resolver_url: str,
    data_dir: Path | str,
    *,
    ca_dir: Path | str | None = None,
    tape: str | None = None,
    branch: str | None = None,
    proxy_token: str | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    ssl_insecure: bool = False,
    on_ready: Callable[[], None] | None = None,
    extra_options: dict[str, Any] | None = None,
    settings: list[str] | None = None,
    upstream_ca_files: Sequence[Path | str] = (),
    upstream_proxy: str | None = None,
    tcp_passthrough_hosts: Sequence[str] = (),
    loop: EventLoop | str = EventLoop.AUTO,
    capture_modes: Sequence[str] = (),
) -> None:
    """Block running the proxy; `on_ready` is called once its port accepts connections.

    `loop`: the event loop it runs on (proxy/event_loop.py)."""
    config = ProxyConfig(
        host=host,
        port=port,
        resolver_url=resolver_url,
        data_dir=Path(data_dir),
        ca_directory=Path(ca_dir) if ca_dir else None,
        tape=tape,
        branch=branch,
        proxy_token=proxy_token,
        max_body_bytes=max_body_bytes,
        ssl_insecure=ssl_insecure,
        extra_options=extra_options or {},
        settings=list(settings or []),
        upstream_ca_files=tuple(Path(path) for path in upstream_ca_files),
        upstream_proxy=upstream_proxy,
        tcp_passthrough_hosts=tuple(tcp_passthrough_hosts),
        capture_modes=tuple(capture_modes),
    )
    asyncio.run(serve(config, on_ready), loop_factory=loop_factory(loop))


async def _accepts(host: str, port: int) -> bool:
    try:
        _, writer = await asyncio.open_connection(host, port)
    except OSError:
        return False
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True


def wait_ready(host: str, port: int, timeout: float = 30.0) -> None:
    """Block until a proxy (in another process or thread) accepts connections on host:port."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=0.5):
            return
        # A short pause between connection attempts, not a guess at how long start-up takes.
        time.sleep(0.05)
    raise TimeoutError(f"the Groundhog proxy did not accept connections on {host}:{port}")
