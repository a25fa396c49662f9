"""Every hook of Groundhog's addons fails closed (proxy/fail_closed.py)."""

from __future__ import annotations

import asyncio
import inspect

import pytest
from mitmproxy import http
from mitmproxy.proxy import layer
from mitmproxy.proxy.context import Context
from mitmproxy.proxy.server_hooks import ServerConnectionHookData
from mitmproxy.test import taddons, tflow

from proxy import native, server
from proxy.fail_closed import GUARDED_HOOKS, REFUSAL, ClosedTunnel, close, guarded, is_guarded
from proxy.live import META, FlowState


def test_every_hook_of_every_groundhog_addon_is_guarded() -> None:
    with taddons.context():
        pass
    import mitmproxy.addons  # noqa: F401  (registers mitmproxy's hook names)
    from mitmproxy import hooks

    names = set(hooks.all_hooks) - {"load", "configure", "running", "done", "update"}
    ours = [addon for addon in _addons() if type(addon).__module__.startswith("proxy.")]
    assert ours, "no Groundhog addon found"
    unguarded = [
        f"{type(addon).__name__}.{name}"
        for addon in ours
        for name in names
        if name in type(addon).__dict__ and not is_guarded(type(addon).__dict__[name])
    ]
    assert unguarded == []
    assert any("next_layer" in type(a).__dict__ for a in ours)
    assert {"request", "response", "next_layer", "websocket_message"} <= GUARDED_HOOKS


def _addons() -> list[object]:
    async def build() -> list[object]:
        master = server.build_master()
        found: list[object] = []
        for addon in master.addons.chain:
            found.append(addon)
            found.extend(getattr(addon, "addons", []))
        return found

    return asyncio.run(build())


class Broken:
    async def request(self, flow: http.HTTPFlow) -> None:
        raise UnicodeEncodeError("utf-8", "locked\udcff", 6, 7, "surrogates not allowed")

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        raise KeyError("action")


def test_a_request_hook_that_raises_refuses_the_flow() -> None:
    flow = tflow.tflow()
    asyncio.run(guarded(Broken.request)(Broken(), flow))
    assert flow.response is not None and flow.response.status_code == 500
    assert flow.response.headers["X-Groundhog-Decision"] == "refused"
    assert b"UnicodeEncodeError" in flow.response.content
    assert flow.metadata[META].mode == "answered"  # the addon's later hooks leave it alone


def test_a_failed_responseheaders_replaces_the_worlds_answer_in_response() -> None:
    flow = tflow.tflow(resp=True)
    flow.metadata[META] = FlowState(mode="live")
    guarded(Broken.responseheaders)(Broken(), flow)
    assert REFUSAL in flow.metadata and flow.metadata[META].mode == "answered"

    class Later:
        def response(self, flow: http.HTTPFlow) -> None:
            raise AssertionError("a refused flow's later hooks must not run")

    guarded(Later.response)(Later(), flow)
    assert flow.response is flow.metadata[REFUSAL]
    assert flow.response.status_code == 502


def test_a_streaming_answer_is_killed() -> None:
    flow = tflow.tflow(resp=True)
    flow.metadata[META] = FlowState(mode="live", streaming=True)
    close(flow, "response", RuntimeError("x"))
    assert flow.error is not None and flow.error.msg == flow.error.KILLED_MESSAGE


def test_error_hook_names_the_refusal_for_the_error_page() -> None:
    flow = tflow.tflow()
    close(flow, "error", RuntimeError("x"))
    assert flow.metadata[native.FAILURE_RESPONSE].headers["X-Groundhog-Decision"] == "refused"


@pytest.mark.parametrize("hook", ["websocket_message", "tcp_message"])
def test_message_hooks_kill_the_flow(hook: str) -> None:
    flow = tflow.twebsocketflow() if hook.startswith("websocket") else tflow.ttcpflow()
    close(flow, hook, RuntimeError("x"))
    assert flow.error is not None and flow.error.msg == flow.error.KILLED_MESSAGE


def test_connection_hooks_close() -> None:
    client = tflow.tclient_conn()
    close(client, "client_connected", RuntimeError("x"))
    assert client.error and "client_connected" in client.error
    data = ServerConnectionHookData(server=tflow.tserver_conn(), client=client)
    close(data, "server_connect", RuntimeError("x"))
    assert data.server.error
    with taddons.context() as context:
        nextlayer = layer.NextLayer(Context(client, context.options))
        close(nextlayer, "next_layer", RuntimeError("x"))
    assert isinstance(nextlayer.layer, ClosedTunnel)


def test_guarded_keeps_sync_hooks_sync() -> None:
    assert not inspect.iscoroutinefunction(guarded(Broken.responseheaders))
    assert inspect.iscoroutinefunction(guarded(Broken.request))
