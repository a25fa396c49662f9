"""`tape verify` end to end: a tape recorded through the real proxy against a real upstream
replays byte for byte with the world closed, and a changed body is caught, naming the exchange."""

from __future__ import annotations

import json
import sqlite3
import tempfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench.groups import RunContext, run_group
from bench.world_client import WorldControl
from groundhog.cli import app
from groundhog.client import Groundhog
from tests.groundhog.upstream import Upstream
from tests.store.test_blob_integrity import flip_first_byte
from tests.support.servers import ServerProcess, running_server


def record_a_group(
    gh: Groundhog, tape_name: str, upstream: Upstream, tls_upstream: Upstream | None = None
) -> None:
    """Root reads twice (and over HTTPS, if given), forks two children that read the same and
    their own pages, and one child forks again: every branch has a conversation, some shared,
    some its own."""
    tape = gh.open(tape_name, world_seed=11)
    root = tape.branch("root")
    with root.shim(), root.client() as client:
        client.get(f"{upstream.url}/news/{tape_name}")
        client.get(f"{upstream.url}/news/{tape_name}", headers={"Accept": "text/plain"})
        if tls_upstream is not None:
            client.get(f"{tls_upstream.url}/secure/{tape_name}")
        first, second = root.fork(2)
    for child in (first, second):
        with child.shim(), child.client() as client:
            client.get(f"{upstream.url}/news/{tape_name}")
            client.get(f"{upstream.url}/own/{tape_name}/{child.path}?q=1")
    (grandchild,) = second.fork(1)
    with grandchild.client() as client:
        client.get(f"{upstream.url}/news/{tape_name}")


def edit_recorded_urls(data_dir: Path, tape: str, new_url: str, like: str) -> None:
    """Rewrite the stored request URL (to the SQL expression `new_url`) of the tape's exchanges
    whose URL is `like`, in the resolver's own store, as a hand edit would."""
    with sqlite3.connect(data_dir / "groundhog.sqlite3") as connection:
        connection.execute(
            f"update gh_exchanges set request_url = {new_url} "
            "where tape_id = (select id from gh_tapes where name = ?) and request_url like ?",
            (tape, like),
        )
    connection.close()


def test_verify_replays_every_branch_with_the_world_closed(
    gh_proxied: Groundhog, tape_name: str, http_upstream: Upstream, https_upstream: Upstream
) -> None:
    record_a_group(gh_proxied, tape_name, http_upstream, https_upstream)
    hits = len(http_upstream.hits) + len(https_upstream.hits)
    sandboxes = set(Path(tempfile.gettempdir()).glob("groundhog-verify-*"))
    result = gh_proxied.verify(tape_name)
    assert result["problem"] is None and result["first_mismatch"] is None, result
    assert result["ok"] is True and result["live_connections"] == 0
    branches = {branch["branch"]: branch for branch in result["branches"]}
    assert set(branches) == {"root", "root/b0", "root/b1", "root/b1/b0"}
    assert branches["root"]["matched"] == 3 and branches["root/b0"]["matched"] == 2
    assert branches["root/b1/b0"]["matched"] == 1
    assert all(branch["shim_counters_resume"] for branch in branches.values())
    assert len(http_upstream.hits) + len(https_upstream.hits) == hits, "verify reached the world"
    assert set(Path(tempfile.gettempdir()).glob("groundhog-verify-*")) <= sandboxes, "left behind"
    # The tape on the resolver is as it was: verify worked on a copy elsewhere.
    assert [t.name for t in gh_proxied.list_tapes()].count(tape_name) == 1


def test_verify_works_on_an_imported_tape_and_catches_a_changed_body(
    gh_proxied: Groundhog, resolver: ServerProcess, data_dir: Path, tape_name: str,
    http_upstream: Upstream, tmp_path: Path,
) -> None:  # fmt: skip
    record_a_group(gh_proxied, tape_name, http_upstream)
    exported = gh_proxied.export_tape(tape_name, tmp_path / "tape.sqlite3")
    gh_proxied.import_tape(exported, f"{tape_name}-imported")
    assert gh_proxied.verify(f"{tape_name}-imported")["ok"] is True
    # Change one byte of a served body in the resolver's own store, as a damaged disk would.
    with sqlite3.connect(data_dir / "groundhog.sqlite3") as connection:
        (sha,) = connection.execute(
            "select e.response_body_sha from gh_exchanges e join gh_tapes t on t.id = e.tape_id "
            "where t.name = ? and e.request_url like '%/own/%' order by e.id limit 1",
            (f"{tape_name}-imported",),
        ).fetchone()
    connection.close()
    before = gh_proxied.digest(f"{tape_name}-imported").digest
    flip_first_byte(data_dir / "groundhog.sqlite3", sha)
    assert gh_proxied.digest(f"{tape_name}-imported").digest != before
    result = gh_proxied.verify(f"{tape_name}-imported")
    assert result["ok"] is False and result["live_connections"] == 0
    assert "damaged" in result["problem"] and "/own/" in result["problem"]


def test_verify_names_the_first_ask_that_misses(
    gh_proxied: Groundhog, resolver: ServerProcess, data_dir: Path, tape_name: str,
    http_upstream: Upstream,
) -> None:  # fmt: skip
    record_a_group(gh_proxied, tape_name, http_upstream)
    # A request edited in the store no longer keys to its recording: the sealed copy refuses it.
    edit_recorded_urls(
        data_dir, tape_name, "replace(request_url, '?q=1', '?q=2')", "%/own/%/root/b1?q=1"
    )
    env = {"GROUNDHOG_RESOLVER_URL": resolver.url, "COLUMNS": "200"}
    result = CliRunner().invoke(app, ["tape", "verify", tape_name, "--json"], env=env)
    assert result.exit_code == 1, result.output
    document = json.loads(result.stdout[: result.stdout.rindex("}") + 1])
    assert document["ok"] is False and document["live_connections"] == 0
    mismatch = document["first_mismatch"]
    assert mismatch["branch"] == "root/b1" and mismatch["url"].endswith("/root/b1?q=2")
    assert mismatch["occurrence"] == 0 and "refused" in mismatch["reason"]
    branches = {branch["branch"]: branch for branch in document["branches"]}
    assert branches["root/b0"]["ok"] and not branches["root/b1"]["ok"]
    assert "does not replay as recorded" in result.output


@pytest.mark.parametrize(
    ("mode", "cooperative"),
    [("groundhog", True), ("groundhog", False), ("replay", True), ("naive", True)],
    ids=["groundhog-cooperative", "groundhog-uncooperative", "replay", "naive"],
)
def test_verify_passes_on_a_recorded_benchmark_group(
    gh_proxied: Groundhog, proxy: ServerProcess, tape_name: str, mode: str, cooperative: bool
) -> None:
    """A benchmark group (bench/groups.py) against worldsim: sessions, writes, reviews of the
    agent's own write, concurrent siblings; with the world stopped, verify still replays it."""
    with running_server(["worldsim", "--seed", "7"]) as world, WorldControl(world.url) as control:
        context = RunContext(
            admin=gh_proxied, world=control, world_url=world.url, proxy_url=proxy.url,
            run_id=tape_name, cooperative=cooperative,
        )  # fmt: skip
        run_group(
            context, tape=tape_name, world_seed=3, mode=mode, dependency_model="closure",
            strategies=["skim", "verify"], seed_base=5, probe=False, branch_label="g",
        )  # fmt: skip
    decisions = gh_proxied.report(tape_name).totals.decisions
    reads = sum(decisions.get(word, 0) for word in ("recorded", "refetched", "shared"))
    assert decisions.get("write", 0) > 0 and reads > 0, decisions
    # The world is gone now: anything verify tried to fetch would fail, and be counted.
    result = gh_proxied.verify(tape_name)
    assert result["first_mismatch"] is None and result["problem"] is None, result
    assert result["ok"] is True and result["live_connections"] == 0
    replayed = {branch["branch"]: branch["replayed"] for branch in result["branches"]}
    assert all(count > 0 for path, count in replayed.items() if path != "root"), replayed
