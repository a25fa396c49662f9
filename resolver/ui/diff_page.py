"""Two branches' whole timelines, A against B: the viewer's form of `groundhog tape diff`.

The compare page shows one address across siblings; to see where two rollouts went apart a
person needs the timelines side by side, the first request that differs marked, and each read
that is not shared with its reason. The numbers are `resolver.routes.diff.tape_diff`'s, so the
page, the API and the CLI agree.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from resolver.routes.diff import tape_diff
from resolver.routes.tapes import find_tape
from resolver.ui.branch_pages import exchange_href
from resolver.ui.layout import UI_ROOT, badge, page
from resolver.ui.markup import Markup, link, table, tag, url
from resolver.ui.tape_pages import tape_href, timeline_href
from store.db import transaction


def register(router: APIRouter) -> None:
    router.add_api_route("/tapes/{tape}/diff", diff, methods=["GET"], response_class=HTMLResponse)


def diff_href(tape: str, a: str, b: str) -> str:
    return url(f"{tape_href(tape)}/diff", a=a, b=b)


def _cell(tape: str, event: dict[str, Any] | None) -> list[object]:
    if event is None:
        return [tag("span", "—", class_="muted"), "", ""]
    where = link(timeline_href(tape, event["branch"]) + f"#event-{event['seq']}",
                 f"{event['branch']} event {event['seq']}")  # fmt: skip
    answer = (
        link(exchange_href(tape, event["exchange_id"]), f"exchange {event['exchange_id']}")
        if event["exchange_id"] is not None
        else ""
    )
    return [
        where,
        tag("code", f"{event['method']} {event['url']}"),
        [badge(event["decision"]), " ", answer],
    ]


def _timelines(tape: str, diff: dict[str, Any]) -> Markup:
    """Both tails side by side, position by position; the first divergent request marked."""
    first = diff["first_divergence"]
    tail_a, tail_b = diff["timelines"]["a"], diff["timelines"]["b"]
    rows = []
    for index in range(max(len(tail_a), len(tail_b))):
        a = tail_a[index] if index < len(tail_a) else None
        b = tail_b[index] if index < len(tail_b) else None
        cells = [index + 1, *_cell(tape, a), *_cell(tape, b)]
        diverged = first is not None and first["position"] == index
        rows.append(
            tag("tr", [tag("td", c) for c in cells], class_="diverged" if diverged else None)
        )
    headings = ("#", "A", "request", "served", "B", "request", "served")
    head = tag("thead", tag("tr", [tag("th", heading) for heading in headings]))
    return tag("table", head, tag("tbody", rows), id="timelines")


def diff(
    tape: str,
    request: Request,
    a: str = Query(description="a branch path"),
    b: str = Query(description="another branch path"),
) -> HTMLResponse:
    with transaction(request.app.state.store.read) as session:
        result = tape_diff(find_tape(tape, session=session), a, b, session=session)
    first = result["first_divergence"]
    summary = tag(
        "p",
        f"A = {a}, B = {b}: both inherit {result['shared_prefix']} event(s) of ",
        link(timeline_href(tape, result["common"]), result["common"]),
        f"; after that A asked {result['events']['a']}, B {result['events']['b']}. ",
        "No divergent request." if first is None
        else f"First divergent request: {first['position'] + 1} after the split (marked).",
        id="diff-summary",
    )  # fmt: skip
    not_shared = table(
        ["A", "request", "served", "B", "request", "served", "why", "detail"],
        [[*_cell(tape, i["a"]), *_cell(tape, i["b"]), tag("strong", i["why"]), i["detail"]]
         for i in result["reads_not_shared"]],
        id="not-shared",
    )  # fmt: skip
    shared = table(
        ["A", "request", "served", "B", "request", "served"],
        [[*_cell(tape, i["a"]), *_cell(tape, i["b"])] for i in result["reads_shared"]],
        id="shared",
    )
    counts = result["counts"]
    return page(
        f"{a} against {b}",
        summary,
        tag("h2", f"Reads not shared ({counts['reads_not_shared']})"),
        not_shared,
        tag("h2", f"Reads shared ({counts['reads_shared']})"),
        shared,
        tag("h2", "Timelines after the split"),
        _timelines(tape, result),
        crumbs=[(UI_ROOT, "tapes"), (tape_href(tape), tape)],
    )
