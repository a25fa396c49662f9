"""proxy/header_deadline.py in mitmproxy's test harness: the half-open count per address."""

from __future__ import annotations

import asyncio

from mitmproxy.test import taddons, tflow

from proxy.addon import GroundhogAddon
from proxy.header_deadline import HeaderDeadline


def test_half_open_connections_are_counted_per_address_and_settled_by_a_head() -> None:
    async def scenario() -> None:
        deadline = HeaderDeadline()
        with taddons.context(GroundhogAddon(), deadline) as context:
            context.configure(deadline, groundhog_max_half_open=2)
            first, second, third = (tflow.tclient_conn() for _ in range(3))
            other = tflow.tclient_conn()
            other.peername = ("10.0.0.9", 5000)
            for client in (first, second, third, other):
                deadline.client_connected(client)
            address = str(first.peername[0])
            assert deadline.half_open(address) == 2
            assert third.error and not first.error and not other.error
            flow = tflow.tflow()
            flow.client_conn = first
            deadline.requestheaders(flow)  # a complete head: no longer half-open
            assert deadline.half_open(address) == 1
            deadline.client_disconnected(second)
            deadline.client_disconnected(other)
            assert deadline.half_open(address) == 0 and deadline.half_open("10.0.0.9") == 0

    asyncio.run(scenario())
