"""A scripted resolver speaking PROTOCOL v2's record answers, for the addon's unit tests.

The live path's unit tests need a resolver that forwards with a ticket, answers `head` with a
redacted header form, answers `response` records with what to serve and `error` records with
the `upstream-failed` problem — and sometimes fails on purpose. End-to-end tests use the real
resolver.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable

Script = Callable[[str, dict], tuple[int, object]]


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def forward_answer(ticket: str | None = "t-1", decision: str = "recorded", **extra) -> dict:
    return {
        "action": "forward",
        "decision": decision,
        "occurrence": 0,
        "fingerprint": "",
        "request_key": "k",
        "ticket": ticket,
        "upstream_headers": [],
        **extra,
    }


def redacted(headers: list[list[str]]) -> list[list[str]]:
    return [[name, value] for name, value in headers if name.lower() != "set-cookie"]


def recording_script(
    ticket: str = "t-1", *, fail: set[str] = frozenset(), **forward_extra
) -> Script:
    """Forward, then answer every record kind as PROTOCOL v2 says; kinds in `fail` get a 503."""

    def script(route: str, payload: dict) -> tuple[int, object]:
        if route == "/v1/resolve":
            return 200, forward_answer(ticket, **forward_extra)
        if route == "/v1/renew":
            return 200, {"claim_seconds": 30.0}
        kind = next(
            k for k in ("head", "response", "error", "passthrough", "unrecorded") if k in payload
        )
        if kind in fail:
            return 503, {"detail": "store full"}
        if kind == "head":
            return 200, {"headers": redacted(payload["head"]["headers"])}
        if kind == "error":
            problem = {"type": "upstream-failed", "status": 502, "detail": payload["error"]["kind"]}
            return 200, {
                "decision": "upstream-failed",
                "exchange_id": None,
                "recorded": False,
                "response": {
                    "status": 502,
                    "headers": [["Content-Type", "application/problem+json"]],
                    "body": b64(json.dumps(problem).encode()),
                },
            }
        if kind == "response":
            stored = payload["response"]
            return 200, {
                "decision": forward_extra.get("decision", "recorded"),
                "exchange_id": 1,
                "recorded": True,
                "response": {
                    "status": stored["status"],
                    "headers": redacted(stored["headers"]),
                    "body": None,
                },
            }
        return 200, {"decision": "passthrough", "exchange_id": None, "recorded": False}

    return script
