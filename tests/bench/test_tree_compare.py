"""bench/tree_compare.py: rows normalised per run, medians per tree, regressions read against
the control rows' own movement."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bench import tree_compare


def run(**shares: float) -> list[dict[str, object]]:
    """One proxy_perf run: condition name -> p50 as a multiple of that run's no-addon mitmdump."""
    rows: list[dict[str, object]] = [
        {"condition": "mitmproxy (no addon)", "clients": 1, "p50_ms": 1.0, "p50_vs_no_addon": 1.0}
    ]
    for name, share in shares.items():
        condition = name.replace("_", " ")
        rows.append(
            {"condition": condition, "clients": 1, "p50_ms": share, "p50_vs_no_addon": share}
        )
    return rows


def test_the_median_over_runs_is_compared_not_one_run() -> None:
    before = [run(hit=1.0), run(hit=1.0), run(hit=3.0)]
    after = [run(hit=1.1), run(hit=1.2), run(hit=1.1)]
    (hit,) = [c for c in tree_compare.compare(before, after) if c.condition == "hit"]
    assert hit.before == 1.0
    assert hit.after == pytest.approx(1.1)
    assert hit.ratio == pytest.approx(1.1)


def test_a_row_over_budget_and_over_the_noise_floor_is_a_regression() -> None:
    before = [run(direct=0.1, hit=1.0, record=2.0)]
    after = [run(direct=0.102, hit=1.3, record=2.02)]
    flagged = tree_compare.regressions(tree_compare.compare(before, after), budget=1.05)
    assert [(c.condition, round(c.ratio, 2)) for c in flagged] == [("hit", 1.3)]


def test_a_row_within_what_the_controls_moved_on_their_own_is_not_flagged() -> None:
    before = [run(**{"mitmproxy_server_replay": 0.8}, hit=1.0)]
    after = [run(**{"mitmproxy_server_replay": 1.0}, hit=1.2)]
    comparisons = tree_compare.compare(before, after)
    assert tree_compare.noise_floor(comparisons) == pytest.approx(1.25)
    assert tree_compare.regressions(comparisons, budget=1.05) == []
    assert "over budget, within noise" in tree_compare.table(comparisons, budget=1.05)


def test_rows_only_one_tree_measured_are_left_out() -> None:
    comparisons = tree_compare.compare([run(hit=1.0)], [run(hit=1.0, mcp_hit=0.9)])
    assert {c.condition for c in comparisons} == {"mitmproxy (no addon)", "hit"}


def test_the_command_exits_1_on_a_regression_and_names_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before, after = tmp_path / "before.json", tmp_path / "after.json"
    before.write_text(json.dumps(run(direct=0.1, hit=1.0)))
    after.write_text(json.dumps(run(direct=0.1, hit=1.5)))
    assert tree_compare.main(["--before", str(before), "--after", str(after)]) == 1
    assert "| hit | 1 | 1.00 | 1.50 | 1.50x | REGRESSION |" in capsys.readouterr().out
    after.write_text(json.dumps(run(direct=0.1, hit=1.01)))
    assert tree_compare.main(["--before", str(before), "--after", str(after)]) == 0


def test_a_file_that_is_not_a_proxy_perf_run_names_the_fix(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(SystemExit, match=re.escape("python -m bench.proxy_perf --json FILE")):
        tree_compare.main(["--before", str(broken), "--after", str(broken)])
