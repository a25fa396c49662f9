"""Unit tests of the decision table (DESIGN §4), cell by cell."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.policy import Action, Decision, Mode, decide, lookup_fingerprint, naive_fingerprint


def outcome(**overrides: object):
    arguments = {
        "is_write": False,
        "mode": Mode.GROUNDHOG,
        "online": True,
        "true_fingerprint": "",
        "branch": "root/b0",
        "recorded": False,
    }
    arguments.update(overrides)
    return decide(**arguments)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("overrides", "action", "decision", "address"),
    [
        ({"recorded": True}, Action.SERVE, Decision.SHARED, ""),
        ({}, Action.FORWARD, Decision.RECORDED, ""),
        ({"true_fingerprint": "f"}, Action.FORWARD, Decision.REFETCHED, "f"),
        ({"true_fingerprint": "f", "recorded": True}, Action.SERVE, Decision.SHARED, "f"),
        ({"online": False}, Action.SERVE, Decision.REFUSED, ""),
        (
            {"mode": Mode.REPLAY, "true_fingerprint": "f", "recorded": True},
            Action.SERVE,
            Decision.STALE,
            "",
        ),
        ({"mode": Mode.REPLAY, "recorded": True}, Action.SERVE, Decision.SHARED, ""),
        ({"mode": Mode.REPLAY, "true_fingerprint": "f"}, Action.FORWARD, Decision.RECORDED, ""),
        ({"mode": Mode.NAIVE}, Action.FORWARD, Decision.RECORDED, naive_fingerprint("root/b0")),
        ({"is_write": True, "true_fingerprint": "w"}, Action.FORWARD, Decision.WRITE, "w"),
        (
            {"is_write": True, "online": False, "recorded": True},
            Action.SERVE,
            Decision.REPLAYED_WRITE,
            "",
        ),
        ({"is_write": True, "online": False}, Action.SERVE, Decision.REFUSED, ""),
        ({"passthrough": True}, Action.FORWARD, Decision.PASSTHROUGH, ""),
        ({"passthrough": True, "online": False}, Action.SERVE, Decision.REFUSED, ""),
    ],
)
def test_decision_table(overrides: dict, action: Action, decision: Decision, address: str) -> None:
    result = outcome(**overrides)
    facts = {"is_write": False, "mode": Mode.GROUNDHOG, "true_fingerprint": "", "branch": "root/b0"}
    facts.update({name: overrides[name] for name in facts.keys() & overrides.keys()})
    assert (result.action, result.decision) == (action, decision)
    assert lookup_fingerprint(**facts) == address  # type: ignore[arg-type]


def test_naive_addresses_are_private_per_branch() -> None:
    assert naive_fingerprint("root/b0") != naive_fingerprint("root/b1")
    assert naive_fingerprint("root/b0").startswith("naive:")


def test_enum_errors_list_valid_values() -> None:
    with pytest.raises(ValueError, match="magic"):
        Mode("magic")
    assert [str(m) for m in Mode] == ["naive", "replay", "groundhog"]


@given(
    is_write=st.booleans(),
    mode=st.sampled_from(list(Mode)),
    online=st.booleans(),
    true_fingerprint=st.sampled_from(["", "f1"]),
    recorded=st.booleans(),
    passthrough=st.booleans(),
)
def test_invariants_of_the_table(
    is_write, mode, online, true_fingerprint, recorded, passthrough
) -> None:
    result = decide(
        is_write=is_write,
        mode=mode,
        online=online,
        true_fingerprint=true_fingerprint,
        branch="root/b0",
        recorded=recorded,
        passthrough=passthrough,
    )
    if not online:
        assert result.action is Action.SERVE  # sealed: never live
    if result.decision is Decision.STALE:
        assert mode is Mode.REPLAY and true_fingerprint != ""  # only replay lies
    if mode is Mode.GROUNDHOG and not is_write and result.decision is Decision.SHARED:
        address = lookup_fingerprint(
            mode=mode, is_write=False, true_fingerprint=true_fingerprint, branch="root/b0"
        )
        assert address == true_fingerprint  # groundhog serves the true address
    if result.action is Action.FORWARD and not passthrough:
        assert online
