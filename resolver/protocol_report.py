"""Which protocol profile fired, or failed, for each host: the report's `protocols` section.

A user who expected an MCP endpoint's reads to be shared must be able to see that the profile
recognised them, and an unreadable JSON-RPC or GraphQL body (an opaque write, never shared)
must not pass silently. Counts come from the operation each stored request key names
(engine/keys.py: `op:<profile> <operation>`, `op:<profile>! <why>`), so they are exact for
what is on the tape and need no column of their own.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from engine.tape_settings import TapeSettings
from store.models import Exchange

_OP = " op:"


def profile_counts(rows: Iterable[tuple[str, str]]) -> dict[str, dict[str, dict[str, int]]]:
    """Per host, how many stored keys each profile read (`fired`) or could not (`failed`,
    by profile and reason), from (host, readable key) rows."""
    hosts: dict[str, dict[str, dict[str, int]]] = {}
    for host, readable in rows:
        start = readable.find(_OP)
        if start < 0:
            continue
        label = readable[start + len(_OP) :]
        profile, _, rest = label.partition(" ")
        counts = hosts.setdefault(host, {"fired": {}, "failed": {}})
        if profile.endswith("!"):
            reason = rest.split(" headers:", 1)[0].split(" body:", 1)[0]
            name = f"{profile.removesuffix('!')}: {reason}"
            counts["failed"][name] = counts["failed"].get(name, 0) + 1
        else:
            counts["fired"][profile] = counts["fired"].get(profile, 0) + 1
    return dict(sorted(hosts.items()))


def protocol_summary(tape_id: int, settings: TapeSettings, *, session: Session) -> dict[str, Any]:
    rows = session.execute(
        select(Exchange.request_host, Exchange.key_readable).where(Exchange.tape_id == tape_id)
    )
    return {
        "pinned": dict(settings.protocols),
        "hosts": profile_counts((host, readable) for host, readable in rows),
    }
