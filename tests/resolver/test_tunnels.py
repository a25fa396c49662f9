"""Every cell of the raw-tunnel decision: relayed only while online and only for a listed host."""

from __future__ import annotations

import pytest

from engine.policy import Decision
from resolver.tunnels import decide_tunnel


def _decide(*, online: bool = True, tape_hosts: tuple[str, ...] = (), by_proxy: bool = False):
    return decide_tunnel(
        tape="t",
        online=online,
        host="DB.Internal",
        port=5432,
        tape_passthrough_hosts=tape_hosts,
        listed_by_proxy=by_proxy,
    )


@pytest.mark.parametrize(
    ("online", "tape_hosts", "by_proxy", "expected"),
    [
        (True, (), False, Decision.REFUSED),
        (True, ("db.internal",), False, Decision.PASSTHROUGH),
        (True, ("other.internal",), False, Decision.REFUSED),
        (True, (), True, Decision.PASSTHROUGH),
        (False, ("db.internal",), False, Decision.REFUSED),
        (False, (), True, Decision.REFUSED),
    ],
)
def test_decision_table(
    online: bool, tape_hosts: tuple[str, ...], by_proxy: bool, expected: Decision
) -> None:
    assert _decide(online=online, tape_hosts=tape_hosts, by_proxy=by_proxy).decision is expected


def test_details_say_why() -> None:
    assert "sealed" in _decide(online=False, by_proxy=True).detail
    assert "passthrough_hosts" in _decide().detail
    assert "tape's passthrough_hosts" in _decide(tape_hosts=("db.internal",)).detail
    assert "proxy's passthrough list" in _decide(by_proxy=True).detail
