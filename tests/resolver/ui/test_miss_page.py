"""The viewer's near-miss page: a refused event links to what differs from the nearest ones."""

from __future__ import annotations

import html
import re

from fastapi.testclient import TestClient

from tests.resolver.proxy_double import ProxyDouble


def test_refused_event_links_to_its_near_miss_explanation(
    ui_client: TestClient, ui_proxy: ProxyDouble
) -> None:
    tape = "near-miss-viewer"
    ui_proxy.open(tape)
    recorder, replayer = ui_proxy.fork(tape, children=2)
    ui_proxy.ask(tape, recorder, path="/search", query=[["q", "solar"], ["page", "1"]])
    assert ui_client.post(f"/v1/tapes/{tape}/seal").status_code == 200
    miss = ui_proxy.ask(tape, replayer, path="/search", query=[["q", "wind"], ["page", "1"]])
    assert miss.decision == "refused"

    timeline = ui_client.get(f"/ui/tapes/{tape}/timeline", params={"branch": replayer}).text
    href = html.unescape(re.search(r'href="([^"]+)" class="why-miss"', timeline).group(1))
    page = ui_client.get(href)
    assert page.status_code == 200
    text = html.unescape(page.text)
    assert "query parameter 'q': asked 'wind', recorded 'solar'" in text
    assert "recorded at occurrence: #0 (base)" in text
    assert re.search(r"<td>query</td><td>q</td>.*wind.*solar", page.text, flags=re.S)
    assert (
        ui_client.get(f"/ui/tapes/{tape}/miss", params={"branch": replayer, "seq": 99}).status_code
        == 404
    )
