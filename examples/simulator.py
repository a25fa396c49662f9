"""`python -m examples.simulator --port 8099`: a tiny deterministic miss simulator for Groundhog.

It is a service, so it needs the services extra (`pip install "groundhog-rl[services]"`).

A sealed tape with `"simulator_url": "http://127.0.0.1:8099/simulate"` asks this service for
the answer to a read it has no recording of. A real simulator would be an LLM writing a
plausible answer from the API description and the nearest recordings; this one is a
deterministic stand-in that shows the protocol: it takes the nearest recording's JSON answer,
when there is one, and says what it changed. The same request always gets the same bytes, so a
tape recorded through it keeps a stable digest.

Protocol (docs/concepts.md, "Miss simulators"): POST JSON `{"protocol", "tape", "branch",
"world_seed", "request_key", "occurrence", "request": {"method", "url", "headers", "body"},
"nearest": [{"key", "summary", "differences", "recorded", "response"?}]}` (bodies base64);
answer JSON `{"status", "headers": [[name, value], …], "body": "<base64>"}`.
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
from typing import Any

try:
    import uvicorn
    from fastapi import FastAPI
except ModuleNotFoundError as missing:  # the system python3, not the project's venv
    sys.exit(f"{missing}: run it as .venv/bin/python examples/simulator.py (make venv)")

app = FastAPI(title="Groundhog example simulator")


def _nearest_json(nearest: list[dict[str, Any]]) -> tuple[Any, dict[str, Any] | None]:
    for miss in nearest:
        response = miss.get("response")
        if not response:
            continue
        try:
            return json.loads(base64.b64decode(response["body"])), miss
        except ValueError:
            continue
    return None, None


def simulate(ask: dict[str, Any]) -> dict[str, Any]:
    """The simulated answer: a pure function of what the resolver sent."""
    based_on, miss = _nearest_json(ask.get("nearest") or [])
    content = {
        "simulated": True,
        "method": ask["request"]["method"],
        "url": ask["request"]["url"],
        "occurrence": ask["occurrence"],
        "based_on": miss["key"] if miss else None,
        "changed": [d["name"] or d["part"] for d in miss["differences"]] if miss else [],
        "answer": based_on,
    }
    body = json.dumps(content, sort_keys=True, separators=(",", ":")).encode()
    return {
        "status": 200,
        "headers": [["Content-Type", "application/json"]],
        "body": base64.b64encode(body).decode("ascii"),
    }


@app.post("/simulate")
def simulate_route(ask: dict[str, Any]) -> dict[str, Any]:
    return simulate(ask)


@app.get("/healthz")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8099)
    args = parser.parse_args()
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
