"""`python -m bench.mcp_bias_report RUN_DIR`: the MCP bias of a committed run, taken apart.

Reads a run's raw files (bench/rawfiles.py), computes each measured day's expectation in
process (bench/mcp_bias.py) and prints, for the MCP cell: the bias as the run computed it, the
offset the choice of days puts into every run, the bias with the days taken out, the live
reference against the world's expectation on its own days (the proposed control), the
reference over the run's quarters (time in the run, i.e. load), and with `--runs N` the spread
of N whole simulated runs on the same days. Without it the analysis of issue 58 item 3 could
not be repeated on the next run.
"""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from bench import mcp_bias, rawfiles
from bench.config import BenchConfig, for_world, quick_config
from bench.measurements import ConditionData, ReferenceData
from bench.stats import Estimate, mean_estimate

CELL = "mcp/uncooperative"
CONDITION = "groundhog"

logger = logging.getLogger(__name__)


def run_contrasts(
    condition: ConditionData, reference: ReferenceData, better: str, worse: str
) -> mcp_bias.RunContrasts:
    """A run's per-day contrasts from its raw rollouts."""
    rewards: dict[int, dict[str, float]] = {}
    for rollout in condition.rollouts:
        rewards.setdefault(rollout.world_seed, {})[rollout.action] = rollout.reward
    return mcp_bias.RunContrasts(
        condition={day: row[better] - row[worse] for day, row in rewards.items()},
        better={r.world_seed: r.reward for r in reference.better},
        worse={r.world_seed: r.reward for r in reference.worse_independent},
    )


def quarters(run: mcp_bias.RunContrasts, parts: int = 4) -> list[Estimate]:
    """The reference's contrast over consecutive parts of its pairs, in collection order."""
    better = np.array([run.better[day] for day in sorted(run.better)])
    worse = np.array([run.worse[day] for day in sorted(run.worse)])
    return [
        mean_estimate(better[i] - worse[i]) for i in np.array_split(np.arange(len(better)), parts)
    ]


def _pair(estimate: Estimate) -> dict[str, float]:
    low, high = estimate.interval()
    return {
        "value": round(estimate.value, 4),
        "stderr": round(estimate.stderr, 4),
        "low": round(low, 4),
        "high": round(high, 4),
    }


def analyse(
    directory: Path, *, runs: int = 0, salts: Sequence[int] = mcp_bias.SALTS
) -> dict[str, Any]:
    """The numbers `main` prints, for the MCP cell of the run in ``directory``."""
    raw = rawfiles.read(directory)
    cell = raw.cells[CELL]
    config = mcp_bias_config(raw, cell)
    layout = mcp_bias.Layout.of(config)
    run = run_contrasts(
        cell["conditions"][CONDITION], cell["reference"], layout.better, layout.worse
    )
    expected = mcp_bias.expectations(layout, salts)
    result: dict[str, Any] = {
        "salts": len(salts),
        "condition_days": [layout.condition_days[0], layout.condition_days[-1]],
        "reference_days": [layout.better_days[0], layout.worse_days[-1]],
        "expected": {
            "condition_contrast": round(mcp_bias.condition_expectation(layout, expected), 4),
            "reference_contrast": round(mcp_bias.reference_expectation(layout, expected), 4),
            "fixed_offset": _pair(mcp_bias.fixed_offset(layout, expected)),
        },
        "raw_bias": _pair(mcp_bias.raw_bias(run)),
        "adjusted_bias": _pair(mcp_bias.adjusted_bias(run, layout, expected)),
        "reference_against_expectation": _pair(
            mcp_bias.reference_against_expectation(run, layout, expected)
        ),
        "reference_quarters": [_pair(q) for q in quarters(run)],
    }
    variance = mcp_bias.adjusted_pair_variance(run, layout, expected)
    plan = mcp_bias.control_plan()
    result["control"] = {
        "margin": plan.margin,
        "stderr_needed": round(plan.stderr_needed, 5),
        "pass_at_zero": round(plan.pass_at_zero, 3),
        "pass_at_discrepancy": round(plan.pass_at_discrepancy, 3),
        "adjusted_pair_variance": round(variance, 4),
        "pairs_needed": mcp_bias.pairs_needed(variance, plan.stderr_needed),
    }
    if runs:
        result["simulated_runs"] = spread(layout, runs)
    return result


def spread(layout: mcp_bias.Layout, runs: int) -> dict[str, Any]:
    """Mean and s.d. over ``runs`` whole runs simulated on the layout's days (per-call draws
    alone differ): the bias's mean is the fixed offset, its s.d. what a run varies by."""
    simulated = mcp_bias.simulated_runs(layout, [10_000 + i for i in range(runs)])
    columns = {
        "bias": [mcp_bias.raw_bias(s).value for s in simulated],
        "reference": [
            float(np.mean(list(s.better.values())) - np.mean(list(s.worse.values())))
            for s in simulated
        ],
        "condition": [float(np.mean(list(s.condition.values()))) for s in simulated],
    }
    out: dict[str, Any] = {"runs": runs}
    for name, values in columns.items():
        out[f"{name}_mean"] = round(float(np.mean(values)), 4)
        out[f"{name}_sd"] = round(float(np.std(values, ddof=1)), 4)
    out["bias_positive"] = sum(value > 0 for value in columns["bias"])
    return out


def simulated_layout(worlds: int, pairs: int) -> mcp_bias.Layout:
    """The MCP cell's layout at other sizes (the days and seeds every run uses)."""
    config = for_world(quick_config(), "mcp")
    return mcp_bias.Layout.of(replace(config, worlds=worlds, reference_pairs=pairs))


def mcp_bias_config(raw: rawfiles.RawRun, cell: dict[str, Any]) -> BenchConfig:
    """The MCP cell's configuration as it ran: its actions and its own sizes."""
    config = for_world(raw.config, "mcp")
    worlds = len(cell["conditions"][CONDITION].rollouts) // len(config.actions)
    return replace(config, worlds=worlds, reference_pairs=len(cell["reference"].better))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.mcp_bias_report", description=__doc__)
    parser.add_argument("run", type=Path, nargs="?", help="a run's directory (its raw/ inside)")
    parser.add_argument("--runs", type=int, default=0, help="also simulate N whole runs")
    parser.add_argument(
        "--simulate",
        metavar="WORLDS,PAIRS",
        help="no run: only simulate --runs whole runs at these sizes (e.g. 190,380)",
    )
    options = parser.parse_args(argv)
    if options.simulate:
        worlds, pairs = (int(part) for part in options.simulate.split(","))
        report = spread(simulated_layout(worlds, pairs), options.runs or 40)
        print(json.dumps({"worlds": worlds, "pairs": pairs, **report}, indent=2))
        return 0
    if options.run is None:
        parser.error("name a run's directory, or --simulate WORLDS,PAIRS")
    logging.basicConfig(level=logging.INFO)
    directory = (
        options.run / rawfiles.RAW_DIR if (options.run / rawfiles.RAW_DIR).is_dir() else options.run
    )
    print(json.dumps(analyse(directory, runs=options.runs), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
