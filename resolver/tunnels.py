"""Whether a raw tunnel (bytes inside CONNECT that are neither HTTP nor TLS) may reach the world.

The proxy can key, record and share only HTTP; raw bytes it would have to relay blind, so a raw
tunnel is a live call nobody can see or replay. It is allowed only where someone said so for that
host — the tape's `passthrough_hosts` or the proxy's own `groundhog_tcp_passthrough_hosts` — and
only while the tape is online: a sealed tape never opens a connection upstream. One pure function,
so every cell is tested without HTTP or a store.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from engine.policy import Decision


@dataclass(frozen=True)
class TunnelVerdict:
    decision: Decision  # PASSTHROUGH (relay the raw bytes) or REFUSED (close the tunnel)
    detail: str


def decide_tunnel(
    *,
    tape: str,
    online: bool,
    host: str,
    port: int,
    tape_passthrough_hosts: Iterable[str],
    listed_by_proxy: bool,
) -> TunnelVerdict:
    target = f"{host}:{port}"
    if not online:
        return TunnelVerdict(
            Decision.REFUSED,
            f"tape {tape!r} is sealed: a raw tunnel to {target} would be a live connection",
        )
    listed_by_tape = host.lower() in {name.lower() for name in tape_passthrough_hosts}
    if listed_by_tape or listed_by_proxy:
        source = "tape's passthrough_hosts" if listed_by_tape else "proxy's passthrough list"
        return TunnelVerdict(
            Decision.PASSTHROUGH, f"raw tunnel to {target} relayed unrecorded (the {source})"
        )
    return TunnelVerdict(
        Decision.REFUSED,
        f"bytes to {target} are neither HTTP nor TLS and {host!r} is on no passthrough list; "
        "add it to the tape's passthrough_hosts or the proxy's --tcp-passthrough-host to relay "
        "it unrecorded",
    )
