"""The viewer's pages, rendered by the real app over a fork recorded through /v1/resolve."""

from __future__ import annotations

import html
import re

from fastapi.testclient import TestClient

from tests.resolver.ui.workflow import HOSTILE_PATH, Recorded


def _main(page: str) -> str:
    return page[page.index("<main>") :]


def _row(page: str, marker: str) -> str:
    """The table row containing `marker`."""
    for row in re.findall(r"<tr[^>]*>.*?</tr>", page, flags=re.S):
        if marker in row:
            return row
    raise AssertionError(f"no row contains {marker!r}")


def test_tape_list_links_each_tape(ui_client: TestClient, recorded: Recorded) -> None:
    page = ui_client.get("/ui")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert f'href="/ui/tapes/{recorded.tape}"' in page.text
    assert "default-src 'none'" in page.headers["content-security-policy"]
    assert ui_client.get("/ui/").text == page.text


def test_tape_page_shows_tree_and_report(ui_client: TestClient, recorded: Recorded) -> None:
    page = _main(ui_client.get(f"/ui/tapes/{recorded.tape}").text)
    tree = page[page.index('class="tree"') : page.index("<h2>Forks")]
    # b0 and b1 are nested under root in the tree.
    assert re.search(r">root</a>.*<ul>.*>root/b0</a>.*>root/b1</a>.*</ul>", tree, flags=re.S)
    totals = _row(page, "all branches")
    cells = re.findall(r"<td>([^<]*)</td>", totals)
    # reads, reads shared, live calls, upstream errors, upstream failed, unrecorded,
    # passthrough, lies
    assert cells[:8] == ["5", "1", "5", "0", "0", "0", "0", "0"]
    assert 'data-decision="upstream-failed"' in page  # the legend names it
    figure = page.index('id="report-chart"')
    chart = page[page.index("<svg", figure) : page.index("</svg>", figure)]
    assert chart.count('data-decision="shared"') == 1
    assert chart.count('data-decision="write"') == 1


def test_timeline_colours_each_event_by_decision(ui_client: TestClient, recorded: Recorded):
    page = ui_client.get(f"/ui/tapes/{recorded.tape}/timeline", params={"branch": "root/b1"}).text
    strip = page[page.index('id="strip"') : page.index("</div>", page.index('id="strip"'))]
    assert re.findall(r'data-decision="([^"]+)"', strip) == ["shared", "write", "refetched"]
    assert 'class="cell d-refetched"' in strip
    refetched = _row(page, "d-refetched")
    assert recorded.doc_b1.fingerprint[:12] in refetched
    assert "forked from" in page
    written = page[page.index("written in this lineage") :].split("</p>")[0]
    assert re.findall(r"<code>([^<]+)</code>", written) == ["origin:https://api.example.com"]


def test_exchange_page_pretty_prints_and_keeps_redaction(ui_client: TestClient, recorded):
    events = ui_client.get(
        f"/v1/tapes/{recorded.tape}/events", params={"branch": "root/b0"}
    ).json()["events"]
    exchange_id = events[0]["exchange_id"]
    page = ui_client.get(f"/ui/tapes/{recorded.tape}/exchanges/{exchange_id}").text
    body = html.unescape(re.search(r'<pre class="body json">(.*?)</pre>', page, re.S).group(1))
    assert body.startswith('{\n  "doc": null,')  # pretty-printed, not the compact stored form
    assert "s3cret" not in page and "[redacted:name-authorization:" in page
    served = page[page.index('id="served"') :]
    assert "root/b0 #1" in served and "root/b1 #1" in served  # one recording, two branches
    assert ui_client.get(f"/ui/tapes/{recorded.tape}/exchanges/999999").status_code == 404


def test_compare_names_the_write_that_split_the_fingerprint(ui_client: TestClient, recorded):
    key = recorded.doc_b1.resolution["request_key"]
    page = ui_client.get(
        f"/ui/tapes/{recorded.tape}/compare",
        params={"key": key, "occurrence": 0, "parent": "root"},
    ).text
    b1 = _row(page, "root/b1</a>")
    assert "d-refetched" in b1 and "event 2: POST https://api.example.com/docs/1" in b1
    exchange = re.search(r'href="/ui/tapes/[^"]+/exchanges/(\d+)">([^<]+)</a>', b1)
    assert exchange and exchange.group(2) == f"exchange {exchange.group(1)}"
    assert not re.search(r">#\d", b1), "no bare #N: an exchange id and an event number differ"
    assert "no write in lineage" in _row(page, "root/b0</a>")
    changed = re.findall(r'<tr class="changed">(.*?)</tr>', page, flags=re.S)
    assert any("b1 wrote this" in html.unescape(row) for row in changed)


def test_compare_of_a_shared_read_says_identical(ui_client: TestClient, recorded: Recorded):
    key = recorded.search_b0.resolution["request_key"]
    page = ui_client.get(
        f"/ui/tapes/{recorded.tape}/compare", params={"key": key, "occurrence": 0}
    ).text
    assert "identical bytes: one recording shared" in page
    assert 'class="changed"' not in page


def test_recorded_markup_is_escaped(ui_client: TestClient, recorded: Recorded) -> None:
    events = ui_client.get(f"/v1/tapes/{recorded.tape}/events", params={"branch": "root/b0"})
    hostile = events.json()["events"][-1]
    assert HOSTILE_PATH in hostile["url"]
    pages = [
        ui_client.get(f"/ui/tapes/{recorded.tape}/timeline", params={"branch": "root/b0"}).text,
        ui_client.get(f"/ui/tapes/{recorded.tape}/exchanges/{hostile['exchange_id']}").text,
    ]
    for page in pages:
        assert "<script" not in page.lower()
        assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    # In the pretty-printed response body too, not only in the URL.
    assert "&quot;path&quot;: &quot;/notes/&lt;script&gt;" in pages[1]


def test_bad_input_gets_a_readable_page(ui_client: TestClient, recorded: Recorded) -> None:
    missing = ui_client.get("/ui/tapes/no-such-tape")
    assert missing.status_code == 404 and "no-such-tape" in missing.text
    assert missing.headers["content-type"].startswith("text/html")
    branch = ui_client.get(f"/ui/tapes/{recorded.tape}/timeline", params={"branch": "../x"})
    assert branch.status_code == 422 and "malformed" in branch.text
    key = ui_client.get(
        f"/ui/tapes/{recorded.tape}/compare", params={"key": "nothex", "occurrence": 0}
    )
    assert key.status_code == 422 and "64 lowercase hex" in key.text
    occurrence = ui_client.get(
        f"/ui/tapes/{recorded.tape}/compare", params={"key": "a" * 64, "occurrence": "x"}
    )
    assert occurrence.status_code == 422 and "occurrence" in occurrence.text


def test_stylesheet_is_served_locally(ui_client: TestClient) -> None:
    sheet = ui_client.get("/ui/style.css")
    assert sheet.status_code == 200 and sheet.headers["content-type"].startswith("text/css")
    assert ".d-refetched" in sheet.text and "http" not in sheet.text


def test_compare_picks_the_differing_sibling_and_offers_the_others(ui_client, ui_proxy) -> None:
    tape = "viewer-three"
    ui_proxy.open(tape)
    b0, b1, b2 = ui_proxy.fork(tape, children=3)
    ui_proxy.ask(tape, b2, "POST", "/docs/7", body=b"mine")
    served = [ui_proxy.ask(tape, branch, path="/docs/7") for branch in (b0, b1, b2)]
    assert [s.decision for s in served] == ["recorded", "shared", "refetched"]
    key = served[0].resolution["request_key"]
    page = ui_client.get(f"/ui/tapes/{tape}/compare", params={"key": key, "occurrence": 0}).text
    assert "root/b0 ↔ root/b2" in page  # the default right side is the one that differs
    choose = re.search(r'<a href="([^"]+)" class="choose">diff with left</a>', page)
    assert choose and "right=root%2Fb1" in choose.group(1)
    switched = ui_client.get(html.unescape(choose.group(1))).text
    assert "root/b0 ↔ root/b1: identical bytes: one recording shared" in switched


def test_tape_page_draws_the_branch_tree_with_counts(ui_client: TestClient, recorded) -> None:
    page = _main(ui_client.get(f"/ui/tapes/{recorded.tape}").text)
    drawing = page[page.index('id="branch-tree"') : page.index("</svg>")]
    nodes = re.findall(r'data-branch="([^"]+)" data-shared="(\d+)" data-refetched="(\d+)"', drawing)
    # b0 recorded the search and b1 shared it; b1 refetched the document it wrote.
    assert sorted(nodes) == [("root", "0", "0"), ("root/b0", "0", "0"), ("root/b1", "1", "1")]
    assert drawing.count("<path") == 2  # root -> b0, root -> b1
    forks = page[page.index('id="forks"') :]
    cells = re.findall(r"<td>([^<]*)</td>", forks[: forks.index("</table>")])
    # children, reads, share rate, refetch rate, live calls, distinct worlds
    assert cells[:6] == ["2", "5", "0.200", "0.200", "5", "2"]


def test_tape_page_lists_an_unrecorded_write_with_what_it_invalidated(
    ui_client: TestClient, ui_proxy
) -> None:
    tape = "viewer-unrecorded"
    ui_proxy.open(tape)
    (b0,) = ui_proxy.fork(tape, children=1)
    # A write handed out to go live whose record never comes (its resolver died, say).
    assert ui_proxy.resolve(tape, b0, "POST", "/docs/9", body=b"w").json()["action"] == "forward"
    page = _main(ui_client.get(f"/ui/tapes/{tape}").text)
    listed = page[page.index('id="unrecorded"') :]
    listed = listed[: listed.index("</table>")]
    assert "https://api.example.com/docs/9" in listed and "POST" in listed
    assert "origin:https://api.example.com" in listed


def test_tape_page_says_which_writes_could_have_been_shared(ui_client: TestClient, ui_proxy):
    tape = "viewer-advice"
    ui_proxy.open(tape)
    b0, b1 = ui_proxy.fork(tape, children=2)
    for branch in (b0, b1):
        ui_proxy.ask(tape, branch, "POST", "/retrieve", body=b'{"query": "solar"}')
        ui_proxy.ask(tape, branch, "POST", "/notes", body=f'{{"by": "{branch}"}}'.encode())
    page = _main(ui_client.get(f"/ui/tapes/{tape}").text)
    advice = page[page.index('id="advice"') :]
    advice = advice[: advice.index("</table>")]
    assert _row(advice, "/retrieve").count("shareable") == 1
    assert "keep a write: no two siblings sent the identical request" in _row(advice, "/notes")
