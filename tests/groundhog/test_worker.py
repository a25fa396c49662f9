"""Workers through the real proxy: a subprocess started with `branch.env()`, and in-process clients.

Two branches of one fork ask the same question; the upstream must be hit once and both
branches must get the same bytes, over HTTP and over HTTPS (trusting the proxy CA that
`branch.env()` downloaded).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

from groundhog.client import Groundhog
from tests.groundhog.upstream import Upstream
from tests.support.servers import REPO_ROOT

WORKER = """
import json, os, sys
import httpx, requests
out = []
for url in sys.argv[1:]:
    with_requests = requests.get(url, timeout=30)
    with_httpx = httpx.get(url, timeout=30)  # trust_env: HTTPS_PROXY and SSL_CERT_FILE
    for response in (with_requests, with_httpx):
        out.append({"status": response.status_code, "body": response.text,
                    "decision": response.headers.get("X-Groundhog-Decision")})
print(json.dumps(out))
"""


def run_worker(env: dict[str, str], *urls: str) -> list[dict[str, object]]:
    done = subprocess.run(
        [sys.executable, "-c", WORKER, *urls],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_worker_subprocess_goes_through_proxy_and_siblings_share(
    gh_proxied: Groundhog, tape_name: str, http_upstream: Upstream, https_upstream: Upstream
) -> None:
    tape = gh_proxied.open(tape_name, world_seed=3)
    first, second = tape.fork("root", 2)
    http_url = f"{http_upstream.url}/noise/{tape_name}"
    https_url = f"{https_upstream.url}/noise/{tape_name}"

    seen_first = run_worker(first.env(), http_url, https_url)
    seen_second = run_worker(second.env(), http_url, https_url)

    assert [item["status"] for item in seen_first + seen_second] == [200] * 8
    # b0: requests records, httpx (second occurrence of the key) records; b1 replays both.
    assert [item["decision"] for item in seen_first] == ["recorded"] * 4
    assert [item["decision"] for item in seen_second] == ["shared"] * 4
    assert [item["body"] for item in seen_first] == [item["body"] for item in seen_second]
    assert http_upstream.count(f"/noise/{tape_name}") == 2
    assert https_upstream.count(f"/noise/{tape_name}") == 2
    report = gh_proxied.report(tape_name)
    assert report.branches["root/b1"].reads_shared == 4
    assert report.branches["root/b0"].live_calls == 4


def test_in_process_clients_are_wired_to_the_branch(
    gh_proxied: Groundhog, tape_name: str, https_upstream: Upstream
) -> None:
    tape = gh_proxied.open(tape_name, world_seed=4)
    first, second = tape.fork("root", 2)
    url = f"{https_upstream.url}/clients/{tape_name}"
    # Negotiation headers join the request key, and each library sends its own defaults: pin
    # them so the clients ask the same key and only the branch wiring is under test.
    negotiation = {"Accept": "*/*", "Accept-Encoding": "identity"}

    with first.client() as client:
        recorded = client.get(url, headers=negotiation)
    with second.session() as session:
        shared = session.get(url, headers=negotiation, timeout=30)

    async def fetch() -> tuple[str, str | None]:
        async with second.async_client() as client:
            response = await client.get(url, headers=negotiation)
            return response.text, response.headers.get("X-Groundhog-Decision")

    again_text, again_decision = asyncio.run(fetch())
    assert recorded.headers["X-Groundhog-Decision"] == "recorded"
    assert shared.headers["X-Groundhog-Decision"] == "shared"
    assert shared.text == recorded.text
    # The async client is the second ask of this key on root/b1: occurrence 1, not yet recorded.
    assert again_decision == "recorded"
    assert json.loads(again_text)["serial"] != json.loads(recorded.text)["serial"]
    assert https_upstream.count(f"/clients/{tape_name}") == 2
    events = list(gh_proxied.iter_events(tape_name, branch="root/b1"))
    assert [(event.occurrence, event.decision) for event in events] == [
        (0, "shared"),
        (1, "recorded"),
    ]
