"""Raw bytes inside a CONNECT tunnel: closed unless a passthrough list allows them, never sealed.

mitmproxy relays bytes it cannot parse as HTTP or TLS; unchecked, that is a live call the
resolver never decided — on a sealed tape, with no tape named, or with the resolver dead. Through
the real proxy and resolver, a client CONNECTs to a counting raw echo server and sends bytes that
are neither; the figure per case is how many connections and bytes reached that world.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.reliability.admin import call
from bench.reliability.processes import scenario_children
from bench.reliability.raw_tunnel import LOOPBACK, EchoServer, raw_through_tunnel
from bench.reliability.stack import Stack, start_stack


def _case(
    stack: Stack, echo: EchoServer, case: str, *, tape: str | None, relay: bool
) -> dict[str, Any]:
    before = echo.snapshot()
    outcome = raw_through_tunnel(
        stack.proxies[0].port, echo.port, tape=tape, branch="root" if tape else None
    )
    after = echo.snapshot()
    connections, received = after[0] - before[0], after[1] - before[1]
    if relay:
        held = outcome.relayed and connections == 1
    else:
        held = outcome.closed and not outcome.relayed and connections == 0 and received == 0
    return {
        "case": case,
        "expect": "relayed" if relay else "closed, nothing reaches the world",
        "connect_status": outcome.connect_status,
        "closed": outcome.closed,
        "relayed": outcome.relayed,
        "connections_reached_world": connections,
        "bytes_reached_world": received,
        "held": held,
    }


def run_tunnels(root: Path | None = None) -> dict[str, Any]:
    with scenario_children("gh-tunnels-", root) as (base, group), EchoServer() as echo:
        stack = start_stack(group, base)
        url = stack.resolver.url
        listed, unlisted, sealed = "tunnel-listed", "tunnel-unlisted", "tunnel-sealed"
        for name, hosts in ((listed, [LOOPBACK]), (unlisted, []), (sealed, [LOOPBACK])):
            body = {"name": name, "world_seed": 7, "passthrough_hosts": hosts}
            call(url, "POST", "/v1/tapes", json=body)
        call(url, "POST", f"/v1/tapes/{sealed}/seal")
        cases = [
            _case(stack, echo, "online tape, host on no list", tape=unlisted, relay=False),
            _case(stack, echo, "online tape, host on passthrough_hosts", tape=listed, relay=True),
            _case(stack, echo, "sealed tape, host on passthrough_hosts", tape=sealed, relay=False),
            _case(stack, echo, "no tape named", tape=None, relay=False),
        ]
        stack.resolver.kill_hard()
        cases.append(_case(stack, echo, "resolver killed, host listed", tape=listed, relay=False))
    leaked = sum(c["bytes_reached_world"] for c in cases if c["expect"] != "relayed")
    return {
        "cases": cases,
        "bytes_leaked_when_closed": leaked,
        "held": all(case["held"] for case in cases),
    }
