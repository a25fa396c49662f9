"""The tape page's sections beside the report's numbers: what they mean and cannot show.

A report that says `lies 0` beside a world that leaked one sibling's write into every sibling's
shared read invites the wrong conclusion. These sections put the report's own words
(`groundhog.protocol.report_notes`) on the page and list the reads flagged possibly
contaminated, each linked to its recording and to the write that may be in it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from resolver.ui.branch_pages import exchange_href
from resolver.ui.markup import Markup, join, link, table, tag
from resolver.ui.tape_pages import timeline_href


def _event_link(tape: str, event: Mapping[str, Any]) -> Markup:
    href = timeline_href(tape, event["branch"]) + f"#event-{event['seq']}"
    return link(href, f"{event['branch']} event {event['seq']}")


def knowledge(tape: str, report: Mapping[str, Any]) -> Markup:
    notes = report.get("notes", {})
    parts: list[object] = [
        tag("p", notes.get("lies", ""), class_="note", id="note-lies"),
        tag("p", notes.get("cannot_see", ""), class_="note", id="note-cannot-see"),
    ]
    suspects = report.get("possibly_contaminated", [])
    if not suspects:
        parts.append(tag("p", "No read is flagged possibly contaminated.", class_="muted"))
        return join(parts)
    parts.append(tag("p", notes.get("possibly_contaminated", ""), class_="note"))
    rows = [
        [
            link(exchange_href(tape, s["exchange_id"]), f"exchange {s['exchange_id']}"),
            tag("code", s["url"]),
            _event_link(tape, s["recorded_by"]),
            [_event_link(tape, s["after_write"]), " ",
             tag("code", f"{s['after_write']['method']} {s['after_write']['url']}")],
            s["served"],
        ]
        for s in suspects
    ]  # fmt: skip
    headings = ["recording", "read", "recorded by", "after the live write of", "reads served it"]
    parts.append(table(headings, rows, id="possibly-contaminated"))
    return join(parts)


def _money(value: float | None) -> str:
    return "—" if value is None else f"{value:.4f}"


def costs(tape: str, report: Mapping[str, Any]) -> Markup:
    """Live calls made and avoided, and their price when the tape has `prices`."""
    headings = ["", "live calls made", "avoided (served from the tape)", "cost", "cost avoided"]

    def row(label: object, counts: Mapping[str, Any]) -> list[object]:
        return [label, counts["live_calls"], counts["avoided"],
                _money(counts["cost"]), _money(counts["cost_avoided"])]  # fmt: skip

    rows = [row(tag("strong", "whole tape"), report["totals"])]
    rows += [row(f"group: fork of {parent} ({len(g['children'])} children)", g)
             for parent, g in report["groups"].items()]  # fmt: skip
    rows += [
        row(link(timeline_href(tape, path), path), b) for path, b in report["branches"].items()
    ]
    hosts = [
        [tag("code", host), "—" if h["price"] is None else h["price"], h["live_calls"],
         h["avoided"], _money(h["cost"]), _money(h["cost_avoided"])]
        for host, h in report["hosts"].items()
    ]  # fmt: skip
    priced = (
        "Priced per live call by the tape's prices."
        if report["priced"]
        else "The tape names no prices (config `prices`: host → price of one live call)."
    )
    parts: list[object] = [tag("p", priced, class_="note"), table(headings, rows, id="costs")]
    if report["unpriced_hosts"]:
        parts.append(
            tag("p", "No price for: " + ", ".join(report["unpriced_hosts"]), class_="note")
        )
    headings = ["host", "price", "live calls", "avoided", "cost", "cost avoided"]
    parts.append(table(headings, hosts, id="cost-hosts"))
    return join(parts)


def advice(found: Mapping[str, Any]) -> Markup:
    """The advisor's verdict per write operation (resolver/advice.py): never applied."""
    operations = found.get("operations", [])
    if not operations:
        return tag("p", "No write went live: nothing to advise.", class_="muted")
    note = (
        f"{found['could_share']} live writes could have been shared by the rules below. They are "
        "advice, never applied: a wrong read rule serves stale answers. `groundhog tape advise "
        "TAPE` prints them as a rules file to review."
    )
    rows = [
        [
            tag("code", item["operation"]),
            item["live_calls"],
            item["could_share"],
            "shareable" if item["shareable"] else f"keep a write: {item['why_not']}",
            join([tag("div", line) for line in item["evidence"]]),
        ]
        for item in operations
    ]
    headings = ["operation", "live calls", "could share", "verdict", "evidence"]
    return join([tag("p", note, class_="note"), table(headings, rows, id="advice")])
