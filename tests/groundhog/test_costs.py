"""The cost report end to end: a priced tape, a group through the real proxy, CLI and viewer.

One sibling records two reads and a write (three live calls), the other shares the two reads
(two calls avoided); at 0.5 per call to 127.0.0.1 the report must say 1.5 spent and 1.0 saved
per branch, group and tape. A bad price is refused with a detail naming the host and the fix,
and creates nothing.
"""

from __future__ import annotations

import httpx
import pytest
from typer.testing import CliRunner

from groundhog.cli import app
from groundhog.client import Groundhog
from groundhog.errors import GroundhogError
from tests.groundhog.upstream import Upstream
from tests.support.servers import ServerProcess

runner = CliRunner()


def test_a_priced_group_reports_calls_and_cost_made_and_avoided(
    gh_proxied: Groundhog, tape_name: str, resolver: ServerProcess, http_upstream: Upstream
) -> None:
    tape = gh_proxied.open(tape_name, world_seed=9, prices={"127.0.0.1": 0.5})
    assert tape.info.prices == {"127.0.0.1": 0.5}
    recorder, sharer = tape.fork("root", 2)
    base = f"{http_upstream.url}/{tape_name}"
    with recorder.client() as client:
        client.get(f"{base}/a")
        client.get(f"{base}/b")
        client.post(f"{base}/w", content=b"z")
    with sharer.client() as client:
        assert [client.get(f"{base}/{p}").headers["X-Groundhog-Decision"] for p in "ab"] == [
            "shared",
            "shared",
        ]
    costs = gh_proxied.report(tape_name).costs
    assert costs["branches"][recorder.path] == {
        "live_calls": 3, "avoided": 0, "cost": 1.5, "cost_avoided": 0.0
    }  # fmt: skip
    assert costs["branches"][sharer.path] == {
        "live_calls": 0, "avoided": 2, "cost": 0.0, "cost_avoided": 1.0
    }  # fmt: skip
    group = costs["groups"]["root"]
    assert (group["live_calls"], group["avoided"], group["cost_avoided"]) == (3, 2, 1.0)
    assert costs["totals"]["cost"] == 1.5 and costs["unpriced_hosts"] == []

    shown = runner.invoke(
        app, ["tape", "report", tape_name],
        env={"GROUNDHOG_RESOLVER_URL": resolver.url, "COLUMNS": "300"},
    )  # fmt: skip
    assert shown.exit_code == 0, shown.output
    line = next(row for row in shown.output.splitlines() if "group root" in row)
    assert [cell.strip() for cell in line.split("│")[2:6]] == ["3", "2", "1.5000", "1.0000"]
    page = httpx.get(f"{resolver.url}/ui/tapes/{tape_name}", trust_env=False).text
    table = page.split('id="costs"', 1)[1].split("</table>", 1)[0]
    assert "<td>1.5000</td><td>1.0000</td>" in table
    assert "group: fork of root (2 children)" in table


@pytest.mark.parametrize(
    ("prices", "detail"),
    [
        ({"127.0.0.1": -1}, "the price of '127.0.0.1' must be a number from 0 to 1e+09"),
        ({"API.example": 1}, "'API.example' is not a host name: give it in lowercase"),
        ({"https://api.example": 1}, "without scheme, port or path"),
        ({"api.example": "cheap"}, "got 'cheap'"),
        ({"api.example": True}, "got True"),
    ],
)
def test_a_bad_price_is_a_precise_problem_and_creates_nothing(
    gh: Groundhog, tape_name: str, resolver: ServerProcess, prices: object, detail: str
) -> None:
    answer = httpx.post(
        f"{resolver.url}/v1/tapes", json={"name": tape_name, "prices": prices}, trust_env=False
    )
    assert answer.status_code == 422
    assert answer.headers["content-type"].startswith("application/problem+json")
    assert answer.json()["detail"].startswith("prices: ") and detail in answer.json()["detail"]
    with pytest.raises(GroundhogError) as missing:
        gh.get_tape(tape_name)
    assert missing.value.status == 404
