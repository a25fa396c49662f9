"""The proxy's part of injected faults (engine/faults.py decides them; this acts them out).

Two faults cannot be expressed as an answer the resolver hands over: a delay (a latency fault,
or a timeout's hold before its 504) and a connection reset. The resolver says `delay_ms` in the
resolve answer and marks a reset with `X-Groundhog-Fault: reset`; here the proxy waits without
blocking the event loop and kills the flow, which closes the client's connection unanswered.
Not the proxy's errors (proxy/errors.py, the exceptions it raises): a fault is served on purpose.
"""

from __future__ import annotations

import asyncio
import logging

from mitmproxy import http

from groundhog.protocol.headers import FAULT as FAULT_HEADER
from groundhog.protocol.wire import ResolveAnswer

log = logging.getLogger(__name__)

MAX_DELAY_SECONDS = 600.0


async def hold(answer: ResolveAnswer) -> None:
    """Wait the resolver's `delay_ms` (absent or 0: no wait)."""
    try:
        delay = float(answer.get("delay_ms") or 0) / 1000.0
    except (TypeError, ValueError):
        return
    if delay > 0:
        await asyncio.sleep(min(delay, MAX_DELAY_SECONDS))


def enact(flow: http.HTTPFlow) -> None:
    """Close the client connection when the served answer is an injected reset."""
    if flow.response is not None and flow.response.headers.get(FAULT_HEADER) == "reset":
        log.info("injected reset of %s", flow.request.pretty_url)
        flow.kill()
