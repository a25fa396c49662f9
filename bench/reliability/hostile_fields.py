"""Hostile values that once gave 500s (issue 12 item 8): each must be a 4xx problem+json naming
the field it is about, and must leave nothing broken behind.

Out-of-range integers (event cursors, exchange ids, world seeds), imports whose tape row is
doctored (config not JSON or not an object, an unknown mode, a traversal or over-long name, a
config over the size limit), an oversized config on create, and a response header outside
Latin-1 sent to `/v1/record` — after which the address must still record and serve.
"""

from __future__ import annotations

import base64
import contextlib
import sqlite3
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from bench.reliability.processes import resolver_args, scenario_children

Check = Callable[[httpx.Client, str], httpx.Response]

DOCTORED_IMPORTS = [
    ("import: config is not JSON", "update gh_tapes set config = 'not json {'", "config"),
    ("import: config is a list", "update gh_tapes set config = '[1, 2]'", "config"),
    ("import: unknown mode", "update gh_tapes set mode = 'chaos'", "mode"),
    ("import: name ../../etc/passwd", "update gh_tapes set name = '../../etc/passwd'", "name"),
    ("import: 601-character name", f"update gh_tapes set name = '{'n' * 601}'", "name"),
    (
        "import: 300 KB config",
        f"update gh_tapes set config = json_object('ignore_params', json_array('{'p' * 300_000}'))",
        "config",
    ),
]


def doctored_export(exported: bytes, update: str) -> bytes:
    """`exported` (a tape export) with one SQL statement applied to it."""
    with tempfile.TemporaryDirectory(prefix="gh-doctor-") as scratch:
        file = Path(scratch) / "tape.sqlite3"
        file.write_bytes(exported)
        with contextlib.closing(sqlite3.connect(file)) as connection:
            connection.execute("PRAGMA journal_mode=DELETE")  # the file alone holds the update
            connection.execute(update)
            connection.commit()
        return file.read_bytes()


def _names_field(reply: httpx.Response, field: str) -> bool:
    if not 400 <= reply.status_code < 500:
        return False
    if not reply.headers.get("content-type", "").startswith("application/problem+json"):
        return False
    problem = reply.json()
    named = [str(problem.get("field", ""))]
    named += [str(issue.get("field", "")) for issue in problem.get("errors", [])]
    return any(field in name for name in named) or field in str(problem.get("detail", ""))


def _importer(doctored: bytes, rename: bool) -> Check:
    def send(http: httpx.Client, tape: str) -> httpx.Response:
        params = {"name": tape + "-copy"} if rename else None
        return http.post("/v1/tapes/import", params=params, content=doctored)

    return send


def _cases(exported: bytes) -> list[tuple[str, str, Check]]:
    cases: list[tuple[str, str, Check]] = [
        (
            "events?after=2**70",
            "after",
            lambda h, t: h.get(f"/v1/tapes/{t}/events", params={"after": 2**70}),
        ),
        ("exchanges/2**63", "exchange_id", lambda h, t: h.get(f"/v1/tapes/{t}/exchanges/{2**63}")),
        ("exchanges/2**70", "exchange_id", lambda h, t: h.get(f"/v1/tapes/{t}/exchanges/{2**70}")),
        (
            "world_seed=2**70",
            "world_seed",
            lambda h, t: h.post("/v1/tapes", json={"name": t + "-seed", "world_seed": 2**70}),
        ),
        (
            "create: 300 KB config",
            "config",
            lambda h, t: h.post(
                "/v1/tapes", json={"name": t + "-big", "ignore_params": ["p" * 1000] * 300}
            ),
        ),
    ]
    for name, update, field in DOCTORED_IMPORTS:
        doctored = doctored_export(exported, update)
        # Name cases import under the file's own name; the others under a fresh, valid one.
        rename = "name" not in field
        cases.append((name, field, _importer(doctored, rename)))
    return cases


def _latin1_record(http: httpx.Client, tape: str) -> dict[str, Any]:
    """A non-Latin-1 header is refused at record and does not poison the address."""
    ask = {"tape": tape, "branch": "root", "method": "GET", "host": "h", "port": 80, "path": "/x"}
    ticket = http.post("/v1/resolve", json=ask).json()["ticket"]
    bad = {"status": 200, "headers": [["X-Title", "naïve €"]], "body": ""}
    refused = http.post("/v1/record", json={"ticket": ticket, "response": bad})
    again = http.post("/v1/resolve", json=ask).json()  # the next occurrence: still live
    fine = {
        "status": 200,
        "headers": [["X-Title", "plain"]],
        "body": base64.b64encode(b"ok").decode(),
    }
    recorded = http.post("/v1/record", json={"ticket": again.get("ticket"), "response": fine})
    return {
        "case": "record: header value outside Latin-1",
        "status": refused.status_code,
        "held": _names_field(refused, "response.headers[0]") and recorded.status_code == 200,
    }


def run_hostile_fields(root: Path) -> dict[str, Any]:
    with scenario_children("gh-hostile-fields-", root) as (base, group):
        resolver = group.start("resolver", resolver_args(base / "data"))
        http = httpx.Client(base_url=resolver.url, trust_env=False, timeout=60)
        tape = "hostile-fields"
        http.post("/v1/tapes", json={"name": tape}).raise_for_status()
        exported = http.get(f"/v1/tapes/{tape}/export").content
        http.delete(f"/v1/tapes/{tape}")  # so an import keeping the name is validated, not 409
        results = []
        for name, field, check in _cases(exported):
            reply = check(http, tape)
            results.append(
                {"case": name, "status": reply.status_code, "held": _names_field(reply, field)}
            )
        http.post("/v1/tapes", json={"name": tape}).raise_for_status()
        results.append(_latin1_record(http, tape))
        listed = [t["name"] for t in http.get("/v1/tapes").json()["tapes"]]
        http.close()
        alive = resolver.alive()
        return {
            "cases": results,
            "tapes_after": listed,
            "alive": alive,
            "held": alive and all(case["held"] for case in results),
        }
