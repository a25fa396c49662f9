"""Branch capabilities through the real proxy and resolver, against a world that counts what
reaches it: under `required` a worker acts only on the branch whose capability it presents
(a sibling, a parent, another tape: 403 refused, the world untouched), the exports
`groundhog env` prints work for curl and requests, a sidecar pinned to one branch refuses the
others, and a lease holder answering hits itself refuses a hit without the capability."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
import requests

from bench.lease_scale import resolves
from bench.reliability.raw_tunnel import EchoServer, raw_through_tunnel
from tests.proxy.clients import Reply, with_curl, with_requests
from tests.proxy.stack import Stack
from tests.proxy.upstream_server import Upstream
from tests.support.servers import REPO_ROOT, ServerProcess, start_server


def credentials_url(stack_port: int, tape: str, branch: str, capability: str | None) -> str:
    password = quote(branch, safe="") + (f":{capability}" if capability else "")
    return f"http://{quote(tape, safe='')}:{password}@127.0.0.1:{stack_port}"


def fork(stack: Stack, tape: str, children: int = 2) -> dict[str, str]:
    answer = stack.admin("POST", f"/v1/tapes/{tape}/fork", json={"children": children})
    return answer.json()["capabilities"]


def refused(reply: Reply, kind: str = "capability-refused") -> bool:
    return (
        reply.status == 403
        and reply.decision == "refused"
        and json.loads(reply.body)["type"].endswith(kind)
    )


def test_under_required_a_worker_reaches_only_the_branch_it_holds(
    stack: Stack, upstream: Upstream
) -> None:
    tape = stack.open_tape(branch_capabilities="required")
    capabilities = fork(stack, tape)
    own, sibling = capabilities["root/b0"], capabilities["root/b1"]
    held_out = stack.open_tape(branch_capabilities="required")
    other_tape = fork(stack, held_out)["root/b0"]
    url = f"{upstream.url}/search?q=wind"
    port = stack.proxy.port

    attempts = {
        "own capability, sibling's branch": (credentials_url(port, tape, "root/b1", own), {}),
        "own credentials, sibling named by header": (
            credentials_url(port, tape, "root/b0", own),
            {"X-Groundhog-Branch": "root/b1"},
        ),
        "own capability, parent's branch": (credentials_url(port, tape, "root", own), {}),
        "no capability": (credentials_url(port, tape, "root/b0", None), {}),
        "another tape's capability": (credentials_url(port, tape, "root/b0", other_tape), {}),
        "own capability, another tape": (credentials_url(port, held_out, "root/b0", own), {}),
    }
    for what, (proxy, headers) in attempts.items():
        reply = with_requests(proxy, url, stack.ca, headers)
        assert refused(reply), (what, reply.status, reply.body)
    assert upstream.state.count("/search") == 0, "nothing refused reached the world"

    first = with_curl(credentials_url(port, tape, "root/b0", own), url, stack.ca, {})
    assert (first.status, first.decision) == (200, "recorded")
    header_form = with_curl(
        f"http://127.0.0.1:{port}",
        url,
        stack.ca,
        {
            "X-Groundhog-Tape": tape,
            "X-Groundhog-Branch": "root/b1",
            "X-Groundhog-Capability": sibling,
        },
    )
    assert (header_form.status, header_form.decision) == (200, "shared")
    assert header_form.body == first.body
    assert upstream.state.count("/search") == 1
    # The world never sees a capability, in any form.
    assert all(
        own not in str(seen) and sibling not in str(seen) for seen in upstream.state.requests
    )


def test_inside_a_tunnel_the_connects_capability_opens_only_its_branch(
    stack: Stack, tls_upstream: Upstream
) -> None:
    tape = stack.open_tape(branch_capabilities="required")
    own = fork(stack, tape)["root/b0"]
    url = f"{tls_upstream.url}/private"
    sibling_branch = credentials_url(stack.proxy.port, tape, "root/b1", own)
    assert refused(with_requests(sibling_branch, url, stack.ca, {}))
    assert tls_upstream.state.count("/private") == 0
    served = with_requests(
        credentials_url(stack.proxy.port, tape, "root/b0", own), url, stack.ca, {}
    )
    assert (served.status, served.decision) == (200, "recorded")


def test_an_optional_tape_needs_no_capability(stack: Stack, upstream: Upstream) -> None:
    tape = stack.open_tape()  # a loopback resolver's default: optional
    fork(stack, tape)
    reply = with_curl(
        credentials_url(stack.proxy.port, tape, "root/b1", None),
        f"{upstream.url}/open",
        stack.ca,
        {},
    )
    assert (reply.status, reply.decision) == (200, "recorded")


def groundhog(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "groundhog.cli", *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
    )


def test_the_exports_groundhog_env_prints_work_for_real_clients_under_required(
    stack: Stack, upstream: Upstream, tmp_path: Path
) -> None:
    tape = stack.open_tape(branch_capabilities="required")
    fork(stack, tape)
    cli_env = {
        "GROUNDHOG_RESOLVER_URL": stack.resolver.url,
        "GROUNDHOG_PROXY_URL": stack.proxy.url,
        "XDG_CACHE_HOME": str(tmp_path),
    }
    printed = groundhog("env", "--tape", tape, "--branch", "root/b0", "--json", env=cli_env)
    assert printed.returncode == 0, printed.stderr
    exports = json.loads(printed.stdout)
    assert exports["GROUNDHOG_CAPABILITY"] in exports["HTTP_PROXY"]
    url = f"{upstream.url}/env?q=1"

    # curl reads http_proxy and CURL_CA_BUNDLE from the environment alone.
    worker = {**os.environ, **exports}
    curl = subprocess.run(
        ["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", url],
        env=worker,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert curl.stdout == "200"
    # requests takes HTTP_PROXY from the environment (trust_env), as a worker's code does.
    with requests.Session() as session:
        session.proxies = {"http": exports["HTTP_PROXY"], "https": exports["HTTPS_PROXY"]}
        again = session.get(url, timeout=60)
    assert (again.status_code, again.headers["X-Groundhog-Decision"]) == (200, "recorded")
    assert upstream.state.count("/env") == 2  # occurrences 0 and 1: both went live once

    # `groundhog run` puts the same credentials in front of a command.
    ran = groundhog(
        "run", "--tape", tape, "--branch", "root/b1", "--",
        "curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", url,
        env=cli_env,
    )  # fmt: skip
    assert (ran.returncode, ran.stdout) == (0, "200"), ran.stderr
    assert upstream.state.count("/env") == 2, "root/b1 was served root/b0's recording"


@pytest.fixture(scope="module")
def pinned(stack: Stack) -> Iterator[tuple[ServerProcess, str]]:
    """A sidecar started for one branch of a required tape, with its capability."""
    tape = stack.open_tape(branch_capabilities="required")
    capability = fork(stack, tape)["root/b0"]
    args = [
        "proxy", "--resolver-url", stack.resolver.url, "--data", str(stack.data_dir),
        "--ssl-insecure", "--tape", tape, "--branch", "root/b0",
    ]  # fmt: skip
    server = start_server(args, health_path=None, env={"GROUNDHOG_CAPABILITY": capability})
    try:
        yield server, tape
    finally:
        server.stop()


def test_a_pinned_sidecar_serves_its_branch_and_refuses_every_other(
    stack: Stack, pinned: tuple[ServerProcess, str], upstream: Upstream
) -> None:
    sidecar, tape = pinned
    bare = f"http://127.0.0.1:{sidecar.port}"
    url = f"{upstream.url}/pinned"
    for headers in (
        {"X-Groundhog-Branch": "root/b1"},
        {"X-Groundhog-Tape": f"{tape}-other"},
        {"X-Groundhog-Tape": tape, "X-Groundhog-Branch": "root"},
    ):
        assert refused(with_requests(bare, url, stack.ca, headers), "branch-pinned"), headers
    sibling = credentials_url(sidecar.port, tape, "root/b1", None)
    assert refused(with_curl(sibling, url, stack.ca, {}), "branch-pinned")
    assert upstream.state.count("/pinned") == 0

    # Its worker names nothing and presents nothing: the sidecar speaks for its branch.
    served = with_curl(bare, url, stack.ca, {})
    assert (served.status, served.decision) == (200, "recorded")
    events = stack.admin("GET", f"/v1/tapes/{tape}/events", params={"branch": "root/b0"})
    assert [event["decision"] for event in events.json()["events"]] == ["recorded"]


def test_a_lease_holder_refuses_a_hit_without_the_branchs_capability(
    stack: Stack, upstream: Upstream, tmp_path: Path
) -> None:
    tape = stack.open_tape(branch_capabilities="required")
    capabilities = fork(stack, tape)
    args = [
        "proxy", "--resolver-url", stack.resolver.url, "--data", str(stack.data_dir),
        "--ssl-insecure", "--set", "groundhog_branch_leases=true",
        "--set", f"groundhog_lease_dir={tmp_path / 'leases'}",
    ]  # fmt: skip
    sidecar = start_server(args, health_path=None)
    try:

        def ask(branch: str, capability: str | None, path: str) -> Reply:
            proxy = credentials_url(sidecar.port, tape, branch, capability)
            return with_requests(proxy, f"{upstream.url}{path}", stack.ca, {})

        assert ask("root/b0", capabilities["root/b0"], "/a").decision == "recorded"
        # root/b1's lease is taken by its own worker; this sidecar keeps root/b0's answer.
        assert ask("root/b1", capabilities["root/b1"], "/x").decision == "recorded"
        before = resolves(stack.resolver.url)
        wrong = ask("root/b1", capabilities["root/b0"], "/a")
        # Only the resolver refuses so: the holder, which holds the answer, left it to it.
        assert refused(wrong), (wrong.status, wrong.body)
        right = ask("root/b1", capabilities["root/b1"], "/a")
        assert (right.status, right.decision) == (200, "shared")
        # (A refused resolve is not counted: nothing was resolved.)
        assert resolves(stack.resolver.url) == before, "a hit the holder answered itself"
        assert upstream.state.count("/a") == 1
    finally:
        sidecar.stop()


def test_a_raw_tunnel_opens_only_with_its_branchs_capability(stack: Stack) -> None:
    tape = stack.open_tape(branch_capabilities="required", passthrough_hosts=["127.0.0.1"])
    capabilities = fork(stack, tape)
    with EchoServer() as echo:
        # Basic `TAPE:BRANCH:CAPABILITY` on the CONNECT, as a client sends the proxy URL's.
        for branch, capability in (("root/b1", capabilities["root/b0"]), ("root/b0", "")):
            outcome = raw_through_tunnel(
                stack.proxy.port, echo.port, tape=tape, branch=f"{branch}:{capability}"
            )
            assert outcome.closed and not outcome.relayed, (branch, outcome)
        assert echo.snapshot() == (0, 0)
        own = f"root/b0:{capabilities['root/b0']}"
        assert raw_through_tunnel(stack.proxy.port, echo.port, tape=tape, branch=own).relayed
