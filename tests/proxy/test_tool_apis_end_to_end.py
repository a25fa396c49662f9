"""`--map-host` and the tool catalog through the real proxy and resolver (issue 56).

A worker asks `https://api.tavily.com/search`; the proxy connects to a local stand-in instead,
which sees the original Host header and TLS server name, and the tape records the original
name. A map that points at one of Groundhog's own addresses is refused by the self guard. Four
siblings searching through the catalog's Tavily entry make one live call per distinct query
with no rules file, and a write of the same API stays each sibling's own. After
`groundhog tape rules T --from-openapi`, an API's read operations (a GET, and a POST search the
user confirmed) are shared and its writes are not (the API served under a mapped name too).
"""

from __future__ import annotations

import json
import ssl
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from groundhog.cli import app
from tests.proxy.clients import proxy_url
from tests.proxy.stack import Stack, running_stack
from tests.proxy.upstream_server import Upstream
from tests.support.certs import write_self_signed


@dataclass
class Mapped:
    stack: Stack
    tls: Upstream
    plain: Upstream
    server_names: list[str | None] = field(default_factory=list)


@pytest.fixture(scope="module")
def mapped_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mapped]:
    data: Path = tmp_path_factory.mktemp("map-host")
    cert = write_self_signed(tmp_path_factory.mktemp("tavily-cert"), ["api.tavily.com"])
    with (
        Upstream(name="tls-stand-in", cert=cert) as tls,
        Upstream(name="plain-stand-in") as plain,
        Upstream(name="admin") as admin,
    ):
        found = Mapped(None, tls, plain)  # type: ignore[arg-type]

        def remember(_socket: ssl.SSLObject, name: str | None, _context: ssl.SSLContext) -> None:
            found.server_names.append(name)

        tls._server.tls.sni_callback = remember  # type: ignore[attr-defined]
        with running_stack(
            data,
            "--map-host",
            f"api.tavily.com=127.0.0.1:{tls.port}",
            "--map-host",
            f"search.stand-in.test=127.0.0.1:{plain.port}",
            "--admin-address",
            str(admin.port),
            "--map-host",
            f"admin.stand-in.test=127.0.0.1:{admin.port}",
        ) as stack:
            found.stack = stack
            yield found


def test_a_mapped_https_host_reaches_the_stand_in_under_its_own_name(mapped_stack) -> None:
    stack, tls = mapped_stack.stack, mapped_stack.tls
    tape = stack.open_tape()
    trust = ssl.create_default_context(cafile=str(stack.ca))
    with httpx.Client(
        proxy=proxy_url(stack.proxy.port, tape, "root"), verify=trust, trust_env=False
    ) as client:
        answer = client.post("https://api.tavily.com/search", json={"query": "groundhog"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["server"] == "tls-stand-in"
    seen = tls.state.requests[-1]
    assert dict((k.lower(), v) for k, v in seen.headers)["host"] == "api.tavily.com"
    assert mapped_stack.server_names[-1] == "api.tavily.com"
    events = stack.admin("GET", f"/v1/tapes/{tape}/events", params={"branch": "root"}).json()
    assert [event["url"] for event in events["events"]] == ["https://api.tavily.com/search"]


def test_a_mapped_plain_host_is_recorded_once_and_shared(mapped_stack) -> None:
    stack, plain = mapped_stack.stack, mapped_stack.plain
    tape = stack.open_tape()
    branches = stack.fork(tape, 2)
    before = plain.state.count("/shared")
    decisions = []
    for branch in branches:
        with httpx.Client(proxy=proxy_url(stack.proxy.port, tape, branch), trust_env=False) as c:
            answer = c.get("http://search.stand-in.test/shared")
        assert answer.json()["server"] == "plain-stand-in"
        decisions.append(answer.headers["x-groundhog-decision"])
    assert decisions == ["recorded", "shared"]
    assert plain.state.count("/shared") == before + 1


def test_a_map_onto_groundhogs_own_address_is_refused(mapped_stack) -> None:
    stack = mapped_stack.stack
    tape = stack.open_tape()
    with httpx.Client(proxy=proxy_url(stack.proxy.port, tape, "root"), trust_env=False) as c:
        answer = c.get("http://admin.stand-in.test/v1/tapes")
    assert answer.status_code == 403, answer.text
    assert answer.headers["x-groundhog-decision"] == "refused"
    assert "--map-host sends admin.stand-in.test" in answer.json()["detail"]


def _search(stack: Stack, tape: str, branch: str, query: str) -> tuple[str, dict]:
    trust = ssl.create_default_context(cafile=str(stack.ca))
    with httpx.Client(
        proxy=proxy_url(stack.proxy.port, tape, branch), verify=trust, trust_env=False
    ) as client:
        answer = client.post(
            "https://api.tavily.com/search",
            json={"query": query, "max_results": 3},
            headers={"Authorization": "Bearer tvly-test-0123456789abcdef"},
        )
    assert answer.status_code == 200, answer.text
    return answer.headers["x-groundhog-decision"], answer.json()


def test_four_siblings_make_one_live_call_per_distinct_query_with_no_rules(mapped_stack) -> None:
    """Issue 56, done when: the catalog's Tavily entry shares a POST search by default."""
    stack, tls = mapped_stack.stack, mapped_stack.tls
    tape = stack.open_tape()  # closure, no rules, no catalog setting: the defaults
    branches = stack.fork(tape, 4)
    queries = ["groundhog day", "common random numbers"]
    asks = [(branch, query) for query in queries for branch in branches]
    with ThreadPoolExecutor(max_workers=4) as pool:
        answers = list(pool.map(lambda ask: _search(stack, tape, *ask), asks))

    for query in queries:
        reached = [seen for seen in tls.state.requests if query.encode() in seen.body]
        assert len(reached) == 1, f"{query!r} went live {len(reached)} times"
        served = [got for (_, asked), got in zip(asks, answers, strict=True) if asked == query]
        assert sorted(decision for decision, _ in served) == ["recorded", *["shared"] * 3]
        assert len({json.dumps(body, sort_keys=True) for _, body in served}) == 1

    # A write of the same API is each sibling's own: four live calls.
    trust = ssl.create_default_context(cafile=str(stack.ca))
    before = tls.state.count("/usage/reset")
    for branch in branches:
        with httpx.Client(
            proxy=proxy_url(stack.proxy.port, tape, branch), verify=trust, trust_env=False
        ) as client:
            answer = client.post("https://api.tavily.com/usage/reset", json={"query": "x"})
        assert answer.headers["x-groundhog-decision"] == "write"
    assert tls.state.count("/usage/reset") == before + 4


STAND_IN_API = "http://search.stand-in.test"


def test_imported_openapi_reads_share_and_writes_do_not(mapped_stack, tmp_path: Path) -> None:
    stack, plain = mapped_stack.stack, mapped_stack.plain
    spec = tmp_path / "openapi.json"
    spec.write_text(
        json.dumps(
            {
                "openapi": "3.0.3",
                "info": {"title": "items", "version": "1"},
                "servers": [{"url": STAND_IN_API}],
                "paths": {
                    "/items": {
                        "get": {"operationId": "listItems"},
                        "post": {"operationId": "addItem"},
                    },
                    "/find": {"post": {"operationId": "searchItems"}},
                },
            }
        )
    )
    tape = "openapi-import"
    done = CliRunner().invoke(
        app,
        ["tape", "rules", tape, "--from-openapi", str(spec), "--accept-inferred"],
        env={"GROUNDHOG_RESOLVER_URL": stack.resolver.url, "COLUMNS": "200"},
    )
    assert done.exit_code == 0, done.output
    assert "searchItems" in done.output and "inferred" in done.output
    assert stack.admin("GET", f"/v1/tapes/{tape}").json()["dependency_model"] == "rules"
    branches = stack.fork(tape, 2)

    def call(branch: str, method: str, path: str) -> str:
        with httpx.Client(proxy=proxy_url(stack.proxy.port, tape, branch), trust_env=False) as c:
            answer = c.request(method, f"{STAND_IN_API}{path}", json={"q": "groundhog"})
        assert answer.status_code == 200, answer.text
        return answer.headers["x-groundhog-decision"]

    finds, posts = plain.state.count("/find"), plain.state.count("/items", method="POST")
    assert [call(b, "POST", "/find") for b in branches] == ["recorded", "shared"]
    assert [call(b, "GET", "/items") for b in branches] == ["recorded", "shared"]
    assert [call(b, "POST", "/items") for b in branches] == ["write", "write"]
    assert plain.state.count("/find") == finds + 1
    assert plain.state.count("/items", method="POST") == posts + 2
    # Each branch wrote to the API: its search is asked of the world again, not the base.
    assert call(branches[0], "POST", "/find") == "refetched"


def test_a_kept_alive_client_reuses_one_connection_to_a_mapped_host(mapped_stack) -> None:
    """mitmproxy reuses a server connection whose address matches the request's host; a mapped
    connection must still match its original name, or every request opens (and keeps) one more
    connection to the world."""
    stack, plain = mapped_stack.stack, mapped_stack.plain
    tape = stack.open_tape()
    accepts_before = plain.state.accepts
    with httpx.Client(proxy=proxy_url(stack.proxy.port, tape, "root"), trust_env=False) as client:
        answers = [
            client.get(f"http://search.stand-in.test/items/{index}", timeout=30)
            for index in range(8)
        ]
    assert [answer.status_code for answer in answers] == [200] * 8
    assert [answer.headers["X-Groundhog-Decision"] for answer in answers] == ["recorded"] * 8
    assert plain.state.accepts - accepts_before == 1
