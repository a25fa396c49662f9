"""Unit tests of the simulator decisions and protocol checks (engine/simulation.py)."""

from __future__ import annotations

import base64
from dataclasses import replace

import pytest

from engine.asks import Ask
from engine.dependencies import Classification
from engine.keys import RequestKey
from engine.policy import DependencyModel, Mode
from engine.request import RequestParts
from engine.simulation import (
    SIMULATED_HEADER,
    marked_response,
    simulator_request,
)

READ = Classification(False, frozenset({"host:h"}), frozenset())
WRITE = Classification(True, frozenset(), frozenset({"host:h"}))


def make_ask(**changes: object) -> Ask:
    ask = Ask(
        tape_id=1,
        tape_name="t",
        mode=Mode.GROUNDHOG,
        online=False,
        model=DependencyModel.CLOSURE,
        world_seed=7,
        cooperative=False,
        branch_id=1,
        branch="root/b0",
        request=RequestParts("GET", "https", "h", 443, "/x", (("q", "1"),), (("Accept", "*/*"),)),
        key=RequestKey("v1 GET https://h/x?q=1", "k" * 64),
        body_sha="b",
        classification=READ,
        occurrence=2,
        true_fingerprint="",
        fingerprint="",
        simulator_url="http://127.0.0.1:1/simulate",
    )
    return replace(ask, **changes)


def test_the_simulator_is_sent_the_redacted_request_and_nearest() -> None:
    sent = simulator_request(make_ask(), [{"key": "v1 GET https://h/x?q=0"}])
    assert sent["request"] == {
        "method": "GET",
        "url": "https://h/x?q=1",
        "headers": [["Accept", "*/*"]],
        "body": "",
    }
    assert (sent["occurrence"], sent["branch"], sent["world_seed"]) == (2, "root/b0", 7)
    assert sent["nearest"] == [{"key": "v1 GET https://h/x?q=0"}]


def test_answers_are_checked_and_marked() -> None:
    body = base64.b64encode(b"{}").decode()
    status, headers, raw = marked_response(
        {"status": 200, "headers": [["A", "1"], [SIMULATED_HEADER, "0"]], "body": body}
    )
    assert (status, raw) == (200, b"{}")
    assert headers == [["A", "1"], [SIMULATED_HEADER, "1"]]
    for bad, message in (
        ({"status": 99}, "status"),
        ({"status": "200"}, "status"),
        ({"status": 200, "headers": [["A"]]}, "headers"),
        ({"status": 200, "headers": {"A": "1"}}, "headers"),
        ({"status": 200, "body": "not base64!"}, "base64"),
    ):
        with pytest.raises(ValueError, match=message):
            marked_response(bad)
