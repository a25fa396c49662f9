"""Shim counters travel to and from the resolver's branch record over plain HTTP."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from groundhog.shim import shim
from groundhog.shim.store_sync import (
    Reporter,
    StoreUnavailable,
    branch_url,
    from_environment,
    load_counters,
    report_counters,
    report_interval,
)
from tests.support.threaded_server import ThreadedServer


class _BranchRecord(BaseHTTPRequestHandler):
    """Stands in for the resolver's branch routes: GET the branch, PUT its counters."""

    stored: dict[str, dict] = {}
    seen: list[tuple[str, str, str | None]] = []
    fail_with: int | None = None

    def _answer(self, status: int, document: object) -> None:
        body = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self.seen.append(("GET", self.path, self.headers.get("Authorization")))
        if self.fail_with:
            return self._answer(self.fail_with, {"detail": "no such tape"})
        return self._answer(200, {"shim_counters": self.stored.get(self.path)})

    def do_PUT(self) -> None:
        self.seen.append(("PUT", self.path, self.headers.get("Authorization")))
        length = int(self.headers["Content-Length"])
        branch_path = self.path.removesuffix("/shim-counters")
        self.stored[branch_path] = json.loads(self.rfile.read(length))
        return self._answer(200, {"ok": True})

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def resolver_url() -> Iterator[str]:
    _BranchRecord.stored, _BranchRecord.seen, _BranchRecord.fail_with = {}, [], None
    with ThreadedServer(ThreadingHTTPServer(("127.0.0.1", 0), _BranchRecord)) as server:
        yield f"http://127.0.0.1:{server.port}"


def test_branch_names_are_quoted_into_one_path_segment() -> None:
    assert branch_url("http://r/", "my tape", "root/b0") == (
        "http://r/v1/tapes/my%20tape/branches/root%2Fb0"
    )


def test_counters_round_trip_and_carry_the_token(resolver_url: str) -> None:
    assert load_counters(resolver_url, "t", "root/b0") == {}
    with shim(world_seed=7, branch="root/b0") as state:
        import uuid

        uuid.uuid4()
        report_counters(resolver_url, "t", state, token="secret-token")
        expected = state.counters()
    assert load_counters(resolver_url, "t", "root/b0") == expected
    assert ("PUT", "/v1/tapes/t/branches/root%2Fb0/shim-counters", "Bearer secret-token") in (
        _BranchRecord.seen
    )


def test_a_refusal_or_a_dead_resolver_is_a_clear_error(resolver_url: str) -> None:
    _BranchRecord.fail_with = 404
    with pytest.raises(StoreUnavailable, match=r"answered 404: .*no such tape"):
        load_counters(resolver_url, "t", "root")
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{unused.getsockname()[1]}"
    with pytest.raises(StoreUnavailable, match="failed"):
        load_counters(dead, "t", "root")


def test_the_reporter_reports_at_close_once_and_survives_a_dead_store(
    resolver_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with shim(world_seed=7, branch="root") as state:
        reporter = Reporter(resolver_url, "t", state, interval=0).start()
        reporter.close()
        reporter.close()
    puts = [entry for entry in _BranchRecord.seen if entry[0] == "PUT"]
    assert len(puts) == 1
    assert Reporter("http://127.0.0.1:9", "t", state, interval=0).report() is False
    assert "could not store the shim counters" in capsys.readouterr().err


def test_environment_names_the_worker_and_bad_intervals_fall_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("GROUNDHOG_RESOLVER_URL", raising=False)
    assert from_environment() is None
    monkeypatch.setenv("GROUNDHOG_RESOLVER_URL", "http://127.0.0.1:1")
    monkeypatch.setenv("GROUNDHOG_TAPE", "t")
    monkeypatch.setenv("GROUNDHOG_ADMIN_TOKEN", "")
    assert from_environment() == ("http://127.0.0.1:1", "t", None)
    monkeypatch.setenv("GROUNDHOG_SHIM_REPORT_S", "2.5")
    assert report_interval() == 2.5
    monkeypatch.setenv("GROUNDHOG_SHIM_REPORT_S", "soon")
    assert report_interval() == 30.0
