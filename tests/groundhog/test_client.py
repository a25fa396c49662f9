"""The admin client against a real resolver: typed results, problem details, worker env."""

from __future__ import annotations

import random
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from groundhog.client import Groundhog
from groundhog.errors import GroundhogError, ResolverUnreachable
from groundhog.models import BranchInfo, TapeInfo
from groundhog.shim import shim
from tests.support.servers import ServerProcess, free_port, running_server


def test_open_creates_then_returns_then_conflicts(gh: Groundhog, tape_name: str) -> None:
    created = gh.open_tape(tape_name, 7, mode="replay", dependency_model="path")
    assert isinstance(created, TapeInfo)
    assert (created.name, created.world_seed, created.mode) == (tape_name, 7, "replay")
    assert created.dependency_model == "path" and created.online and created.branches == 1
    again = gh.open_tape(tape_name, 7, mode="replay")
    assert again.name == tape_name
    with pytest.raises(GroundhogError) as conflict:
        gh.open_tape(tape_name, 8)
    assert conflict.value.status == 409
    assert conflict.value.title == "Conflict"
    assert "world_seed" in conflict.value.detail
    assert conflict.value.extras["fields"] == ["world_seed"]


def test_invalid_mode_carries_the_valid_values(gh: Groundhog, tape_name: str) -> None:
    with pytest.raises(GroundhogError) as invalid:
        gh.open_tape(tape_name, 1, mode="sometimes")
    assert invalid.value.status == 422
    assert "groundhog" in str(invalid.value) and "replay" in str(invalid.value)


def test_unknown_tape_is_a_404_naming_it(gh: Groundhog) -> None:
    with pytest.raises(GroundhogError) as missing:
        gh.get_tape("no-such-tape-here")
    assert missing.value.status == 404
    assert "no-such-tape-here" in missing.value.detail


def test_list_show_seal_unseal_delete(gh: Groundhog, tape_name: str) -> None:
    gh.open_tape(tape_name, 3)
    assert tape_name in [tape.name for tape in gh.list_tapes()]
    assert gh.seal(tape_name).online is False
    assert gh.get_tape(tape_name).online is False
    assert gh.unseal(tape_name).online is True
    gh.delete_tape(tape_name)
    assert tape_name not in [tape.name for tape in gh.list_tapes()]


def test_fork_names_children_and_lists_branches(gh: Groundhog, tape_name: str) -> None:
    tape = gh.open(tape_name, world_seed=5)
    branches = tape.fork("root", 3)
    assert [branch.path for branch in branches] == ["root/b0", "root/b1", "root/b2"]
    named = branches[0].fork(["left", "right"])
    assert [branch.path for branch in named] == ["root/b0/left", "root/b0/right"]
    listed = {info.path: info for info in tape.branches()}
    assert set(listed) == {"root", "root/b0", "root/b1", "root/b2", "root/b0/left", "root/b0/right"}
    info = gh.get_branch(tape_name, "root/b0/left")
    assert isinstance(info, BranchInfo)
    assert info.parent == "root/b0"
    with pytest.raises(GroundhogError) as missing:
        gh.get_branch(tape_name, "root/b9")
    assert missing.value.status == 404


def test_fork_hands_the_shim_counters_to_children(gh: Groundhog, tape_name: str) -> None:
    tape = gh.open(tape_name, world_seed=11)
    outside = tape.fork("root", 1)[0]
    assert outside.info().shim_counters == {}, "no shim context: no counters sent"
    with shim(world_seed=11, branch="root") as parent:
        draws_before = [random.random() for _ in range(3)]
        children = tape.fork("root", 2)
        expected_next = [random.random() for _ in range(3)]
    assert draws_before != expected_next
    stored = children[1].info().shim_counters
    assert stored["occurrences"] == {"random.random": 3}
    assert parent.counters()["occurrences"] == {"random.random": 6}
    with children[1].shim():
        assert [random.random() for _ in range(3)] == expected_next


def test_events_report_and_digest_of_a_fresh_tape(gh: Groundhog, tape_name: str) -> None:
    gh.open_tape(tape_name, 1)
    events, next_after = gh.events(tape_name)
    assert events == [] and next_after is None
    report = gh.report(tape_name)
    assert report.tape == tape_name and report.totals.reads == 0
    digest = gh.digest(tape_name)
    assert digest.exchanges == 0 and len(digest.digest) == 64


def test_export_and_import_keep_the_digest(
    gh: Groundhog, tape_name: str, tmp_path: Path, export_route: None
) -> None:
    gh.open_tape(tape_name, 4)
    gh.fork(tape_name, "root", 2, shim_counters=None)
    progress: list[tuple[int, int | None]] = []
    exported = gh.export_tape(
        tape_name, tmp_path / "tape.sqlite", progress=lambda *p: progress.append(p)
    )
    assert exported.read_bytes()[:16] == b"SQLite format 3\x00"
    assert progress and progress[-1][0] == exported.stat().st_size
    assert not (tmp_path / "tape.sqlite.partial").exists()
    imported = gh.import_tape(exported, f"{tape_name}-copy")
    assert imported.name == f"{tape_name}-copy" and imported.branches == 3
    assert gh.digest(f"{tape_name}-copy").digest == gh.digest(tape_name).digest


def test_failed_export_leaves_no_file(gh: Groundhog, tmp_path: Path, export_route: None) -> None:
    with pytest.raises(GroundhogError) as missing:
        gh.export_tape("no-such-tape-here", tmp_path / "out.sqlite")
    assert missing.value.status == 404
    assert list(tmp_path.iterdir()) == []


def test_import_of_a_missing_file_is_refused_before_any_request(
    gh: Groundhog, tmp_path: Path
) -> None:
    with pytest.raises(GroundhogError, match="does not exist"):
        gh.import_tape(tmp_path / "nothing.sqlite", "anything")


def test_unreachable_resolver_says_how_to_start_it(isolated_env: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with Groundhog(url) as client:
        assert client.healthy() is False
        with pytest.raises(ResolverUnreachable) as unreachable:
            client.list_tapes()
    message = str(unreachable.value)
    assert f"cannot reach the resolver at {url}" in message
    assert "groundhog up" in message and "GROUNDHOG_RESOLVER_URL" in message


def test_resolver_url_and_token_come_from_the_environment(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with running_server(
        ["resolver", "--data", str(tmp_path / "data")], env={"GROUNDHOG_ADMIN_TOKEN": "s3cret"}
    ) as guarded:
        monkeypatch.setenv("GROUNDHOG_RESOLVER_URL", guarded.url)
        with Groundhog() as anonymous, pytest.raises(GroundhogError) as refused:
            anonymous.list_tapes()
        assert refused.value.status == 401
        monkeypatch.setenv("GROUNDHOG_ADMIN_TOKEN", "s3cret")
        with Groundhog() as client:
            assert client.resolver_url == guarded.url
            assert client.open_tape("guarded", 1).name == "guarded"


def test_worker_env_names_tape_branch_proxy_and_ca(
    gh: Groundhog, tape_name: str, resolver: ServerProcess
) -> None:
    tape = gh.open(tape_name, world_seed=9)
    branch = tape.fork("root", 2)[1]
    env = branch.env(no_proxy=["llm.internal"])
    proxy = urlsplit(env["HTTP_PROXY"])
    assert env["HTTPS_PROXY"] == env["HTTP_PROXY"] == env["http_proxy"] == env["https_proxy"]
    capability = gh.get_branch(tape_name, "root/b1").capability
    assert capability and capability != gh.get_branch(tape_name, "root/b0").capability
    assert proxy.username == tape_name and proxy.password == f"root%2Fb1:{capability}"
    assert unquote(proxy.password) == f"root/b1:{capability}"
    assert env["GROUNDHOG_CAPABILITY"] == capability
    assert (proxy.hostname, proxy.port) == ("127.0.0.1", 9)
    resolver_address = urlsplit(resolver.url).netloc
    assert env["NO_PROXY"] == env["no_proxy"] == f"llm.internal,{resolver_address},127.0.0.1:9"
    assert env["GROUNDHOG_TAPE"] == tape_name and env["GROUNDHOG_BRANCH"] == "root/b1"
    assert env["GROUNDHOG_WORLD_SEED"] == "9"
    assert env["GROUNDHOG_RESOLVER_URL"] == resolver.url
    ca = Path(env["NODE_EXTRA_CA_CERTS"]).read_bytes()
    assert ca == gh.ca_pem() and b"BEGIN CERTIFICATE" in ca
    bundle = Path(env["SSL_CERT_FILE"]).read_bytes()
    assert env["REQUESTS_CA_BUNDLE"] == env["CURL_CA_BUNDLE"] == env["SSL_CERT_FILE"]
    assert bundle.endswith(ca) and bundle.count(b"BEGIN CERTIFICATE") > 10, "public roots kept"
    assert "GROUNDHOG_SHIM_COUNTERS" not in env


def test_worker_env_of_an_unknown_branch_fails(gh: Groundhog, tape_name: str) -> None:
    tape = gh.open(tape_name, world_seed=9)
    with pytest.raises(GroundhogError) as missing:
        tape.branch("root/nope").env()
    assert missing.value.status == 404


def test_a_malformed_proxy_url_is_refused_up_front(isolated_env: Path) -> None:
    with pytest.raises(GroundhogError, match="must look like http://host:port"):
        Groundhog("http://127.0.0.1:1", proxy_url="127.0.0.1:8080")
