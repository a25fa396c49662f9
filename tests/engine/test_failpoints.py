"""Unit tests of engine/failpoints.py: parsing, counting, and dying at the armed place."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from engine import failpoints
from engine.errors import InvalidSpec


def test_a_spec_names_failpoints_and_their_counts() -> None:
    assert failpoints.parse("") == {}
    assert failpoints.parse("resolve.committed, record.before_commit@3") == {
        "resolve.committed": 1,
        "record.before_commit": 3,
    }


def test_the_proxys_failpoints_parse_too_and_are_named_when_one_is_unknown() -> None:
    assert failpoints.parse("proxy.lease.logged@2") == {"proxy.lease.logged": 2}
    with pytest.raises(InvalidSpec) as raised:
        failpoints.parse("proxy.lease.loged")
    assert all(name in str(raised.value) for name in failpoints.PROXY_NAMES)


@pytest.mark.parametrize("spec", ["resolve.commited", "record.committed@0", "wait.committed@x"])
def test_a_bad_spec_is_refused_naming_the_failpoints(spec: str) -> None:
    with pytest.raises(InvalidSpec) as raised:
        failpoints.parse(spec)
    assert raised.value.extras["field"] == "failpoints"


def test_unarmed_failpoints_do_nothing() -> None:
    failpoints.arm("")
    for name in failpoints.NAMES:
        failpoints.reach(name)  # the test process is still here


def test_an_armed_failpoint_kills_the_process_on_its_nth_reach() -> None:
    script = (
        "from engine import failpoints\n"
        "failpoints.arm('record.committed@2')\n"
        "failpoints.reach('resolve.committed')\n"
        "failpoints.reach('record.committed')\n"
        "print('survived the first', flush=True)\n"
        "failpoints.reach('record.committed')\n"
        "print('survived the second', flush=True)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        start_new_session=True,  # it kills its own group: not the test run's
        env={**os.environ},
    )
    assert done.returncode == -signal.SIGKILL
    assert done.stdout.splitlines() == ["survived the first"]


def test_a_hook_failpoint_raises_from_its_nth_time_on_and_does_not_kill() -> None:
    failpoints.arm("proxy.hook.GroundhogAddon.request@2")
    try:
        failpoints.raise_if_armed("proxy.hook.GroundhogAddon.request")  # the 1st time passes
        for _ in range(2):
            with pytest.raises(failpoints.InjectedFailure):
                failpoints.raise_if_armed("proxy.hook.GroundhogAddon.request")
        failpoints.raise_if_armed("proxy.hook.GroundhogAddon.response")  # not armed
    finally:
        failpoints.arm("")


def test_a_bare_hook_prefix_is_refused() -> None:
    with pytest.raises(InvalidSpec, match=r"proxy\.hook\.<Addon>\.<hook>"):
        failpoints.parse("proxy.hook.")
