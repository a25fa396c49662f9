"""Miss simulators: which sealed misses a tape's simulator answers, and what it is told.

A sealed tape's miss is a 502; a tape may instead name a simulator (a small service the user
runs — an LLM writing plausible answers from the API description and the nearest recordings,
as virtual API servers for tool benchmarks do). Its answer is recorded at the address like the
world's, so siblings share it, and marked `simulated` everywhere: the decision, the report,
the viewer and the stored response itself (`X-Groundhog-Simulated: 1`, so an export keeps the
mark) — reward code can mask it. The simulator is never the world: it is asked only when the
tape is sealed, and writes only when the tape says `simulate_writes` (that rule, and serving its
recordings as `simulated`, are part of the decision path, engine/decision.py). Pure functions
here; the call and the recording are `resolver/simulator_client.py`.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

from engine.asks import Ask
from groundhog.protocol.headers import SIMULATED as SIMULATED_HEADER
from groundhog.protocol.wire import encode_base64

PROTOCOL = "groundhog-simulator-v1"


def is_simulated(headers: Sequence[Sequence[str]]) -> bool:
    return any(name.lower() == SIMULATED_HEADER.lower() for name, *_ in headers)


def without_mark(headers: Sequence[Sequence[str]]) -> list[tuple[str, str]]:
    """`headers` without the simulator's mark. Only the simulator may set it: a world answer
    carrying it would be stored, served and masked as an invented one."""
    return [(name, value) for name, value in headers if name.lower() != SIMULATED_HEADER.lower()]


def simulator_request(ask: Ask, nearest: list[dict[str, Any]]) -> dict[str, Any]:
    """What the simulator is sent: the (redacted) request and the nearest recordings."""
    request = ask.request
    return {
        "protocol": PROTOCOL,
        "tape": ask.tape_name,
        "branch": ask.branch,
        "world_seed": ask.world_seed,
        "request_key": ask.key.readable,
        "occurrence": ask.occurrence,
        "request": {
            "method": request.method,
            "url": request.url(),
            "headers": [list(pair) for pair in request.headers],
            "body": encode_base64(request.body),
        },
        "nearest": nearest,
    }


def marked_response(answer: dict[str, Any]) -> tuple[int, list[list[str]], bytes]:
    """The simulator's answer, checked, with the simulated mark added to its headers.

    Raises ValueError naming what is wrong with an answer that does not fit the protocol.
    """
    status = answer.get("status")
    if not isinstance(status, int) or not 100 <= status <= 599:
        raise ValueError(f"status must be an integer HTTP status, got {status!r}")
    headers = answer.get("headers", [])
    if not isinstance(headers, list) or not all(
        isinstance(pair, list) and len(pair) == 2 and all(isinstance(v, str) for v in pair)
        for pair in headers
    ):
        raise ValueError("headers must be a list of [name, value] string pairs")
    try:
        body = base64.b64decode(answer.get("body", ""), validate=True)
    except (ValueError, TypeError) as error:
        raise ValueError(f"body must be base64: {error}") from error
    kept = [list(pair) for pair in without_mark(headers)]
    return status, [*kept, [SIMULATED_HEADER, "1"]], body
