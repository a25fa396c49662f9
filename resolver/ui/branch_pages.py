"""A branch's timeline (what it was served, coloured by decision) and one exchange in full.

These are the pages a person uses to answer "why did this branch get that answer": each event
shows its decision, occurrence and fingerprint, and links to the recorded request and response
and to the same address on the sibling branches.
"""

from __future__ import annotations

from collections.abc import Sequence

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from engine.simulation import is_simulated
from resolver.errors import NotFound
from resolver.routes.tapes import find_tape
from resolver.schemas import check_branch_path
from resolver.ui.assets import decision_class
from resolver.ui.bodies import ShownBody, show_body
from resolver.ui.layout import UI_ROOT, badge, hash_cell, legend, page
from resolver.ui.markup import Markup, join, link, table, tag, url
from resolver.ui.miss_page import miss_href
from resolver.ui.queries import events_serving
from resolver.ui.tape_pages import tape_href, timeline_href
from store import exchanges, inspect
from store.branches import child_paths, get_branch
from store.db import transaction
from store.inspect import EventRow
from store.versions import branch_versions

PAGE_SIZE = 500
SIMULATED_NOTE = (
    "Simulated: the tape's simulator wrote this answer for a sealed miss; the world never "
    "gave it. Reward code can mask asks served it (decision simulated)."
)


def register(router: APIRouter) -> None:
    router.add_api_route(
        "/tapes/{tape}/timeline", timeline, methods=["GET"], response_class=HTMLResponse
    )
    router.add_api_route(
        "/tapes/{tape}/exchanges/{exchange_id}",
        show_exchange,
        methods=["GET"],
        response_class=HTMLResponse,
    )


def exchange_href(tape: str, exchange_id: int) -> str:
    return f"{tape_href(tape)}/exchanges/{exchange_id}"


def compare_href(tape: str, key: str, occurrence: int, parent: str, left: str) -> str:
    return url(
        f"{tape_href(tape)}/compare", key=key, occurrence=occurrence, parent=parent, left=left
    )


def _strip(rows: Sequence[EventRow]) -> Markup:
    cells = [
        link(
            f"#event-{row.seq}",
            class_=f"cell {decision_class(row.decision)}",
            title=f"#{row.seq} {row.decision} {row.method} {row.url}",
            data_decision=row.decision,
        )
        for row in rows
    ]
    return tag("div", cells, class_="strip", id="strip")


def _event_row(tape: str, parent: str | None, row: EventRow) -> list[object]:
    actions: list[object] = []
    if row.exchange_id is not None:
        actions.append(link(exchange_href(tape, row.exchange_id), "exchange"))
    elif row.decision == "refused":
        actions.append(link(miss_href(tape, row.branch, row.seq), "why missed", class_="why-miss"))
    if parent is not None:
        actions += [
            " · ",
            link(compare_href(tape, row.key_hash, row.occurrence, parent, row.branch), "siblings"),
        ]
    return [
        tag("a", row.seq, id=f"event-{row.seq}"),
        badge(row.decision),
        row.method,
        tag("span", row.url, class_="mono"),
        row.occurrence,
        hash_cell(row.fingerprint),
        "" if row.status is None else row.status,
        actions,
    ]


def timeline(
    tape: str,
    request: Request,
    branch: str = Query(default="root"),
    after: int = Query(default=0, ge=0),
) -> HTMLResponse:
    check_branch_path(branch)
    with transaction(request.app.state.store.read) as session:
        found = find_tape(tape, session=session)
        row = get_branch(found.id, branch, session=session)
        if row is None:
            raise NotFound(f"branch {branch!r} does not exist on tape {tape!r}")
        parent, fork_point, count = row.parent_path, row.fork_point, row.event_count
        children = child_paths(found.id, branch, session=session)
        versions = branch_versions(row.id, session=session)
        # One past the page: a next page is offered only when an event is there to show.
        events = inspect.events_page(
            found.id, branch=branch, after=after, limit=PAGE_SIZE + 1, session=session
        )
    more = len(events) > PAGE_SIZE
    events = events[:PAGE_SIZE]
    facts: list[object] = [f"{count} events"]
    if parent is not None:
        facts += [
            " · forked from ",
            link(timeline_href(tape, parent), parent),
            f" at its event {fork_point}",
        ]
    if children:
        facts += [
            " · children: ",
            [tag("span", link(timeline_href(tape, c), c), " ") for c in children],
        ]
    written: object = (
        [
            "written in this lineage: ",
            join([tag("code", name) for name in sorted(versions)], ", "),
            " (reads that depend on them are fetched fresh)",
        ]
        if versions
        else ("no writes in this lineage: every read shares the base recording")
    )
    content: list[object] = [
        tag("p", facts),
        tag("p", written, class_="muted"),
        legend(),
        _strip(events),
    ]
    if events:
        content.append(
            table(
                ["#", "decision", "method", "url", "occurrence", "fingerprint", "status", ""],
                [_event_row(tape, parent, event) for event in events],
                id="timeline",
            )
        )
    else:
        content.append(tag("p", "This branch has no events yet.", class_="note"))
    if more:
        content.append(
            link(
                url(f"{tape_href(tape)}/timeline", branch=branch, after=events[-1].seq),
                "next page →",
            )
        )
    return page(
        f"Branch {branch}",
        *content,
        crumbs=[(UI_ROOT, "tapes"), (tape_href(tape), tape), (timeline_href(tape, branch), branch)],
    )


def _headers_table(headers: Sequence[Sequence[str]]) -> Markup:
    if not headers:
        return tag("p", "no headers", class_="muted")
    return table(
        ["header", "value"],
        [[pair[0], tag("span", pair[1], class_="mono")] for pair in headers],
        class_="headers",
    )


def _body(shown: ShownBody) -> Markup:
    if shown.kind == "empty":
        return tag("p", "empty body", class_="muted")
    notes = [tag("p", note, class_="note") for note in shown.notes]
    return Markup(tag("div", notes) + tag("pre", shown.text, class_=f"body {shown.kind}"))


def show_exchange(tape: str, exchange_id: int, request: Request) -> HTMLResponse:
    with transaction(request.app.state.store.read) as session:
        found = find_tape(tape, session=session)
        row = exchanges.get_exchange(found.id, exchange_id, session=session)
        if row is None:
            raise NotFound(f"exchange {exchange_id} is not on tape {tape!r}")
        request_body = exchanges.get_blob(row.request_body_sha, session=session)
        response_body = exchanges.get_blob(row.response_body_sha, session=session)
        served = events_serving(found.id, exchange_id, session=session)
        address = table(
            ["request key", "occurrence", "fingerprint", "key hash"],
            [
                [
                    tag("span", row.key_readable, class_="mono"),
                    row.occurrence,
                    hash_cell(row.fingerprint),
                    hash_cell(row.key_hash),
                ]
            ],
            id="address",
        )
        request_part = [
            tag("h2", "Request"),
            tag("p", tag("code", f"{row.request_method} {row.request_url}")),
            _headers_table(row.request_headers),
            _body(show_body(request_body, row.request_headers)),
        ]
        if row.error_kind is not None:
            response_part = [
                tag("h2", "Response"),
                tag(
                    "p",
                    f"upstream error ({row.error_kind}): {row.error_message or ''}",
                    class_="error",
                ),
            ]
        else:
            headers = row.response_headers or []
            simulated = (
                [tag("p", SIMULATED_NOTE, class_="note simulated", id="simulated")]
                if is_simulated(headers)
                else []
            )
            response_part = [
                tag("h2", "Response"),
                *simulated,
                tag("p", tag("strong", f"status {row.response_status}")),
                _headers_table(headers),
                _body(show_body(response_body, headers)),
            ]
    served_rows = [
        [
            link(
                timeline_href(tape, event.branch) + f"#event-{event.seq}",
                f"{event.branch} #{event.seq}",
            ),
            badge(event.decision),
        ]
        for event in served
    ]
    return page(
        f"Exchange {exchange_id}",
        tag("p", "Shown as stored: redacted headers never reached the store.", class_="muted"),
        address,
        tag("div", tag("section", request_part), tag("section", response_part), class_="columns"),
        tag("h2", f"Served to {len(served)} ask(s)"),
        table(["branch event", "decision"], served_rows, id="served"),
        crumbs=[
            (UI_ROOT, "tapes"),
            (tape_href(tape), tape),
            (exchange_href(tape, exchange_id), f"exchange {exchange_id}"),
        ],
    )
