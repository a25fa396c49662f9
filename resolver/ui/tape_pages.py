"""The viewer's first two pages: the list of tapes, and one tape (branch tree, report, chart).

A person opening `/ui` wants to see which tapes exist, how a tape's branches were forked, and
the report's numbers (reads shared, live calls, lies) without reading JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from resolver.advice import advice_section
from resolver.routes.tapes import find_tape
from resolver.tape_signals import cost_section, signed_report
from resolver.ui.chart import decisions_chart
from resolver.ui.layout import UI_ROOT, badge, legend, page
from resolver.ui.markup import Markup, link, path_segment, table, tag, url
from resolver.ui.tree import parents_of, tree_svg
from resolver.views import tape_view
from store.branches import list_branches
from store.db import transaction
from store.models import Branch
from store.tapes import list_tapes as list_stored_tapes

REPORT_FIELDS = (
    ("reads", "reads"),
    ("reads_shared", "reads shared"),
    ("live_calls", "live calls"),
    ("upstream_errors", "upstream errors"),
    ("upstream_failed", "upstream failed (not recorded)"),
    ("unrecorded", "went live, unrecorded"),
    ("passthrough", "passthrough"),
    ("lies", "lies"),
    ("possibly_contaminated", "possibly contaminated"),
)


def tape_href(name: str) -> str:
    return f"{UI_ROOT}/tapes/{path_segment(name)}"


def timeline_href(tape: str, branch: str) -> str:
    return url(f"{tape_href(tape)}/timeline", branch=branch)


def register(router: APIRouter) -> None:
    router.add_api_route("/", list_tapes, methods=["GET"], response_class=HTMLResponse)
    router.add_api_route("/tapes/{tape}", show_tape, methods=["GET"], response_class=HTMLResponse)


def list_tapes(request: Request) -> HTMLResponse:
    with transaction(request.app.state.store.read) as session:
        tapes = [tape_view(t, session=session) for t in list_stored_tapes(session=session)]
    rows = [
        [
            link(tape_href(t["name"]), t["name"], class_="tape-link"),
            t["mode"],
            "online" if t["online"] else "sealed",
            t["dependency_model"],
            t["world_seed"],
            t["branches"],
            t["exchanges"],
        ]
        for t in tapes
    ]
    if not rows:
        body: Markup = tag(
            "p",
            "No tapes yet. Open one with `groundhog tape open NAME` or POST /v1/tapes.",
            class_="note",
        )
    else:
        body = table(
            ["tape", "mode", "state", "dependency model", "world seed", "branches", "exchanges"],
            rows,
            id="tapes",
        )
    return page("Tapes", body)


def _tree(branches: list[Branch], tape: str, report: Mapping[str, Any]) -> Markup:
    children: dict[str | None, list[Branch]] = {}
    paths = {branch.path for branch in branches}
    for branch in branches:
        parent = branch.parent_path if branch.parent_path in paths else None
        children.setdefault(parent, []).append(branch)

    def node(branch: Branch) -> Markup:
        counts = report["branches"].get(branch.path, {})
        detail = (
            f" · {branch.event_count} events · {counts.get('reads_shared', 0)} shared"
            f" · {counts.get('refetched', 0)} refetched"
        )
        if branch.parent_path:
            detail += f" · forked at {branch.parent_path} event {branch.fork_point}"
        below = children.get(branch.path, [])
        nested = tag("ul", [node(child) for child in below]) if below else ""
        label = link(timeline_href(tape, branch.path), branch.path, class_="branch-link")
        return tag("li", label, tag("span", detail, class_="muted"), nested)

    return tag("ul", [node(branch) for branch in children.get(None, [])], class_="tree")


def _counts_row(label: object, counts: Mapping[str, Any]) -> list[object]:
    decisions = counts.get("decisions", {})
    mix = [tag("span", badge(name), " ", count, " ") for name, count in decisions.items()]
    return [
        label,
        *(counts.get(field, 0) for field, _ in REPORT_FIELDS),
        f"{counts.get('lie_rate', 0.0):.3f}",
        mix,
    ]


def _report(tape: str, report: Mapping[str, Any]) -> Markup:
    headings = ["branch", *(label for _, label in REPORT_FIELDS), "lie rate", "decisions"]
    rows = [_counts_row(tag("strong", "all branches"), report["totals"])]
    rows += [
        _counts_row(link(timeline_href(tape, path), path), counts)
        for path, counts in report["branches"].items()
    ]
    return Markup(
        table(headings, rows, id="report")
        + legend()
        + tag("figure", decisions_chart(report["branches"]), id="report-chart")
    )


def _forks(tape: str, report: Mapping[str, Any]) -> Markup:
    """Per fork: how much of the group's reading was shared, refetched, and went live."""
    forks = report.get("forks", {})
    if not forks:
        return tag("p", "No forks yet.", class_="muted")
    rows = [
        [
            link(timeline_href(tape, parent), parent),
            len(fork["children"]),
            fork["reads"],
            f"{fork['share_rate']:.3f}",
            f"{fork['refetch_rate']:.3f}",
            fork["live_calls"],
            fork["distinct_worlds"],
        ]
        for parent, fork in forks.items()
    ]
    headings = ["fork of", "children", "reads", "share rate", "refetch rate", "live calls"]
    return table([*headings, "distinct worlds"], rows, id="forks")


def _unrecorded(tape: str, report: Mapping[str, Any]) -> Markup:
    """The live calls whose answer never reached the tape; a write with what it invalidated
    (its branch refetches every read of those, never serving the base)."""
    listed = report.get("unrecorded", [])
    if not listed:
        return tag("p", "Every live call's answer reached the tape.", class_="muted")
    rows = [
        [
            link(timeline_href(tape, call["branch"]), call["branch"]),
            call["seq"],
            call.get("kind", "write"),
            call["method"],
            call["url"],
            badge(call["decision"]),
            ", ".join(call.get("invalidated", [])) or "—",
        ]
        for call in listed
    ]
    headings = ["branch", "event", "kind", "method", "url", "decision", "invalidated"]
    return table(headings, rows, id="unrecorded")


def show_tape(tape: str, request: Request) -> HTMLResponse:
    # Imported here: the sections link to timelines and exchanges, whose pages import this one.
    from resolver.ui import report_sections

    with transaction(request.app.state.store.read) as session:
        found = find_tape(tape, session=session)
        view = tape_view(found, session=session)
        branches = list_branches(found.id, session=session)
        report = signed_report(found, session=session)
        spent = cost_section(found, session=session)
        advice = advice_section(found.id, session=session)
        tree = _tree(branches, found.name, report)
        drawing = tree_svg(
            parents_of(branches), report["branches"], lambda path: timeline_href(found.name, path)
        )
    summary = table(
        ["mode", "state", "dependency model", "world seed", "exchanges", "branches"],
        [
            [
                view["mode"],
                "online" if view["online"] else "sealed",
                view["dependency_model"],
                view["world_seed"],
                view["exchanges"],
                view["branches"],
            ]
        ],
        id="tape-summary",
    )
    return page(
        f"Tape {found.name}",
        summary,
        tag("h2", "Branches"),
        tag("figure", drawing, id="tree-figure"),
        tree,
        tag("h2", "Forks"),
        _forks(found.name, report),
        tag("h2", "Report"),
        _report(found.name, report),
        tag("h2", "What the report knows, and what it cannot"),
        report_sections.knowledge(found.name, report),
        tag("h2", "Live calls and their cost"),
        report_sections.costs(found.name, spent),
        tag("h2", "Could have been shared"),
        report_sections.advice(advice),
        tag("h2", "Went live, unrecorded"),
        _unrecorded(found.name, report),
        crumbs=[(UI_ROOT, "tapes"), (tape_href(found.name), found.name)],
    )
