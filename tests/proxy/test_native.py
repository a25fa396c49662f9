"""proxy/native.py: every HTTP layer mitmproxy builds becomes Groundhog's, nothing else does.

The adapted streams' behaviour (the upstream-failed problem in place of mitmproxy's HTML 502,
the deadline) is exercised through the real proxy in test_streams.py and test_end_to_end.py;
this pins the seams of mitmproxy it relies on, so an upgrade that moves them fails here.
"""

from __future__ import annotations

import inspect

from mitmproxy.proxy.context import Context
from mitmproxy.proxy.layers import ClientTLSLayer, HttpLayer, TCPLayer, modes
from mitmproxy.proxy.layers.http import HTTPMode, HttpStream
from mitmproxy.test import taddons, tflow

from proxy.native import GroundhogHttpLayer, GroundhogHttpStream, adapt


def test_http_layers_in_a_decision_are_reclassed_and_others_left_alone() -> None:
    with taddons.context() as tctx:
        context = Context(tflow.tclient_conn(), tctx.options)
        root = modes.HttpProxy(context)
        tls = ClientTLSLayer(context)
        http = HttpLayer(context, HTTPMode.regular)
        root.child_layer, tls.child_layer = tls, http
        assert adapt(root) is root
        assert type(http) is GroundhogHttpLayer and http.mode is HTTPMode.regular
        tcp = TCPLayer(context)
        assert adapt(tcp) is tcp and type(tcp) is TCPLayer
        assert adapt(None) is None


def test_the_mitmproxy_seams_relied_on_are_still_there() -> None:
    for name in ("handle_protocol_error", "check_killed", "make_server_connection"):
        assert name in vars(HttpStream), f"mitmproxy's HttpStream has no {name} any more"
        assert name in vars(GroundhogHttpStream)
    assert list(inspect.signature(HttpLayer.make_stream).parameters) == ["self", "stream_id"]
    states = {"state_wait_for_response_headers", "state_consume_response_body", "state_errored"}
    assert states <= set(vars(HttpStream))
