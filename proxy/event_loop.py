"""Which event loop the proxy runs on: uvloop where it is installed, else asyncio's own.

mitmproxy runs every flow in one Python event loop, and on a hit that loop's own work (socket
reads and writes for the worker and the resolver, callbacks, task steps) is a large part of what
the proxy adds: asyncio's selector loop does it in Python, uvloop in C. The choice is a
command-line setting (`--loop`, like uvicorn's, which already runs the resolver on uvloop)
because it must be made before the loop exists, so before mitmproxy reads its options. Without
this module the proxy ran on the selector loop only. Measured in three interleaved pairs of
`bench.proxy_perf` runs on a 2-core VM (bench/README.md, "Speed rows"), uvloop raised the hit
path's throughput at 8 clients from 1.08-1.16x plain mitmdump's to 1.28-1.51x and the recorded
miss's from 0.66-0.75x to 0.75-0.88x; at 1 client its latency moved within the noise (the loop
is a share of the CPU a flow costs, not of the time a lone request waits on the resolver).
`asyncio` stays available for a platform without uvloop and as a way to rule the loop out when
debugging.
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Callable
from enum import StrEnum
from typing import NoReturn


class EventLoop(StrEnum):
    """The proxy's `--loop` setting."""

    AUTO = "auto"  # uvloop if it is installed, else asyncio
    ASYNCIO = "asyncio"
    UVLOOP = "uvloop"

    @classmethod
    def _missing_(cls, value: object) -> NoReturn:
        valid = ", ".join(repr(loop.value) for loop in cls)
        raise ValueError(f"{value!r} is not an event loop; the choices are {valid}")


def uvloop_installed() -> bool:
    return importlib.util.find_spec("uvloop") is not None


def resolved(choice: EventLoop | str) -> EventLoop:
    """`auto` made concrete; `uvloop` refused with the fix where it is not installed."""
    loop = EventLoop(choice)
    if loop is EventLoop.AUTO:
        return EventLoop.UVLOOP if uvloop_installed() else EventLoop.ASYNCIO
    if loop is EventLoop.UVLOOP and not uvloop_installed():
        raise ValueError("--loop uvloop needs the uvloop package: pip install uvloop")
    return loop


def loop_factory(choice: EventLoop | str) -> Callable[[], asyncio.AbstractEventLoop]:
    """What `asyncio.run(..., loop_factory=...)` builds the proxy's loop with."""
    if resolved(choice) is EventLoop.UVLOOP:
        import uvloop

        return uvloop.new_event_loop
    return asyncio.new_event_loop
