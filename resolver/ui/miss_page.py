"""Why a sealed miss missed: the near-miss explanation of one refused event, for people.

The 502 problem a worker got names the nearest recordings and what differs; the timeline links
each refused event here so the same explanation can be read later, next to the recordings.
Events keep the method and URL but not the headers or body, so when the exact key was never
recorded the asked key is rebuilt from those and body or header differences may show as such.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from engine.keys import KEY_VERSION
from engine.near_miss import Recording, explain
from resolver.errors import NotFound
from resolver.routes.tapes import find_tape
from resolver.schemas import check_branch_path
from resolver.ui.layout import UI_ROOT, badge, page
from resolver.ui.markup import Markup, table, tag, url
from resolver.ui.tape_pages import tape_href, timeline_href
from store import inspect, nearby
from store.db import transaction


def register(router: APIRouter) -> None:
    router.add_api_route(
        "/tapes/{tape}/miss", show_miss, methods=["GET"], response_class=HTMLResponse
    )


def miss_href(tape: str, branch: str, seq: int) -> str:
    return url(f"{tape_href(tape)}/miss", branch=branch, seq=seq)


def _shown(value: str | None) -> Markup:
    return (
        tag("em", "absent", class_="muted") if value is None else tag("span", value, class_="mono")
    )


def show_miss(
    tape: str, request: Request, branch: str = Query(default="root"), seq: int = Query(ge=1)
) -> HTMLResponse:
    check_branch_path(branch)
    with transaction(request.app.state.store.read) as session:
        found = find_tape(tape, session=session)
        rows = inspect.events_page(found.id, branch=branch, after=seq - 1, limit=1, session=session)
        if not rows or rows[0].seq != seq:
            raise NotFound(f"branch {branch!r} of tape {tape!r} has no event {seq}")
        event = rows[0]
        same = nearby.readable_key(found.id, event.key_hash, session=session)
        asked = same or f"{KEY_VERSION} {event.method} {event.url}"
        host = (urlsplit(event.url).hostname or "").lower()
        candidates = nearby.recorded_addresses(found.id, event.method, host, session=session)
    recorded = {
        key: [Recording(occurrence, fingerprint) for occurrence, fingerprint in addresses]
        for key, addresses in candidates.items()
    }
    near = explain(asked, recorded, occurrence=event.occurrence, fingerprint=event.fingerprint)
    content: list[object] = [
        tag(
            "p",
            badge(event.decision),
            f" event {event.seq}: ",
            tag("span", asked, class_="mono", id="asked-key"),
            f" · occurrence {event.occurrence} · fingerprint {event.fingerprint!r}",
        )
    ]
    if same is None:
        content.append(
            tag(
                "p",
                "Headers and body of this ask are not kept; compared by method and URL.",
                class_="muted",
            )
        )
    if not near:
        content.append(
            tag("p", "Nothing like this request is recorded on the tape.", class_="note")
        )
    for index, miss in enumerate(near):
        rows_ = [[d.part, d.name, _shown(d.asked), _shown(d.recorded)] for d in miss.differences]
        recordings = ", ".join(
            f"#{r.occurrence} {r.fingerprint or '(base)'}" for r in miss.recordings
        )
        content += [
            tag("h2", f"{index + 1}. ", tag("span", miss.key, class_="mono")),
            tag("p", miss.summary, class_="near-summary"),
            tag("p", f"recorded at occurrence: {recordings}", class_="muted"),
        ]
        if rows_:
            content.append(table(["part", "name", "asked", "recorded"], rows_, class_="near-miss"))
    return page(
        f"Why event {seq} of {branch} missed",
        *content,
        crumbs=[(UI_ROOT, "tapes"), (tape_href(tape), tape), (timeline_href(tape, branch), branch)],
    )
