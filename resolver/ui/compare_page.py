"""One address (request key + occurrence) across sibling branches, side by side.

This is the page that shows Groundhog working: siblings that changed nothing share one
recording (same exchange, empty fingerprint); a sibling whose own write touched what the read
depends on has a different fingerprint, was refetched, and its answer differs. The page names
the writes that split the fingerprint and diffs the two answers line by line.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse
from sqlalchemy.orm import Session

from resolver.errors import InvalidInput, NotFound
from resolver.routes.tapes import find_tape
from resolver.schemas import check_branch_path
from resolver.ui.bodies import show_body
from resolver.ui.branch_pages import exchange_href
from resolver.ui.diff import DiffRow, differing, side_by_side
from resolver.ui.diff_page import diff_href
from resolver.ui.layout import UI_ROOT, badge, hash_cell, page
from resolver.ui.markup import Markup, join, link, table, tag, url
from resolver.ui.queries import AddressEvent, address_events, writes_before
from resolver.ui.tape_pages import tape_href, timeline_href
from store import exchanges
from store.branches import child_paths
from store.db import transaction
from store.models import Exchange

_KEY_HASH = re.compile(r"^[0-9a-f]{64}$")
MAX_DIFF_LINES = 5000


def register(router: APIRouter) -> None:
    router.add_api_route(
        "/tapes/{tape}/compare", compare, methods=["GET"], response_class=HTMLResponse
    )


def exchange_text(row: Exchange | None, *, session: Session) -> str:
    """Status, headers and the display body of an exchange, as lines to diff."""
    if row is None:
        return "(no recorded exchange)"
    if row.error_kind is not None:
        return f"upstream error ({row.error_kind}): {row.error_message or ''}"
    headers = row.response_headers or []
    body = show_body(exchanges.get_blob(row.response_body_sha, session=session), headers)
    lines = [f"HTTP {row.response_status}", *(f"{name}: {value}" for name, value in headers)]
    return "\n".join([*lines, "", body.text])


def _pick(
    events: dict[str, AddressEvent], siblings: list[str], left: str | None, right: str | None
) -> tuple[str | None, str | None]:
    asked = [path for path in siblings if path in events]
    left = left if left in events else (asked[0] if asked else None)
    if right not in events or right == left:
        base = events[left].exchange_id if left else None
        different = [p for p in asked if p != left and events[p].exchange_id != base]
        others = [p for p in asked if p != left]
        right = next(iter(different or others), None)
    return left, right


def _split_cell(tape_id: int, event: AddressEvent, *, session: Session) -> object:
    if not event.fingerprint:
        return tag("span", "no write in lineage touches this read", class_="muted")
    writes = writes_before(tape_id, event.branch, event.seq, session=session)
    if not writes:
        return tag("span", "written before the fork (inherited)", class_="muted")
    # "event N": the write's place in its branch's timeline, never a bare "#N", which the
    # exchange column uses for an exchange id.
    return join(
        [tag("div", f"event {w.seq}: {w.method} {w.url}", class_="mono split") for w in writes]
    )


def _cut(text: str) -> str:
    """At most MAX_DIFF_LINES lines: the line diff is quadratic in the worst case."""
    lines = text.splitlines()
    if len(lines) <= MAX_DIFF_LINES:
        return text
    return "\n".join([*lines[:MAX_DIFF_LINES], f"… {len(lines) - MAX_DIFF_LINES} more lines"])


def _choose_links(
    compare_url: Callable[..., str], path: str, left: str | None, right: str | None
) -> object:
    if path == left:
        return tag("strong", "left")
    if path == right:
        return tag("strong", "right")
    return link(compare_url(left=left, right=path), "diff with left", class_="choose")


def _diff_table(rows: list[DiffRow], left: str, right: str) -> Markup:
    body = [
        tag(
            "tr",
            tag("td", row.left_number, class_="ln"),
            tag("td", row.left, class_="text left"),
            tag("td", row.right_number, class_="ln"),
            tag("td", row.right, class_="text right"),
            class_=row.kind,
        )
        for row in rows
    ]
    head = tag(
        "thead",
        tag(
            "tr",
            tag("th", "", class_="ln"),
            tag("th", left),
            tag("th", "", class_="ln"),
            tag("th", right),
        ),
    )
    return tag("table", head, tag("tbody", body), class_="diff", id="diff")


def compare(
    tape: str,
    request: Request,
    key: str = Query(description="the request key hash"),
    occurrence: int = Query(ge=0),
    parent: str = Query(default="root"),
    left: str | None = None,
    right: str | None = None,
) -> HTMLResponse:
    if not _KEY_HASH.match(key):
        raise InvalidInput(f"key {key!r} is not a request key hash (64 lowercase hex digits)")
    check_branch_path(parent)
    with transaction(request.app.state.store.read) as session:
        found = find_tape(tape, session=session)
        siblings = child_paths(found.id, parent, session=session)
        if not siblings:
            raise NotFound(f"branch {parent!r} of tape {tape!r} has no children to compare")
        events = address_events(found.id, key, occurrence, siblings, session=session)
        if not events:
            raise NotFound(
                f"no child of {parent!r} asked key {key[:12]}… at occurrence {occurrence}"
            )
        left, right = _pick(events, siblings, left, right)
        compare_url = functools.partial(
            url,
            f"{tape_href(tape)}/compare",
            key=key,
            occurrence=occurrence,
            parent=parent,
        )
        rows: list[list[object]] = []
        readable = ""
        texts: dict[str, str] = {}
        for path in siblings:
            event = events.get(path)
            if event is None:
                rows.append(
                    [
                        link(timeline_href(tape, path), path),
                        tag("span", "did not ask", class_="muted"),
                        "",
                        "",
                        "",
                        "",
                        "",
                    ]
                )
                continue
            exchange = (
                exchanges.get_exchange(found.id, event.exchange_id, session=session)
                if event.exchange_id is not None
                else None
            )
            readable = readable or (
                exchange.key_readable if exchange else f"{event.method} {event.url}"
            )
            if path in (left, right):
                texts[path] = exchange_text(exchange, session=session)
            rows.append(
                [
                    link(timeline_href(tape, path) + f"#event-{event.seq}", path),
                    badge(event.decision),
                    hash_cell(event.fingerprint),
                    link(exchange_href(tape, event.exchange_id), f"exchange {event.exchange_id}")
                    if event.exchange_id is not None
                    else "",
                    "" if exchange is None else (exchange.response_status or "error"),
                    _split_cell(found.id, event, session=session),
                    _choose_links(compare_url, path, left, right),
                ]
            )
    content: list[object] = [
        tag(
            "p",
            "Address ",
            tag("code", readable),
            f" · occurrence {occurrence} · children of ",
            link(timeline_href(tape, parent), parent),
        ),
        table(
            [
                "branch",
                "decision",
                "fingerprint",
                "exchange",
                "status",
                "split by (this branch's writes before the read)",
                "diff",
            ],
            rows,
            id="siblings",
        ),
    ]
    if left and right:
        diff = side_by_side(*(_cut(texts[path]) for path in (left, right)))
        changed = differing(diff)
        verdict = (
            "identical bytes: one recording shared"
            if events[left].exchange_id == events[right].exchange_id
            else f"{changed} line(s) differ"
        )
        content += [
            tag("h2", f"{left} ↔ {right}: {verdict}"),
            tag(
                "p",
                link(diff_href(tape, left, right), f"Whole timelines: {left} against {right}"),
                class_="note",
            ),
            _diff_table(diff, left, right),
        ]
    else:
        content.append(tag("p", "Only one sibling asked this address.", class_="note"))
    return page(
        "Address across siblings",
        *content,
        crumbs=[(UI_ROOT, "tapes"), (tape_href(tape), tape), (timeline_href(tape, parent), parent)],
    )
