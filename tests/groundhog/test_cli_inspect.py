"""`groundhog tape diff` and `tape events` end to end: real proxy, resolver and upstream.

Two branches of one fork read the same page, then one writes and both read what it wrote to:
the diff must name the write as the first divergence, share the read before it, and say the
read after it is not shared because the write split its fingerprint.
"""

from __future__ import annotations

import json
import re

import httpx
import pytest
from typer.testing import CliRunner

from groundhog.cli import app
from groundhog.client import Groundhog
from tests.groundhog.upstream import Upstream
from tests.support.servers import ServerProcess

runner = CliRunner()


@pytest.fixture
def diverged(gh_proxied: Groundhog, tape_name: str, http_upstream: Upstream) -> str:
    """root/b0 reads /s, writes /d, reads /d; root/b1 reads /s and /d."""
    tape = gh_proxied.open(tape_name, world_seed=5)
    writer, reader = tape.fork("root", 2)
    base = f"{http_upstream.url}/{tape_name}"
    with writer.client() as client:
        assert client.get(f"{base}/s").headers["X-Groundhog-Decision"] == "recorded"
        assert client.post(f"{base}/d", content=b"new").headers["X-Groundhog-Decision"] == "write"
        assert client.get(f"{base}/d").headers["X-Groundhog-Decision"] == "refetched"
    with reader.client() as client:
        assert client.get(f"{base}/s").headers["X-Groundhog-Decision"] == "shared"
        assert client.get(f"{base}/d").headers["X-Groundhog-Decision"] == "recorded"
    return tape_name


def _cli(resolver: ServerProcess, *args: str) -> str:
    result = runner.invoke(app, list(args), env={"GROUNDHOG_RESOLVER_URL": resolver.url,
                                                 "COLUMNS": "250"})  # fmt: skip
    assert result.exit_code == 0, result.output
    return result.output


def test_diff_names_the_write_as_the_first_divergence_and_says_why_reads_differ(
    diverged: str, resolver: ServerProcess, http_upstream: Upstream
) -> None:
    diff = json.loads(_cli(resolver, "tape", "diff", diverged, "root/b0", "root/b1", "--json"))
    first = diff["first_divergence"]
    assert first["position"] == 1
    assert (first["a"]["method"], first["a"]["decision"]) == ("POST", "write")
    assert (first["b"]["method"], first["b"]["url"]) == ("GET", f"{http_upstream.url}/{diverged}/d")
    assert [item["a"]["url"].rsplit("/", 1)[-1] for item in diff["reads_shared"]] == ["s"]
    (not_shared,) = diff["reads_not_shared"]
    assert not_shared["why"] == "fingerprint"
    assert f"root/b0 #2 POST {http_upstream.url}/{diverged}/d" in not_shared["detail"]
    assert (not_shared["a"]["decision"], not_shared["b"]["decision"]) == ("refetched", "recorded")
    assert [w["event"]["method"] for w in diff["writes"]] == ["POST"]

    table = _cli(resolver, "tape", "diff", diverged, "root/b0", "root/b1")
    assert "first divergent request, 2 after the split" in table
    assert "reads shared (1)" in table and "reads not shared (1)" in table
    assert "fingerprint" in table


def test_diff_of_a_branch_that_does_not_exist_is_a_clear_404(
    diverged: str, resolver: ServerProcess
) -> None:
    result = runner.invoke(
        app,
        ["tape", "diff", diverged, "root/b0", "root/nope"],
        env={"GROUNDHOG_RESOLVER_URL": resolver.url},
    )
    assert result.exit_code == 1
    assert "branch 'root/nope' does not exist" in result.output


def test_events_pages_a_branch_with_a_cursor(diverged: str, resolver: ServerProcess) -> None:
    first = json.loads(
        _cli(resolver, "tape", "events", diverged, "root/b0", "--limit", "2", "--json")
    )
    assert [e["decision"] for e in first["events"]] == ["recorded", "write"]
    rest = json.loads(
        _cli(
            resolver,
            "tape",
            "events",
            diverged,
            "root/b0",
            "--after",
            str(first["next_after"]),
            "--json",
        )
    )
    assert [e["decision"] for e in rest["events"]] == ["refetched"]
    assert rest["next_after"] is None
    table = _cli(resolver, "tape", "events", diverged, "root/b0", "--limit", "2")
    assert f"more: groundhog tape events {diverged} root/b0 --after 2" in table


def test_the_viewer_shows_the_whole_timelines_a_against_b(
    diverged: str, resolver: ServerProcess, gh_proxied: Groundhog
) -> None:
    page = httpx.get(
        f"{resolver.url}/ui/tapes/{diverged}/diff",
        params={"a": "root/b0", "b": "root/b1"},
        trust_env=False,
    )
    assert page.status_code == 200, page.text
    marked = re.findall(r'<tr class="diverged">(.*?)</tr>', page.text, flags=re.S)
    assert len(marked) == 1 and "POST" in marked[0] and "root/b1 event 2" in marked[0]
    not_shared = page.text.split('id="not-shared"', 1)[1].split("</table>", 1)[0]
    assert "<strong>fingerprint</strong>" in not_shared and "split by" in not_shared
    shared = page.text.split('id="shared"', 1)[1].split("</table>", 1)[0]
    assert shared.count("<tr>") == 2  # the heading and the one shared read
    key = gh_proxied.events(diverged, branch="root/b1")[0][1].request_key
    compare = httpx.get(
        f"{resolver.url}/ui/tapes/{diverged}/compare",
        params={"key": key, "occurrence": 0},
        trust_env=False,
    ).text
    assert f"/ui/tapes/{diverged}/diff?a=root%2Fb0&amp;b=root%2Fb1" in compare
