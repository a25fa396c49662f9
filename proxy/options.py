"""The mitmproxy options the Groundhog addon declares (`--set groundhog_…=…`).

Declared in one place so `python -m proxy`, `mitmdump -s proxy/addon.py` and the tests all see
the same names, types and defaults; without them the addon would have no resolver to ask.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, cast

from mitmproxy.addonmanager import Loader
from mitmproxy.exceptions import OptionsError

from engine import failpoints
from engine.errors import InvalidSpec
from proxy.host_map import HostMapError, Target, parse_host_map

DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024
DEFAULT_RESOLVE_TIMEOUT = 5.0
DEFAULT_WAIT_TIMEOUT = 30.0
DEFAULT_WAIT_LIMIT = 180.0
DEFAULT_RESOLVE_RETRY = 3.0
DEFAULT_LEASE_DISK_BYTES = 1024**3
# The request head bounds (proxy/http1_limits.py, proxy/header_deadline.py): nginx's
# large_client_header_buffers is 4 x 8 KiB; a worker's head far past that is an attack or a bug.
DEFAULT_MAX_HEADER_BYTES = 64 * 1024
DEFAULT_MAX_HEADER_COUNT = 200
DEFAULT_MAX_HALF_OPEN = 256
# Durations are declared as text: mitmproxy's `--set` parses only str, int, bool and sequences,
# so a float option could not be set from mitmdump's command line. `seconds` reads them.
SECONDS_OPTIONS: dict[str, tuple[float, str]] = {
    "groundhog_resolve_timeout": (
        DEFAULT_RESOLVE_TIMEOUT,
        "Seconds for /v1/resolve (it answers at once); no answer in time is a 503.",
    ),
    "groundhog_wait_timeout": (
        DEFAULT_WAIT_TIMEOUT,
        "Seconds for one /v1/wait long-poll; above the resolver's resolve_wait_seconds.",
    ),
    "groundhog_wait_limit": (
        DEFAULT_WAIT_LIMIT,
        "Seconds a request may wait in all on another asker fetching its address; then 503.",
    ),
    "groundhog_resolve_retry": (
        DEFAULT_RESOLVE_RETRY,
        "Seconds the proxy keeps asking a resolver that died under an ask (same attempt id, "
        "so no occurrence is taken twice) before it answers 503; 0 answers 503 at once.",
    ),
    "groundhog_record_timeout": (30.0, "Seconds for /v1/record."),
    "groundhog_upstream_connect_timeout": (
        10.0,
        "Seconds to open an upstream connection (mitmproxy has no connect timeout of its own).",
    ),
    "groundhog_upstream_read_timeout": (
        60.0,
        "Seconds from forwarding a recorded ask until the world's response head arrives.",
    ),
    "groundhog_upstream_idle": (
        1.0,
        "Seconds an HTTP/1 upstream connection may sit quiet and still carry the next live "
        "call; an older one is closed and a fresh one opened, so a call never meets the "
        "world's keep-alive closing it (5 s for uvicorn and Node, 2 s for gunicorn).",
    ),
    "groundhog_upstream_deadline": (
        120.0,
        "Seconds a recorded live call may take in all; past it the call is upstream-failed "
        "(timeout), or a stream already flowing continues unrecorded as passthrough.",
    ),
    "groundhog_header_timeout": (
        30.0,
        "Seconds a new client connection has to deliver its first request head (slowloris "
        "bound; mitmproxy's tcp_timeout only ends idle connections); then it is closed.",
    ),
    "groundhog_lease_ship_seconds": (
        1.0,
        "Seconds a lease holder's served hits wait to be shipped together (one batch per "
        "window); they are in its local log meanwhile.",
    ),
}
# Durations where 0 means "not at all" rather than "no time to do it in".
ZERO_ALLOWED = frozenset({"groundhog_resolve_retry"})
# mitmproxy annotates `typespec` as `type`, yet takes an optional type (its own addons pass
# `Optional[str]`); to mypy a union is no `type`.
_OPTIONAL_STR = cast(type, str | None)


def declare_options(loader: Loader) -> None:
    loader.add_option(
        "groundhog_resolver_url", str, "http://127.0.0.1:8070", "Groundhog resolver base URL."
    )
    loader.add_option(
        "groundhog_tape",
        _OPTIONAL_STR,
        None,
        "Pin the proxy to this tape: requests naming none are on it, requests naming another "
        "are refused (proxy/capabilities.py).",
    )
    loader.add_option(
        "groundhog_branch",
        _OPTIONAL_STR,
        None,
        "Pin the proxy to this branch: requests naming none are on it, requests naming another "
        "are refused.",
    )
    loader.add_option(
        "groundhog_capability",
        _OPTIONAL_STR,
        None,
        "The pinned branch's capability, presented for requests that give none.",
    )
    loader.add_option(
        "groundhog_max_body_bytes",
        int,
        DEFAULT_MAX_BODY_BYTES,
        "Bodies larger than this pass through unrecorded (decision passthrough).",
    )
    loader.add_option(
        "groundhog_proxy_token", _OPTIONAL_STR, None, "Bearer token for the resolver's routes."
    )
    loader.add_option(
        "groundhog_max_header_bytes",
        int,
        DEFAULT_MAX_HEADER_BYTES,
        "Bytes an HTTP/1 request head (request line and headers) may take; more is 431.",
    )
    loader.add_option(
        "groundhog_max_header_count",
        int,
        DEFAULT_MAX_HEADER_COUNT,
        "Header fields an HTTP/1 request may carry; more is 431.",
    )
    loader.add_option(
        "groundhog_max_half_open",
        int,
        DEFAULT_MAX_HALF_OPEN,
        "Connections one client address may hold open before their first request head is "
        "complete; a connection beyond it is closed at once.",
    )
    for name, (default, help_text) in SECONDS_OPTIONS.items():
        loader.add_option(name, str, f"{default:g}", help_text)
    loader.add_option(
        "groundhog_branch_leases",
        bool,
        True,
        "Take each branch's lease and answer its recorded reads here, shipping their events "
        "to the resolver behind (proxy/held_branches.py); needs groundhog_lease_dir, which "
        "`python -m proxy` sets (<data>/leases): without it hits go to the resolver.",
    )
    loader.add_option(
        "groundhog_lease_dir",
        _OPTIONAL_STR,
        None,
        "Where a lease holder keeps its holder id and the log of hits it served (default: "
        "<data>/leases under `python -m proxy`).",
    )
    loader.add_option(
        "groundhog_failpoints",
        str,
        "",
        "Crash-injection tests only: `name[@N],…` of engine/failpoints.PROXY_NAMES at which "
        "this proxy SIGKILLs itself (the N-th time it gets there), or `proxy.hook.<Addon>.<hook>` "
        "at which that addon hook raises (proxy/fail_closed.py); empty in production.",
    )
    loader.add_option(
        "groundhog_lease_disk_bytes",
        int,
        DEFAULT_LEASE_DISK_BYTES,
        "Bytes of recorded answers a lease holder keeps on disk (<lease dir>/answers), beyond "
        "the 64 MiB in memory and across restarts; least recently used first out; 0 keeps "
        "them in memory only.",
    )
    loader.add_option(
        "groundhog_admin_addresses",
        Sequence[str],
        [],
        "Groundhog's other admin endpoints (PORT for every local address, or HOST:PORT) that "
        "the proxy refuses to forward to, as it refuses the resolver and its own address.",
    )
    loader.add_option(
        "groundhog_map_host",
        Sequence[str],
        [],
        "HOST=ADDR:PORT: connect to ADDR:PORT for HOST (as curl's --resolve); the Host "
        "header, TLS server name and request key keep HOST (proxy/host_map.py).",
    )


def seconds(options: Any, name: str) -> float:
    """A duration option as a number of seconds; an unusable value names the option and the fix."""
    value = getattr(options, name)
    try:
        parsed = float(value)
    except (TypeError, ValueError):
        parsed = math.nan
    least = "0 or more" if name in ZERO_ALLOWED else "greater than 0"
    if not (math.isfinite(parsed) and (parsed > 0 or (parsed == 0 and name in ZERO_ALLOWED))):
        raise OptionsError(
            f"{name} must be a number of seconds {least} (e.g. --set {name}=30 or "
            f"{name}=0.5), not {value!r}"
        )
    return parsed


def arm_failpoints(spec: str) -> None:
    """Arm `groundhog_failpoints` (crash-injection tests); a bad spec names the known ones."""
    try:
        failpoints.arm(spec)
    except InvalidSpec as error:
        raise OptionsError(f"groundhog_failpoints: {error}") from error


def lease_disk_bytes(options: Any) -> int:
    """`groundhog_lease_disk_bytes`, refused naming the fix if it is no size (below 0)."""
    value = options.groundhog_lease_disk_bytes
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise OptionsError(
            "groundhog_lease_disk_bytes must be a number of bytes, 0 or more (0 keeps recorded "
            "answers in memory only), e.g. --set groundhog_lease_disk_bytes=1073741824 for "
            f"1 GiB, not {value!r}"
        )
    return value


def check_options(options: Any, updated: set[str]) -> None:
    """Refuse an update that sets a duration or size option to something that is not one."""
    for name in updated & SECONDS_OPTIONS.keys():
        seconds(options, name)
    if "groundhog_lease_disk_bytes" in updated:
        lease_disk_bytes(options)
    if "groundhog_map_host" in updated:
        host_map(options)


def host_map(options: Any) -> dict[str, Target]:
    """`groundhog_map_host` parsed, refused naming the fix when an entry is no HOST=ADDR:PORT."""
    try:
        return parse_host_map(options.groundhog_map_host)
    except HostMapError as error:
        raise OptionsError(str(error)) from error
