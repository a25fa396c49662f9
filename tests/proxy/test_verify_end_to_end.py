"""`tape verify` on tapes recorded through the real proxy by the clients users really run.

Verify replays each recorded request exactly as recorded through the proxy's own resolve path
(resolver/verify/replay.py). Before, it re-sent them with httpx, which put its own `Accept`,
`Accept-Encoding` and `User-Agent` back: tapes recorded by curl, urllib or Node missed, and an
MCP tape missed at `initialize`, whose replay was handed a minted session the store kept as
`[sandbox]`. Two verifies at once broke each other (private servers on racing ports).
"""

from __future__ import annotations

import asyncio
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import requests

from groundhog.client import Groundhog
from groundhog.dataset.publish import publish
from tests.proxy.clients import CLIENTS, node_available, proxy_url, with_urllib
from tests.proxy.stack import Stack
from tests.proxy.test_mcp_end_to_end import group
from tests.proxy.upstream_server import Upstream
from tests.support.servers import ServerProcess

PLAIN_CLIENTS = ["curl", "urllib", "requests", "httpx", "node"]


def verify(stack: Stack, tape: str) -> dict:
    return stack.admin("POST", f"/v1/tapes/{tape}/verify", timeout=300).json()


def publish_checked(stack: Stack, tape: str, folder: Path) -> None:
    """`tape publish` (verify, audit, package) succeeds, and its folder imports back whole."""
    with Groundhog(stack.resolver.url) as client:
        published = publish(client, tape, folder)
        assert published.verification["ok"] is True
        assert (folder / "tape.sqlite3").exists() and (folder / "README.md").exists()
        copy = client.import_tape(folder / "tape.sqlite3", name=f"{tape}-copy")
        assert copy.name == f"{tape}-copy"
        assert client.digest(f"{tape}-copy").digest == published.digest


def record_with_every_client(stack: Stack, upstream: Upstream, tls_upstream: Upstream) -> str:
    """Root reads with each client (plain and over TLS), then four siblings each read and write."""
    tape = stack.open_tape()
    proxy = proxy_url(stack.proxy.port, tape, "root")
    for name in PLAIN_CLIENTS:
        if name == "node" and not node_available():
            continue
        drive = with_urllib if name == "urllib" else CLIENTS[name]
        for base in (upstream.url, tls_upstream.url):
            reply = drive(proxy, f"{base}/page/{name}?q=1", stack.ca, {"X-Asker": name})
            assert reply.status == 200, (name, reply.status, reply.body)
    for index, branch in enumerate(stack.fork(tape, 4)):
        sibling = proxy_url(stack.proxy.port, tape, branch)
        with requests.Session() as session:
            session.trust_env = False
            session.proxies = {"http": sibling, "https": sibling}
            assert session.get(f"{upstream.url}/page/shared", timeout=30).status_code == 200
            posted = session.post(f"{upstream.url}/notes", json={"n": index}, timeout=30)
            assert posted.status_code == 200
            assert session.get(f"{upstream.url}/notes", timeout=30).status_code == 200
        reply = CLIENTS["curl"](sibling, f"{upstream.url}/page/shared", stack.ca, {})
        assert reply.status == 200
    return tape


def test_tapes_recorded_by_curl_urllib_requests_httpx_and_node_verify_and_publish(
    stack: Stack, upstream: Upstream, tls_upstream: Upstream, tmp_path: Path
) -> None:
    tape = record_with_every_client(stack, upstream, tls_upstream)
    hits = len(upstream.state.requests) + len(tls_upstream.state.requests)
    result = verify(stack, tape)
    assert result["problem"] is None and result["first_mismatch"] is None, result
    assert result["ok"] is True and result["live_connections"] == 0
    branches = {branch["branch"]: branch for branch in result["branches"]}
    assert set(branches) == {"root", "root/b0", "root/b1", "root/b2", "root/b3"}
    expected_root = 2 * (len(PLAIN_CLIENTS) - (0 if node_available() else 1))
    assert branches["root"]["matched"] == expected_root
    assert all(branches[f"root/b{n}"]["matched"] == 4 for n in range(4))
    assert len(upstream.state.requests) + len(tls_upstream.state.requests) == hits
    publish_checked(stack, tape, tmp_path / "published")


def test_verifies_side_by_side_on_one_resolver_do_not_disturb_each_other(
    stack: Stack, upstream: Upstream, tls_upstream: Upstream
) -> None:
    tape = record_with_every_client(stack, upstream, tls_upstream)
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _n: verify(stack, tape), range(4)))
    for result in results:
        assert result["ok"] is True, result


def test_an_mcp_tape_of_four_siblings_with_writes_verifies_and_publishes(
    stack: Stack, mcp_world: ServerProcess, tmp_path: Path
) -> None:
    tape = stack.open_tape()
    branches = stack.fork(tape, 4)
    before = httpx.get(f"{mcp_world.url}/calls", timeout=10, trust_env=False).json()
    asyncio.run(group(stack, tape, branches, f"{mcp_world.url}/mcp"))
    ran = httpx.get(f"{mcp_world.url}/calls", timeout=10, trust_env=False).json()
    assert ran != before
    result = verify(stack, tape)
    assert result["problem"] is None and result["first_mismatch"] is None, result
    assert result["ok"] is True and result["live_connections"] == 0
    replayed = {branch["branch"]: branch["matched"] for branch in result["branches"]}
    assert all(replayed[branch] >= 5 for branch in branches), replayed
    assert httpx.get(f"{mcp_world.url}/calls", timeout=10, trust_env=False).json() == ran
    publish_checked(stack, tape, tmp_path / "published")
    assert httpx.get(f"{mcp_world.url}/calls", timeout=10, trust_env=False).json() == ran


def test_json_rpc_graphql_and_sse_tapes_verify(stack: Stack, upstream: Upstream) -> None:
    """Each protocol profile's recording replays through the one path: JSON-RPC (a call and a
    batch, ids as each client numbered them), GraphQL (query and mutation) and an SSE stream."""
    tape = stack.open_tape()
    (branch,) = stack.fork(tape, ["profiles"])
    proxies = {"http": proxy_url(stack.proxy.port, tape, branch)}
    with requests.Session() as session:
        session.trust_env = False
        session.proxies = proxies
        rpc = f"{upstream.url}/rpc"
        assert session.post(rpc, json={"jsonrpc": "2.0", "id": 9, "method": "look"}).ok
        batch = [{"jsonrpc": "2.0", "id": n, "method": "look", "params": [n]} for n in (1, 2)]
        assert session.post(rpc, json=batch).ok
        graphql = f"{upstream.url}/graphql"
        assert session.post(graphql, json={"query": "query Q { items { id } }"}).ok
        assert session.post(graphql, json={"query": "mutation M { add(id: 1) }"}).ok
        streamed = session.get(f"{upstream.url}/sse", headers={"Accept": "text/event-stream"})
        assert streamed.text == "data: one\n\ndata: two\n\n"
    result = verify(stack, tape)
    assert result["ok"] is True and result["first_mismatch"] is None, result
    replayed = {summary["branch"]: summary["matched"] for summary in result["branches"]}
    assert replayed[branch] == 5


def test_a_broken_row_is_a_finding_never_a_500(stack: Stack, upstream: Upstream) -> None:
    """A row the replay cannot read (request headers that are not a header list, as a bad hand
    edit leaves them) is the verdict, at once — before, verify answered 500 after a timeout."""
    tape = stack.open_tape()
    (branch,) = stack.fork(tape, ["broken"])
    proxies = {"http": proxy_url(stack.proxy.port, tape, branch)}
    assert requests.get(f"{upstream.url}/page/broken", proxies=proxies, timeout=30).ok
    with sqlite3.connect(stack.data_dir / "groundhog.sqlite3") as db:
        db.execute(
            "update gh_exchanges set request_headers = '[[1, 2, 3]]' "
            "where tape_id = (select id from gh_tapes where name = ?)",
            (tape,),
        )
    db.close()
    answer = httpx.post(
        f"{stack.resolver.url}/v1/tapes/{tape}/verify", timeout=300, trust_env=False
    )
    assert answer.status_code == 200, answer.text
    result = answer.json()
    assert result["ok"] is False
    found = result["problem"] or result["first_mismatch"]["reason"]
    assert "ValueError" in found or "TypeError" in found, result
