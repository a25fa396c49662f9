"""Did a change make the proxy slower? `bench.proxy_perf` runs of two trees, compared row by row.

An issue's speed budget ("no proxy row regresses by more than 5%") compares two checkouts, each
measured in its own runs on a shared, noisy machine. Raw milliseconds from different runs carry
the machine's load of the moment, so each row is first normalised by the run's own mitmdump with
no addon (`p50_vs_no_addon`), then the median over the runs is taken per tree, and the row's
ratio is after / before. The rows whose code is the same in both trees (the upstream direct and
mitmproxy's own server replay) are the noise floor: a row's ratio is a regression only where it
stands above both the budget and that floor. Without this, a 5% budget would be read off numbers
whose run-to-run spread is larger than 5%, and a regression would be either invented or missed.

    python -m bench.tree_compare --before pre-1.json pre-2.json --after post-1.json post-2.json
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

# Rows whose code does not change with Groundhog's: what their ratio shows is the machine.
CONTROL_CONDITIONS = ("direct", "mitmproxy server replay")
RowKey = tuple[str, int]


@dataclass(frozen=True)
class Comparison:
    condition: str
    clients: int
    before: float  # median p50 as a multiple of the run's own mitmdump with no addon
    after: float
    control: bool

    @property
    def ratio(self) -> float:
        return self.after / self.before


def normalised_p50s(runs: Sequence[Sequence[dict[str, object]]]) -> dict[RowKey, float]:
    """Per row, the median over runs of its p50 against the same run's no-addon mitmdump."""
    values: dict[RowKey, list[float]] = {}
    for rows in runs:
        for row in rows:
            share = row.get("p50_vs_no_addon")
            if not isinstance(share, int | float) or share <= 0:
                continue
            key = (str(row["condition"]), int(str(row["clients"])))
            values.setdefault(key, []).append(float(share))
    return {key: statistics.median(shares) for key, shares in values.items()}


def compare(
    before: Sequence[Sequence[dict[str, object]]], after: Sequence[Sequence[dict[str, object]]]
) -> list[Comparison]:
    """Every row both trees measured, in the order the before runs list them."""
    old, new = normalised_p50s(before), normalised_p50s(after)
    return [
        Comparison(key[0], key[1], old[key], new[key], key[0] in CONTROL_CONDITIONS)
        for key in old
        if key in new
    ]


def noise_floor(comparisons: Sequence[Comparison]) -> float:
    """The largest departure from 1 among the control rows, as a ratio above 1."""
    departures = [max(c.ratio, 1 / c.ratio) for c in comparisons if c.control]
    return max(departures, default=1.0)


def regressions(comparisons: Sequence[Comparison], budget: float) -> list[Comparison]:
    """Rows slower by more than the budget and by more than the controls moved on their own."""
    floor = noise_floor(comparisons)
    return [c for c in comparisons if not c.control and c.ratio > max(budget, floor)]


def table(comparisons: Sequence[Comparison], budget: float) -> str:
    flagged = {(c.condition, c.clients) for c in regressions(comparisons, budget)}
    lines = [
        "| condition | clients | before (x no addon) | after (x no addon) | after / before | |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for c in comparisons:
        if c.control:
            verdict = "control"
        elif (c.condition, c.clients) in flagged:
            verdict = "REGRESSION"
        elif c.ratio > budget:
            verdict = "over budget, within noise"
        else:
            verdict = "within budget"
        lines.append(
            f"| {c.condition} | {c.clients} | {c.before:.2f} | {c.after:.2f} "
            f"| {c.ratio:.2f}x | {verdict} |"
        )
    lines.append("")
    lines.append(
        f"Budget {budget:.2f}x; noise floor (control rows, same code in both trees) "
        f"{noise_floor(comparisons):.2f}x."
    )
    return "\n".join(lines)


def load_runs(paths: Sequence[Path]) -> list[list[dict[str, object]]]:
    runs = []
    for path in paths:
        try:
            rows = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as error:
            raise SystemExit(
                f"error: {path} is not a proxy_perf --json file ({error}); "
                "write one with python -m bench.proxy_perf --json FILE"
            ) from error
        if not isinstance(rows, list):
            raise SystemExit(f"error: {path} holds no list of rows; is it proxy_perf --json?")
        runs.append(rows)
    return runs


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.tree_compare", description=__doc__)
    parser.add_argument("--before", nargs="+", type=Path, required=True, metavar="JSON")
    parser.add_argument("--after", nargs="+", type=Path, required=True, metavar="JSON")
    parser.add_argument("--budget", type=float, default=1.05, help="allowed after/before")
    args = parser.parse_args(argv)
    comparisons = compare(load_runs(args.before), load_runs(args.after))
    if not comparisons:
        raise SystemExit("error: the two sets of runs share no row (condition, clients)")
    sys.stdout.write(table(comparisons, args.budget) + "\n")
    return 1 if regressions(comparisons, args.budget) else 0


if __name__ == "__main__":
    sys.exit(main())
