"""The sidecar's capture addon: identity by source address, refusal of another, local DNS."""

from __future__ import annotations

import base64
from ipaddress import IPv4Address, IPv4Network
from pathlib import Path

import pytest
from mitmproxy import dns, http
from mitmproxy.proxy.mode_specs import ProxyMode
from mitmproxy.proxy.server_hooks import ServerConnectionHookData
from mitmproxy.test import taddons, tflow, tutils

from groundhog.capture_registry import CapturedWorker, register
from proxy.__main__ import build_parser, capture_modes
from proxy.capture import (
    STAND_IN_RANGE,
    Capture,
    StandIns,
    answer_locally,
    named_other_identity,
)

WORKER = CapturedWorker("169.254.64.2", tape="demo", branch="root/b1", owner_pid=1)


def request(**headers: str) -> http.Request:
    made = tutils.treq()
    for name, value in headers.items():
        made.headers[name.replace("_", "-")] = value
    return made


def basic(text: str) -> str:
    return "Basic " + base64.b64encode(text.encode()).decode()


@pytest.mark.parametrize(
    ("headers", "named"),
    [
        ({}, None),
        ({"X_Groundhog_Tape": "demo", "X_Groundhog_Branch": "root/b1"}, None),
        ({"X_Groundhog_Branch": "root/b2"}, "branch 'root/b2'"),
        ({"X_Groundhog_Tape": "other"}, "tape 'other'"),
        ({"Proxy_Authorization": basic("demo:root%2Fb0")}, "branch 'root/b0'"),
        ({"Proxy_Authorization": basic("demo:root%2Fb1")}, None),
    ],
)
def test_a_captured_request_may_only_name_its_own_identity(
    headers: dict[str, str], named: str | None
) -> None:
    mismatch = named_other_identity(request(**headers), WORKER)
    assert (mismatch.named if mismatch else None) == named


def test_a_transparent_connection_from_a_registered_address_is_that_worker(
    tmp_path: Path,
) -> None:
    register(tmp_path, WORKER)
    addon = Capture()
    with taddons.context(addon) as context:
        context.configure(addon, groundhog_capture_dir=str(tmp_path))
        captured = tflow.tclient_conn()
        captured.proxy_mode = ProxyMode.parse("transparent")
        captured.peername = (WORKER.address, 40000)
        stranger = tflow.tclient_conn()
        stranger.proxy_mode = ProxyMode.parse("transparent")
        stranger.peername = ("169.254.64.6", 40000)
        regular = tflow.tclient_conn()
        regular.peername = (WORKER.address, 40001)  # a regular listener: named by headers
        for client in (captured, stranger, regular):
            addon.client_connected(client)
        assert addon.worker_of(captured) == WORKER
        assert addon.worker_of(stranger) is None
        assert addon.worker_of(regular) is None
        addon.client_disconnected(captured)
        assert addon.worker_of(captured) is None


def question(name: str, kind: int = dns.types.A) -> dns.DNSMessage:
    return dns.DNSMessage(
        id=7,
        query=True,
        op_code=dns.op_codes.QUERY,
        authoritative_answer=False,
        truncation=False,
        recursion_desired=True,
        recursion_available=False,
        reserved=0,
        response_code=dns.response_codes.NOERROR,
        questions=[dns.Question(name, kind, dns.classes.IN)],
        answers=[],
        authorities=[],
        additionals=[],
    )


def test_dns_answers_a_stand_in_for_a_name_and_literals_as_themselves() -> None:
    stand_ins = StandIns()
    (local,) = answer_locally(question("localhost"), stand_ins).answers
    assert local.ipv4_address == IPv4Address("127.0.0.1")
    (literal,) = answer_locally(question("10.1.2.3"), stand_ins).answers
    assert literal.ipv4_address == IPv4Address("10.1.2.3")
    (named,) = answer_locally(question("API.example.com."), stand_ins).answers
    assert named.ipv4_address in STAND_IN_RANGE
    assert stand_ins.name_for(str(named.ipv4_address)) == "api.example.com"
    (again,) = answer_locally(question("api.example.com"), StandIns()).answers
    assert again.ipv4_address == named.ipv4_address  # the same after a restart
    assert answer_locally(question("api.example.com", dns.types.AAAA), stand_ins).answers == []
    refused = answer_locally(question("example.com", dns.types.MX), stand_ins)
    assert refused.response_code == dns.response_codes.REFUSED and refused.answers == []


def test_colliding_names_get_different_stand_ins() -> None:
    stand_ins = StandIns(IPv4Network("198.18.0.0/30"))
    addresses = {stand_ins.address_for(f"host{index}.test") for index in range(4)}
    assert len(addresses) == 4
    with pytest.raises(OverflowError):
        stand_ins.address_for("one-too-many.test")


def test_the_proxy_dials_the_name_behind_a_stand_in_and_never_an_unknown_one() -> None:
    addon = Capture()
    handed_out = addon.stand_ins.address_for("api.example.com")
    with taddons.context(addon):
        known = tflow.tserver_conn()
        known.address = (str(handed_out), 443)
        addon.name_behind_stand_in(
            ServerConnectionHookData(server=known, client=tflow.tclient_conn())
        )
        assert known.address == ("api.example.com", 443) and known.error is None
        unknown = tflow.tserver_conn()
        unknown.address = ("198.19.255.1", 80)
        addon.name_behind_stand_in(
            ServerConnectionHookData(server=unknown, client=tflow.tclient_conn())
        )
        assert unknown.error and "never handed out" in unknown.error
        other = tflow.tserver_conn()
        other.address = ("127.0.0.1", 80)
        addon.name_behind_stand_in(
            ServerConnectionHookData(server=other, client=tflow.tclient_conn())
        )
        assert other.address == ("127.0.0.1", 80) and other.error is None


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ([], []),
        (["--transparent-port", "15001"], ["transparent@0.0.0.0:15001"]),
        (
            ["--transparent-port", "15001", "--dns-port", "15053"],
            ["transparent@0.0.0.0:15001", "dns@0.0.0.0:15053"],
        ),
    ],
)
def test_the_listeners_the_flags_ask_for(flags: list[str], expected: list[str]) -> None:
    args = build_parser().parse_args(["--host", "0.0.0.0", *flags])
    assert capture_modes(args) == expected


def test_a_capture_dir_opens_both_listeners_on_loopback(tmp_path: Path) -> None:
    args = build_parser().parse_args(["--capture-dir", str(tmp_path)])
    transparent, dns_mode = capture_modes(args)
    assert transparent == "transparent@127.0.0.1:0"
    assert dns_mode.startswith("dns@127.0.0.1:") and int(dns_mode.rsplit(":", 1)[1]) > 0
