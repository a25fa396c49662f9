"""Saying what Groundhog cannot know, end to end: re-fork warnings and possibly contaminated reads.

Real resolver, real proxy, real upstreams. A fork of a branch that was forked before warns in the
API answer, the client (`ForkWarning`) and the CLI (stderr); a read recorded after a sibling's
live write to the same origin is flagged in the report, the CLI and the viewer, a read of another
origin or recorded before the write is not; the report's words separate `stale` from what it
cannot see.
"""

from __future__ import annotations

import warnings

import httpx
import pytest
from typer.testing import CliRunner

from groundhog.cli import app
from groundhog.client import Groundhog
from groundhog.errors import ForkWarning
from groundhog.protocol.report_notes import CANNOT_SEE, LIES
from tests.groundhog.upstream import Upstream
from tests.support.servers import ServerProcess

runner = CliRunner()


def test_a_second_fork_of_one_branch_warns_in_the_api_the_client_and_the_cli(
    gh: Groundhog, tape_name: str, resolver: ServerProcess
) -> None:
    gh.open(tape_name, world_seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the first fork of a branch says nothing
        first = gh.fork(tape_name, "root", 2)
    assert first.warnings == []
    with pytest.warns(ForkWarning, match="branch 'root' was forked before") as caught:
        again = gh.fork(tape_name, "root", 1)
    assert caught[0].filename == __file__  # the caller's line, not the client's
    assert again.branches == ["root/b2"] and "served those recordings" in again.warnings[0]
    answer = httpx.post(
        f"{resolver.url}/v1/tapes/{tape_name}/fork",
        json={"parent": "root", "children": 1},
        trust_env=False,
    )
    assert answer.status_code == 201
    assert answer.json()["branches"] == ["root/b3"]
    assert "branch 'root' was forked before" in answer.json()["warnings"][0]
    quiet = gh.fork(tape_name, "root/b0", 1, warn=False)  # a first fork: no warning either way
    assert quiet.warnings == []
    result = runner.invoke(
        app, ["tape", "fork", tape_name, "--children", "1"],
        env={"GROUNDHOG_RESOLVER_URL": resolver.url, "COLUMNS": "300"},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "root/b4"
    assert "warning:" in result.stderr and "was forked before" in result.stderr


def test_a_read_recorded_after_a_siblings_live_write_to_its_origin_is_possibly_contaminated(
    gh_proxied: Groundhog,
    tape_name: str,
    resolver: ServerProcess,
    http_upstream: Upstream,
    https_upstream: Upstream,
) -> None:
    tape = gh_proxied.open(tape_name, world_seed=2)
    writer, reader = tape.fork("root", 2)
    world, other = f"{http_upstream.url}/{tape_name}", f"{https_upstream.url}/{tape_name}"
    with reader.client() as client:
        assert client.get(f"{world}/before").headers["X-Groundhog-Decision"] == "recorded"
    with writer.client() as client:
        assert client.post(f"{world}/doc", content=b"x").headers["X-Groundhog-Decision"] == "write"
    with reader.client() as client:
        assert client.get(f"{world}/doc").headers["X-Groundhog-Decision"] == "recorded"
        assert client.get(f"{other}/doc").headers["X-Groundhog-Decision"] == "recorded"

    report = httpx.get(f"{resolver.url}/v1/tapes/{tape_name}/report", trust_env=False).json()
    assert report["branches"]["root/b1"]["possibly_contaminated"] == 1
    assert report["branches"]["root/b0"]["possibly_contaminated"] == 0
    assert report["totals"]["possibly_contaminated"] == 1
    (suspect,) = report["possibly_contaminated"]
    assert suspect["url"] == f"{world}/doc"
    assert suspect["recorded_by"] == {"branch": "root/b1", "seq": 2}
    assert suspect["after_write"] == {
        "branch": "root/b0", "seq": 1, "method": "POST", "url": f"{world}/doc"
    }  # fmt: skip
    assert report["notes"]["lies"] == LIES and report["notes"]["cannot_see"] == CANNOT_SEE
    assert gh_proxied.report(tape_name).totals.possibly_contaminated == 1
    # The counts view leaves contamination uncomputed: the same counts, the flag not worked out.
    counted = gh_proxied.report(tape_name, view="counts")
    assert counted.totals.possibly_contaminated == 0 and counted.costs == {}
    assert counted.totals.live_calls == gh_proxied.report(tape_name).totals.live_calls == 4

    shown = runner.invoke(
        app, ["tape", "report", tape_name],
        env={"GROUNDHOG_RESOLVER_URL": resolver.url, "COLUMNS": "300"},
    )  # fmt: skip
    assert shown.exit_code == 0, shown.output
    assert "possibly contaminated" in shown.output and "What this report cannot see" in shown.output
    page = httpx.get(f"{resolver.url}/ui/tapes/{tape_name}", trust_env=False).text
    listing = page.split('id="possibly-contaminated"', 1)[1].split("</table>", 1)[0]
    assert listing.count("<tr>") == 2 and f"POST {world}/doc" in listing
    assert "What this report cannot see" in page and "replay mode served them knowingly" in page


def test_replay_mode_counts_its_knowing_stale_reads_as_lies_beside_the_words(
    gh_proxied: Groundhog, tape_name: str, resolver: ServerProcess, http_upstream: Upstream
) -> None:
    tape = gh_proxied.open(tape_name, world_seed=3, mode="replay")
    reader, writer = tape.fork("root", 2)
    url = f"{http_upstream.url}/{tape_name}/doc"
    with reader.client() as client:
        assert client.get(url).headers["X-Groundhog-Decision"] == "recorded"
    with writer.client() as client:
        client.post(url, content=b"y")
        assert client.get(url).headers["X-Groundhog-Decision"] == "stale"
    report = gh_proxied.report(tape_name)
    assert report.branches[writer.path].lies == 1
    # Recorded before the write: served knowingly stale, but not a leak of the write.
    assert report.totals.possibly_contaminated == 0
    page = httpx.get(f"{resolver.url}/ui/tapes/{tape_name}", trust_env=False).text
    assert "No read is flagged possibly contaminated." in page
