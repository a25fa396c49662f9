"""The capability a worker presents and the pin of a one-branch sidecar, in mitmproxy's test
harness against a scripted resolver (proxy/capabilities.py, proxy/identity.py)."""

from __future__ import annotations

import json
from collections.abc import Awaitable

import pytest
from mitmproxy import http
from mitmproxy.test import tflow

from proxy.addon import GroundhogAddon
from proxy.capabilities import split_branch_password
from proxy.identity import Credentials, parse_proxy_authorization
from tests.proxy.live_script import b64
from tests.proxy.stub_resolver import StubResolver
from tests.proxy.test_addon import make_flow, run, serve_answer

CAP = "0123456789abcdef" * 2


def basic(text: str) -> str:
    return "Basic " + b64(text.encode())


@pytest.mark.parametrize(
    ("password", "expected"),
    [
        ("root/b0", ("root/b0", None)),
        (f"root/b0:{CAP}", ("root/b0", CAP)),
        (f"root%2Fb0:{CAP}", ("root/b0", CAP)),  # the URL's userinfo as written ...
        (f"root%2Fb0%3A{CAP}", ("root/b0", CAP)),  # ... with its ':' encoded too
        (f":{CAP}", (None, CAP)),
        ("root:", ("root", None)),
    ],
)
def test_the_basic_password_is_branch_then_capability(password, expected) -> None:
    assert split_branch_password(password) == expected
    assert parse_proxy_authorization(basic(f"demo:{password}")) == Credentials("demo", *expected)


@pytest.mark.parametrize(
    ("headers", "connect_headers", "options", "expected"),
    [
        ({"X-Groundhog-Tape": "t", "X-Groundhog-Branch": "root", "X-Groundhog-Capability": CAP},
         None, {}, CAP),
        ({"Proxy-Authorization": basic(f"t:root%2Fb1:{CAP}")}, None, {}, CAP),
        ({}, {"Proxy-Authorization": basic(f"t:root/b2:{CAP}")}, {}, CAP),
        ({}, {"X-Groundhog-Tape": "t", "X-Groundhog-Branch": "root", "X-Groundhog-Capability": CAP},
         {}, CAP),
        ({}, None, {"groundhog_tape": "t", "groundhog_branch": "root",
                    "groundhog_capability": CAP}, CAP),
        ({"Proxy-Authorization": basic(f"t:root:{'f' * 32}"), "X-Groundhog-Capability": CAP},
         None, {}, CAP),
        ({"X-Groundhog-Tape": "t", "X-Groundhog-Branch": "root"}, None, {}, None),
    ],
    ids=["header", "credentials", "connect-credentials", "connect-header", "pinned-option",
         "header-wins", "none"],
)  # fmt: skip
def test_the_presented_capability_reaches_the_resolver_and_never_the_world(
    headers, connect_headers, options, expected
) -> None:
    flow = make_flow("http://127.0.0.1:1/x", headers=headers)

    def remember_connect(addon: GroundhogAddon) -> Awaitable[None] | None:
        if not connect_headers:
            return None
        connect = tflow.tflow(client_conn=flow.client_conn)
        connect.request = http.Request.make("CONNECT", "http://127.0.0.1:1/")
        connect.request.headers.update(connect_headers)
        return addon.http_connect(connect)

    with StubResolver(lambda route, payload: (200, serve_answer())) as resolver:
        run(flow, resolver.url, before=remember_connect, **options)
        ((_, payload, _),) = resolver.received
    assert payload.get("capability") == expected
    assert "X-Groundhog-Capability" not in flow.request.headers
    assert "Proxy-Authorization" not in flow.request.headers
    assert all(CAP not in value for _, value in payload["headers"])


@pytest.mark.parametrize(
    "headers",
    [
        {"X-Groundhog-Branch": "root/b1"},
        {"X-Groundhog-Tape": "held-out"},
        {"Proxy-Authorization": basic(f"pinned:root%2Fb1:{CAP}")},
        {"Proxy-Authorization": basic("other:root")},
    ],
    ids=["sibling-header", "other-tape-header", "sibling-credentials", "other-tape-credentials"],
)
def test_a_pinned_sidecar_refuses_another_branch_whatever_the_request_says(headers) -> None:
    flow = make_flow("http://127.0.0.1:1/x", headers=headers)
    with StubResolver(lambda route, payload: (200, serve_answer())) as resolver:
        run(flow, resolver.url, groundhog_tape="pinned", groundhog_branch="root/b0")
        assert resolver.received == []
    assert flow.response is not None and flow.response.status_code == 403
    assert flow.response.headers["X-Groundhog-Decision"] == "refused"
    problem = json.loads(flow.response.content)
    assert problem["type"].endswith("branch-pinned")
    assert "nothing was asked or forwarded" in problem["detail"]


def test_a_pinned_sidecar_serves_requests_naming_its_own_branch_or_none() -> None:
    for headers in ({}, {"X-Groundhog-Tape": "pinned", "X-Groundhog-Branch": "root/b0"}):
        flow = make_flow("http://127.0.0.1:1/x", headers=headers)
        with StubResolver(lambda route, payload: (200, serve_answer())) as resolver:
            run(
                flow,
                resolver.url,
                groundhog_tape="pinned",
                groundhog_branch="root/b0",
                groundhog_capability=CAP,
            )
            ((_, payload, _),) = resolver.received
        assert (payload["tape"], payload["branch"], payload["capability"]) == (
            "pinned",
            "root/b0",
            CAP,
        )
        assert flow.response is not None and flow.response.status_code == 200


def test_the_resolvers_refusal_reaches_the_worker_as_refused() -> None:
    problem = {"type": "https://groundhog.dev/problems/capability-refused", "status": 403}
    flow = make_flow("http://127.0.0.1:1/x", headers={"X-Groundhog-Tape": "t"})
    with StubResolver(lambda route, payload: (403, problem)) as resolver:
        run(flow, resolver.url, groundhog_branch="root")
    assert flow.response is not None and flow.response.status_code == 403
    assert flow.response.headers["X-Groundhog-Decision"] == "refused"
    assert json.loads(flow.response.content) == problem


def test_a_captured_worker_presents_its_registered_capability(tmp_path) -> None:
    from mitmproxy.proxy.mode_specs import ProxyMode

    from groundhog.capture_registry import CapturedWorker, register

    worker = CapturedWorker("169.254.64.2", "t", "root/b1", owner_pid=1, capability=CAP)
    register(tmp_path, worker)
    flow = make_flow("http://127.0.0.1:1/x")
    flow.client_conn.proxy_mode = ProxyMode.parse("transparent")
    flow.client_conn.peername = (worker.address, 40000)

    def connected(addon: GroundhogAddon) -> None:
        addon.capture.client_connected(flow.client_conn)

    with StubResolver(lambda route, payload: (200, serve_answer())) as resolver:
        run(flow, resolver.url, before=connected, groundhog_capture_dir=str(tmp_path))
        ((_, payload, _),) = resolver.received
    assert (payload["tape"], payload["branch"], payload.get("capability")) == ("t", "root/b1", CAP)
