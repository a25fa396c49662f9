"""Unit tests of resolver/ui/branch_pages.py: the timeline and exchange pages, and their links.

tests/resolver/ui/test_pages.py looks at these pages over one recorded fork (the decision strip,
pretty-printed bodies, escaping). This file covers what that fork never reaches: the links the
module builds (checked by parsing them back), the timeline's paging, an empty branch, an unknown
branch or exchange, each event row's actions (exchange, why missed, siblings), and an exchange
page for an upstream failure and for a simulated answer.
"""

from __future__ import annotations

import html
import itertools
import re
from urllib.parse import parse_qs, urlsplit

import pytest
from fastapi import APIRouter
from fastapi.testclient import TestClient
from sqlalchemy import select

from groundhog.protocol.headers import SIMULATED as SIMULATED_HEADER
from resolver.ui import branch_pages
from resolver.ui.branch_pages import SIMULATED_NOTE, compare_href, exchange_href
from resolver.ui.miss_page import miss_href
from resolver.ui.tape_pages import tape_href, timeline_href
from store.db import Store, transaction
from store.models import Exchange
from tests.resolver.proxy_double import ProxyDouble

_tapes = itertools.count()


def new_tape(proxy: ProxyDouble, **config: object) -> str:
    name = f"branch-pages-{next(_tapes)}"
    proxy.open(name, **config)
    return name


def timeline_page(client: TestClient, tape: str, branch: str) -> str:
    answer = client.get(f"/ui/tapes/{tape}/timeline", params={"branch": branch})
    assert answer.status_code == 200, answer.text
    return answer.text


def event_rows(page: str) -> dict[int, str]:
    """The timeline table's rows by event number."""
    if 'id="timeline"' not in page:
        return {}
    table = page[page.index('id="timeline"') : page.index("</table>", page.index('id="timeline"'))]
    rows = re.findall(r"<tr>(.*?)</tr>", table, flags=re.S)
    numbered = {}
    for row in rows:
        found = re.search(r'<a id="event-(\d+)">', row)
        if found:
            numbered[int(found.group(1))] = row
    return numbered


def hrefs(fragment: str) -> list[str]:
    return [html.unescape(href) for href in re.findall(r'href="([^"]*)"', fragment)]


def next_page(page: str) -> str | None:
    found = re.search(r'<a href="([^"]*)">next page →</a>', page)
    return html.unescape(found.group(1)) if found else None


def test_links_parse_back_to_what_they_name() -> None:
    tape = "my tape/with?odd&chars"
    assert exchange_href(tape, 42) == f"{tape_href(tape)}/exchanges/42"
    assert "?" not in exchange_href(tape, 42).removeprefix(tape_href(tape))
    href = compare_href(tape, "k&ey=1", 3, "root/b0", "root/b0/c1")
    parts = urlsplit(href)
    assert parts.path == f"{tape_href(tape)}/compare"
    assert parse_qs(parts.query) == {
        "key": ["k&ey=1"], "occurrence": ["3"], "parent": ["root/b0"], "left": ["root/b0/c1"],
    }  # fmt: skip


def test_register_adds_the_two_pages() -> None:
    router = APIRouter()
    branch_pages.register(router)
    paths = {getattr(route, "path", None) for route in router.routes}
    assert paths == {"/tapes/{tape}/timeline", "/tapes/{tape}/exchanges/{exchange_id}"}


def branch_with_events(ui_proxy: ProxyDouble, count: int) -> tuple[str, str]:
    """A new tape's child branch that asked `count` distinct reads."""
    tape = new_tape(ui_proxy)
    (branch,) = ui_proxy.fork(tape, children=1)
    for index in range(count):
        ui_proxy.ask(tape, branch, path=f"/item/{index}")
    return tape, branch


def test_the_timeline_pages_its_events(
    ui_client: TestClient, ui_proxy: ProxyDouble, monkeypatch: pytest.MonkeyPatch
) -> None:
    tape, branch = branch_with_events(ui_proxy, 5)
    monkeypatch.setattr(branch_pages, "PAGE_SIZE", 2)

    seen: list[int] = []
    page = timeline_page(ui_client, tape, branch)
    for _ in range(5):  # far more pages than 5 events in pages of 2 need
        rows = event_rows(page)
        assert "5 events" in page and len(rows) <= 2
        seen += sorted(rows)
        link = next_page(page)
        if link is None:
            break
        query = parse_qs(urlsplit(link).query)
        assert query == {"branch": [branch], "after": [str(max(rows))]}
        answer = ui_client.get(link)
        assert answer.status_code == 200
        page = answer.text
    assert seen == [1, 2, 3, 4, 5]
    assert ui_client.get(f"/ui/tapes/{tape}/timeline", params={"after": -1}).status_code == 422


def test_a_branch_of_exactly_one_page_offers_no_next_page(
    ui_client: TestClient, ui_proxy: ProxyDouble, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found writing these tests: a full last page linked to an empty one."""
    tape, branch = branch_with_events(ui_proxy, 2)
    monkeypatch.setattr(branch_pages, "PAGE_SIZE", 2)
    page = timeline_page(ui_client, tape, branch)
    assert sorted(event_rows(page)) == [1, 2]
    assert next_page(page) is None


def test_an_empty_branch_says_so_and_names_its_children(
    ui_client: TestClient, ui_proxy: ProxyDouble
) -> None:
    tape = new_tape(ui_proxy)
    children = ui_proxy.fork(tape, children=2)
    page = timeline_page(ui_client, tape, "root")
    assert "0 events" in page and "This branch has no events yet." in page
    assert event_rows(page) == {} and "forked from" not in page
    assert "no writes in this lineage" in page
    listed = page[page.index("children: ") : page.index("</p>", page.index("children: "))]
    assert hrefs(listed) == [timeline_href(tape, child) for child in children]


def test_an_unknown_branch_or_tape_is_a_404_page(
    ui_client: TestClient, ui_proxy: ProxyDouble
) -> None:
    tape = new_tape(ui_proxy)
    branch = ui_client.get(f"/ui/tapes/{tape}/timeline", params={"branch": "root/nope"})
    assert branch.status_code == 404 and "root/nope" in html.unescape(branch.text)
    assert branch.headers["content-type"].startswith("text/html")
    missing = ui_client.get("/ui/tapes/no-such-tape-here/timeline")
    assert missing.status_code == 404 and "no-such-tape-here" in html.unescape(missing.text)


def test_each_event_row_links_what_explains_it(
    ui_client: TestClient, ui_proxy: ProxyDouble
) -> None:
    tape = new_tape(ui_proxy)
    ui_proxy.ask(tape, "root", path="/on-root")
    (child,) = ui_proxy.fork(tape, children=1)
    recorded = ui_proxy.ask(tape, child, path="/recorded")
    assert ui_client.post(f"/v1/tapes/{tape}/seal").status_code == 200
    refused = ui_proxy.ask(tape, child, path="/never-recorded")
    assert (recorded.decision, refused.decision) == ("recorded", "refused")
    events = ui_client.get(f"/v1/tapes/{tape}/events", params={"branch": child}).json()
    exchange_id = events["events"][0]["exchange_id"]

    rows = event_rows(timeline_page(ui_client, tape, child))
    assert sorted(rows) == [1, 2]
    key = recorded.resolution["request_key"]
    assert hrefs(rows[1]) == [
        exchange_href(tape, exchange_id),
        compare_href(tape, key, recorded.occurrence, "root", child),
    ]
    refused_links = hrefs(rows[2])
    assert refused_links[0] == miss_href(tape, child, 2)
    assert 'class="why-miss"' in rows[2] and "/exchanges/" not in rows[2]
    assert urlsplit(refused_links[1]).path.endswith("/compare")  # siblings, as for any event

    root_rows = event_rows(timeline_page(ui_client, tape, "root"))
    assert list(root_rows) == [1]
    assert all("/compare" not in href for href in hrefs(root_rows[1]))  # a root has no parent


def stored_exchange(client: TestClient, tape: str, branch: str) -> int:
    events = client.get(f"/v1/tapes/{tape}/events", params={"branch": branch}).json()["events"]
    exchange_id = events[-1]["exchange_id"]
    assert isinstance(exchange_id, int)
    return exchange_id


def test_an_upstream_failure_shows_its_error_not_a_response(
    ui_client: TestClient, ui_proxy: ProxyDouble
) -> None:
    tape = new_tape(ui_proxy, record_transport_failures=True)
    ui_proxy.ask(tape, "root", path="/down", error="timeout")
    page = ui_client.get(f"/ui/tapes/{tape}/exchanges/{stored_exchange(ui_client, tape, 'root')}")
    assert page.status_code == 200
    response = page.text[page.text.index("<h2>Response</h2>") :].split("</section>")[0]
    assert re.search(r'<p class="error">upstream error \(timeout\): x</p>', response)
    assert "status " not in response and 'class="headers"' not in response


def test_a_simulated_answer_carries_the_note_and_a_world_answer_does_not(
    ui_client: TestClient, ui_proxy: ProxyDouble
) -> None:
    tape = new_tape(ui_proxy)
    ui_proxy.ask(tape, "root", path="/answer")
    exchange_id = stored_exchange(ui_client, tape, "root")
    plain = ui_client.get(f"/ui/tapes/{tape}/exchanges/{exchange_id}").text
    assert 'id="simulated"' not in plain

    store: Store = ui_client.app.state.store  # type: ignore[attr-defined]
    with transaction(store.write) as session:
        row = session.scalars(select(Exchange).where(Exchange.id == exchange_id)).one()
        row.response_headers = [*(row.response_headers or []), [SIMULATED_HEADER.lower(), "1"]]
    simulated = ui_client.get(f"/ui/tapes/{tape}/exchanges/{exchange_id}").text
    note = re.search(r'<p class="note simulated" id="simulated">(.*?)</p>', simulated)
    assert note and html.unescape(note.group(1)) == SIMULATED_NOTE


def test_an_exchange_of_another_tape_is_not_shown_under_this_one(
    ui_client: TestClient, ui_proxy: ProxyDouble
) -> None:
    first, second = new_tape(ui_proxy), new_tape(ui_proxy)
    ui_proxy.ask(first, "root", path="/mine")
    exchange_id = stored_exchange(ui_client, first, "root")
    assert ui_client.get(f"/ui/tapes/{first}/exchanges/{exchange_id}").status_code == 200
    elsewhere = ui_client.get(f"/ui/tapes/{second}/exchanges/{exchange_id}")
    assert elsewhere.status_code == 404
    assert f"exchange {exchange_id} is not on tape" in html.unescape(elsewhere.text)
