"""The viewer in headless Chromium, against a real resolver process and a fork recorded over HTTP.

Checks what a person sees: the tape name, decision badges, the branch timeline, the sibling
diff, a screenshot that is not blank, and that the browser asked nothing of any host but the
resolver. Skips, naming the fix, where Debian's chromium is not installed.
"""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest

from tests.resolver.proxy_double import ProxyDouble, World
from tests.resolver.ui.workflow import Recorded, record_fork
from tests.support.chromium import loopback_page, needs_chromium
from tests.support.servers import ServerProcess, running_server

pytestmark = needs_chromium


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    data = tmp_path_factory.mktemp("ui-browser")
    with running_server(["tests.resolver.ui.ui_server", "--data", str(data)]) as process:
        yield process


@pytest.fixture(scope="module")
def tape(server: ServerProcess) -> Recorded:
    double = ProxyDouble(server.url, World())
    try:
        return record_fork(double, "browser-demo")
    finally:
        double.http.close()


@pytest.fixture(scope="module")
def browser_page(server: ServerProcess):
    with loopback_page() as page:
        yield page


def _pixel_spread(png: bytes) -> tuple[float, int]:
    """(standard deviation of grey levels, number of distinct colours) of a screenshot."""
    image_module = pytest.importorskip("PIL.Image")
    stat_module = pytest.importorskip("PIL.ImageStat")
    image = image_module.open(io.BytesIO(png)).convert("RGB")
    spread = stat_module.Stat(image.convert("L")).stddev[0]
    colours = image.getcolors(maxcolors=1 << 20) or []
    return spread, len(colours)


def test_a_person_can_follow_a_fork_in_the_browser(server, tape: Recorded, browser_page) -> None:
    page = browser_page
    page.goto(f"{server.url}/ui")
    page.get_by_role("link", name=tape.tape).click()
    assert page.locator("h1").inner_text() == f"Tape {tape.tape}"
    assert page.locator("#report-chart svg rect").count() >= 4
    assert page.locator("ul.tree").get_by_role("link", name="root/b1").is_visible()

    page.locator("ul.tree").get_by_role("link", name="root/b1").click()
    assert page.locator("h1").inner_text() == "Branch root/b1"
    badges = page.locator("#timeline .badge").all_inner_texts()
    assert badges == ["shared", "write", "refetched"]
    assert page.locator("#strip a.d-refetched").is_visible()
    screenshot = page.screenshot(full_page=True)
    spread, colours = _pixel_spread(screenshot)
    assert spread > 10 and colours > 20, (spread, colours)

    page.locator("#timeline tr", has_text="refetched").get_by_role("link", name="siblings").click()
    assert page.locator("h1").inner_text() == "Address across siblings"
    assert "event 2: POST https://api.example.com/docs/1" in page.locator("#siblings").inner_text()
    changed = page.locator("#diff tr.changed").all_inner_texts()
    assert any("b1 wrote this" in row for row in changed)

    page.goto(f"{server.url}/ui/tapes/{tape.tape}/timeline?branch=root%2Fb0")
    page.locator("#timeline tr", has_text="/notes/").get_by_role("link", name="exchange").click()
    body = page.locator("pre.body").last.inner_text()
    assert "<script>alert('x')</script>" in body  # shown as text
    assert page.evaluate("document.querySelectorAll('main script').length") == 0

    assert page.foreign_requests == []  # type: ignore[attr-defined]
    assert page.console_errors == []  # type: ignore[attr-defined]


def test_the_branch_tree_is_drawn_with_counts_and_links(
    server, tape: Recorded, browser_page
) -> None:
    page = browser_page
    page.goto(f"{server.url}/ui/tapes/{tape.tape}")
    tree = page.locator("svg#branch-tree")
    assert tree.is_visible()
    box = tree.bounding_box()
    assert box is not None and box["width"] > 200 and box["height"] > 80
    nodes = page.locator("svg#branch-tree a.tree-node")
    assert nodes.count() == 3
    b1 = page.locator('svg#branch-tree a[data-branch="root/b1"]')
    assert "1 shared · 1 refetched" in (b1.text_content() or "")
    # Children are drawn to the right of their parent, on separate rows.
    root_box = page.locator('svg#branch-tree a[data-branch="root"] circle').bounding_box()
    b0_box = page.locator('svg#branch-tree a[data-branch="root/b0"] circle').bounding_box()
    b1_box = page.locator('svg#branch-tree a[data-branch="root/b1"] circle').bounding_box()
    assert b0_box["x"] > root_box["x"] and b1_box["x"] == b0_box["x"]
    assert b0_box["y"] != b1_box["y"]
    b1.locator("circle").click()
    assert page.locator("h1").inner_text() == "Branch root/b1"
    assert page.foreign_requests == []  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def simulator() -> Iterator[ServerProcess]:
    with running_server(["examples.simulator"]) as process:
        yield process


def test_simulated_answers_and_near_misses_are_shown(
    server, simulator: ServerProcess, browser_page
) -> None:
    double = ProxyDouble(server.url, World())
    try:
        tape = "browser-sim"
        double.open(tape, simulator_url=f"{simulator.url}/simulate")
        recorder, replayer = double.fork(tape, children=2)
        double.ask(tape, recorder, path="/search", query=[["q", "solar"]])
        assert double.http.post(f"/v1/tapes/{tape}/seal").status_code == 200
        assert double.ask(tape, replayer, path="/search", query=[["q", "wind"]]).decision == (
            "simulated"
        )
        tidal = double.ask(tape, replayer, path="/search", query=[["q", "tidal"], ["p", "2"]])
        assert tidal.decision == "simulated"  # reads are simulated; a write is refused:
        assert double.ask(tape, replayer, "POST", "/search", body=b"x").decision == "refused"
    finally:
        double.http.close()

    page = browser_page
    page.goto(f"{server.url}/ui/tapes/{tape}/timeline?branch=root%2Fb1")
    badges = page.locator("#timeline .badge").all_inner_texts()
    assert badges == ["simulated", "simulated", "refused"]
    assert page.locator("#strip a.d-simulated").count() == 2
    page.locator("#timeline tr", has_text="refused").get_by_role("link", name="why missed").click()
    assert page.locator("h1").inner_text().startswith("Why event 3 of root/b1 missed")
    summary = page.locator(".near-summary").first.inner_text()
    assert "method: asked 'POST', recorded 'GET'" in summary
    assert page.locator("table.near-miss").first.is_visible()

    page.goto(f"{server.url}/ui/tapes/{tape}/timeline?branch=root%2Fb1")
    page.locator("#timeline tr").nth(1).get_by_role("link", name="exchange").click()
    assert page.locator("#simulated").is_visible()
    assert "simulator" in page.locator("#simulated").inner_text()
    assert page.foreign_requests == []  # type: ignore[attr-defined]
    assert page.console_errors == []  # type: ignore[attr-defined]
