"""The raw-tunnel scenario (bench/reliability/tunnels.py) and its rows in the report."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.reliability import tunnels
from bench.reliability.report import promises


@pytest.mark.slow
def test_every_case_holds_and_nothing_leaks(tmp_path: Path) -> None:
    figures = tunnels.run_tunnels(tmp_path)
    assert figures["held"], figures
    assert figures["bytes_leaked_when_closed"] == 0
    relayed = [case for case in figures["cases"] if case["relayed"]]
    assert [case["case"] for case in relayed] == ["online tape, host on passthrough_hosts"]


def test_each_case_is_a_promise_row_with_its_figure() -> None:
    case = {
        "case": "sealed tape",
        "expect": "closed, nothing reaches the world",
        "bytes_reached_world": 23,
        "held": False,
    }
    rows = promises({"tunnels": {"cases": [case]}})
    assert rows == [
        (
            "tunnels",
            "raw CONNECT tunnel, sealed tape: closed, nothing reaches the world "
            "(23 bytes reached the world)",
            False,
        )
    ]
