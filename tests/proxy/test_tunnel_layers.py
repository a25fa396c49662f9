"""Which of mitmproxy's layers the tunnel guard lets through untouched, and host list matching."""

from __future__ import annotations

from unittest.mock import MagicMock

from mitmproxy.proxy import layers

from proxy.tunnels import VISIBLE_LAYERS, host_listed, needs_decision


def test_raw_layers_need_a_decision_and_visible_ones_do_not() -> None:
    for raw in (layers.TCPLayer, layers.UDPLayer, layers.DNSLayer):
        assert needs_decision(MagicMock(spec=raw))
    for visible in VISIBLE_LAYERS:
        assert not needs_decision(MagicMock(spec=visible))
    assert not needs_decision(None)  # mitmproxy has not decided yet


def test_host_list_is_case_and_space_insensitive() -> None:
    assert host_listed("DB.internal", [" db.INTERNAL ", ""])
    assert not host_listed("db.internal.evil", ["db.internal"])
    assert not host_listed("db.internal", [])
