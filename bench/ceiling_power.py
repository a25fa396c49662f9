"""`python -m bench.ceiling_power`: size the ceiling gate so it catches (B) by its effect.

Version 8's ceiling gate (U6, C6: the 95% lower bound of var(C) / var(fully coupled live) above
0.8) failed (B) in every committed run, but only because its interval was wide: (B)'s share
came out 0.891 [0.775, 1.023], and on fresh worlds (B) would pass it about a third of the time
(issue 58, point 4). A gate catches (B) by effect when (B)'s *estimate* lands on the failing
side: the gate here is a threshold on the share's point estimate, placed between (B)'s and
(C)'s shares, at sizes where (B) fails it with >= 95% probability and (C) passes with >= 80%.

The effect sizes come from version 8's committed run (docs/benchmark/ceiling-inputs-v8.json,
the research cells' per-world contrasts copied out of its benchmark.json): (B)'s variance
over (C)'s on the same worlds (paired, so precise: 0.85 and 0.83), and the contrasts'
distributions (their shape: a fresh world is drawn from them, rescaled to the share under
test). (C) is taken to keep exactly the coupled variance (share 1.0: what an honest (C)
keeps; version 8 measured 1.05 and 1.07, both over the same coupled sample), and (B) that
times the paired ratio. A run draws ``worlds`` (B, C) rows and ``pairs`` coupled contrasts,
both cells' gates read the same coupled sample, and each arm's share is its sample variance
over the coupled sample's. Sizes: version 8's 610 worlds stay; the coupled pairs (the
cooperative research cell's reference, a twentieth of a world's cost) grow until both powers
hold, each cell's feasible band at least MIN_BAND wide, the threshold at the geometric middle of
the band both cells share.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
INPUTS = ROOT / "docs" / "benchmark" / "ceiling-inputs-v8.json"
OUTPUT = ROOT / "docs" / "benchmark" / "ceiling-power.json"
CELLS = ("research/uncooperative", "research/cooperative")
B_FAILS = 0.95
C_PASSES = 0.80
RUNS = 4000  # simulated runs per size: a power's s.e. at 0.95 is about 0.0035
SEED = 58
CHUNK = 250  # simulated runs drawn at once
WORLDS = 610  # version 8's research worlds, kept
PAIRS = (1220, 2000, 3000, 4000, 5000, 6000, 8000)  # coupled pairs tried, in order
MIN_BAND = 0.01  # each cell's band at least this wide: about twice the simulation's standard
# error of a 5% or 20% quantile of the share at 4000 runs, so the chosen size is not luck
OLD_GATE = 0.8  # version 8: the 95% bootstrap lower bound above 0.8


def extract_inputs(results: Mapping[str, Any]) -> dict[str, Any]:
    """What the simulation reads from a committed benchmark.json (version 8's)."""
    cells = results["cells"]
    return {
        "source": "docs/benchmark/benchmark.json of protocol version 8's run (commit 465aff3)",
        "coupled_live": cells["research/cooperative"]["raw"]["coupled_live_contrasts"],
        "contrasts": {
            cell: {arm: cells[cell]["raw"]["contrasts"][arm] for arm in ("replay", "groundhog")}
            for cell in CELLS
        },
    }


def _standard(values: Sequence[float]) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    return (array - array.mean()) / array.std(ddof=1)


def effect_sizes(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """Per cell, var(B) / var(C) on the same worlds (the effect), and v8's measured shares."""
    coupled = float(np.var(inputs["coupled_live"], ddof=1))
    sizes: dict[str, Any] = {}
    for cell, arms in inputs["contrasts"].items():
        replay = float(np.var(arms["replay"], ddof=1))
        groundhog = float(np.var(arms["groundhog"], ddof=1))
        sizes[cell] = {
            "replay_over_groundhog": replay / groundhog,
            "v8_share_replay": replay / coupled,
            "v8_share_groundhog": groundhog / coupled,
        }
    return sizes


def simulate_shares(
    inputs: Mapping[str, Any],
    *,
    worlds: int,
    pairs: int,
    shares: Mapping[str, Mapping[str, float]],
    runs: int = RUNS,
    seed: int = SEED,
) -> dict[str, dict[str, np.ndarray]]:
    """Each arm's estimated share in ``runs`` fresh runs, per cell: (B) and (C) rows are drawn
    together (the same worlds), the coupled contrasts apart, each rescaled to ``shares``."""
    rng = np.random.default_rng(seed)
    coupled = _standard(inputs["coupled_live"])
    standard = {
        cell: {arm: _standard(arms[arm]) for arm in ("replay", "groundhog")}
        for cell, arms in inputs["contrasts"].items()
    }
    chunks: list[dict[str, dict[str, np.ndarray]]] = []
    for start in range(0, runs, CHUNK):  # a chunk at a time: a shared machine's memory
        size = min(CHUNK, runs - start)
        coupled_variance = np.var(
            coupled[rng.integers(0, coupled.size, (size, pairs))], axis=1, ddof=1
        )
        chunk: dict[str, dict[str, np.ndarray]] = {}
        for cell, arms in standard.items():
            rows = rng.integers(0, arms["replay"].size, (size, worlds))
            chunk[cell] = {
                arm: np.var(values[rows] * math.sqrt(shares[cell][arm]), axis=1, ddof=1)
                / coupled_variance
                for arm, values in arms.items()
            }
        chunks.append(chunk)
    return {
        cell: {arm: np.concatenate([c[cell][arm] for c in chunks]) for arm in arms}
        for cell, arms in standard.items()
    }


def band(replay: np.ndarray, groundhog: np.ndarray) -> tuple[float, float]:
    """Thresholds t with P(B's share > t) <= 1 - B_FAILS and P(C's share > t) >= C_PASSES:
    [B's 95th percentile, C's 20th]; empty (low > high) when the sizes cannot separate them."""
    return float(np.quantile(replay, B_FAILS)), float(np.quantile(groundhog, 1 - C_PASSES))


def old_gate_pass_rate(inputs: Mapping[str, Any], cell: str, *, pairs: int, runs: int) -> float:
    """How often (B) at its version-8 share passes version 8's gate (lower bound > 0.8) on
    fresh worlds: the audit's point 4, checked here by a normal approximation of the bound
    (log share, s.e. from the sample variances' kurtosis-free formula)."""
    share = effect_sizes(inputs)[cell]["v8_share_replay"]
    estimates = simulate_shares(
        inputs,
        worlds=WORLDS,
        pairs=pairs,
        shares={c: {"replay": share, "groundhog": 1.0} for c in CELLS},
        runs=runs,
    )[cell]["replay"]
    stderr = math.sqrt(2.0 / (WORLDS - 1) + 2.0 / (pairs - 1))
    low = estimates * math.exp(-1.959964 * stderr)
    return float(np.mean(low > OLD_GATE))


def plan(inputs: Mapping[str, Any], *, runs: int = RUNS) -> dict[str, Any]:
    """The smallest coupled-pair count (of PAIRS) at which one threshold serves both cells, each
    cell's feasible band at least MIN_BAND wide; the threshold is the intersection's middle."""
    effects = effect_sizes(inputs)
    shares = {
        cell: {"groundhog": 1.0, "replay": effect["replay_over_groundhog"]}
        for cell, effect in effects.items()
    }
    tried = []
    chosen = None
    for pairs in PAIRS:
        estimates = simulate_shares(inputs, worlds=WORLDS, pairs=pairs, shares=shares, runs=runs)
        bands = {cell: band(arms["replay"], arms["groundhog"]) for cell, arms in estimates.items()}
        low = max(lower for lower, _ in bands.values())
        high = min(upper for _, upper in bands.values())
        row: dict[str, Any] = {
            "pairs": pairs,
            "bands": {cell: [round(a, 4), round(b, 4)] for cell, (a, b) in bands.items()},
            "feasible": low < high,
        }
        row["narrowest_band"] = round(min(upper - lower for lower, upper in bands.values()), 4)
        if low < high and row["narrowest_band"] >= MIN_BAND and chosen is None:
            threshold = round(math.sqrt(low * high), 3)
            row["threshold"] = threshold
            row["power"] = {
                cell: {
                    "replay_fails": round(float(np.mean(arms["replay"] <= threshold)), 4),
                    "groundhog_passes": round(float(np.mean(arms["groundhog"] > threshold)), 4),
                }
                for cell, arms in estimates.items()
            }
            chosen = row
        tried.append(row)
    return {
        "inputs": inputs.get("source"),
        "effects": {
            cell: {name: round(value, 4) for name, value in effect.items()}
            for cell, effect in effects.items()
        },
        "assumed_shares": {
            cell: {arm: round(value, 4) for arm, value in arms.items()}
            for cell, arms in shares.items()
        },
        "worlds": WORLDS,
        "runs": runs,
        "seed": SEED,
        "tried": tried,
        "chosen": chosen,
        "version8_gate_replay_passes": {
            cell: round(old_gate_pass_rate(inputs, cell, pairs=1220, runs=runs), 3)
            for cell in CELLS
        },
    }


def sensitivity(
    inputs: Mapping[str, Any], *, pairs: int, threshold: float, runs: int = RUNS
) -> list[dict[str, float]]:
    """The chosen gate's powers if (C)'s true share is not 1.0 (B's moving with it)."""
    effects = effect_sizes(inputs)
    rows = []
    for level in (0.95, 1.0, 1.05, 1.1):
        shares = {
            cell: {"groundhog": level, "replay": level * effect["replay_over_groundhog"]}
            for cell, effect in effects.items()
        }
        estimates = simulate_shares(inputs, worlds=WORLDS, pairs=pairs, shares=shares, runs=runs)
        row: dict[str, float] = {"groundhog_share": level}
        for cell, arms in estimates.items():
            row[f"{cell} replay_fails"] = round(float(np.mean(arms["replay"] <= threshold)), 4)
            row[f"{cell} groundhog_passes"] = round(
                float(np.mean(arms["groundhog"] > threshold)), 4
            )
        rows.append(row)
    return rows


def committed() -> dict[str, Any]:
    """The committed plan (docs/benchmark/ceiling-power.json): what protocol version 9 declares."""
    plan_: dict[str, Any] = json.loads(OUTPUT.read_text())
    return plan_


def apply(plans: dict[str, dict[str, Any]], chosen: Mapping[str, Any]) -> None:
    """bench.power's plans with the ceiling gate's design (version 9): the cooperative research
    cell's reference pairs, and U6's and C6's power as (C)'s chance of passing."""
    for cell in CELLS:
        if cell in plans and "estimand_share" in plans[cell]["power"]:
            plans[cell]["power"]["estimand_share"] = round(
                chosen["power"][cell]["groundhog_passes"], 3
            )
    if CELLS[1] in plans:
        plans[CELLS[1]]["reference_pairs"] = max(
            plans[CELLS[1]]["reference_pairs"], int(chosen["pairs"])
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ceiling_power", description=__doc__)
    parser.add_argument("--inputs", type=Path, default=INPUTS)
    parser.add_argument("--extract", type=Path, help="write --inputs from this benchmark.json")
    parser.add_argument("--out", type=Path, help=f"write the plan here (committed: {OUTPUT})")
    parser.add_argument("--runs", type=int, default=RUNS)
    args = parser.parse_args(argv)
    if args.extract:
        inputs = extract_inputs(json.loads(args.extract.read_text()))
        args.inputs.write_text(json.dumps(inputs) + "\n")
    inputs = json.loads(args.inputs.read_text())
    result = plan(inputs, runs=args.runs)
    if result["chosen"]:
        chosen = result["chosen"]
        result["sensitivity"] = sensitivity(
            inputs, pairs=chosen["pairs"], threshold=chosen["threshold"], runs=args.runs
        )
    text = json.dumps(result, indent=1) + "\n"
    if args.out:
        args.out.write_text(text)
    sys.stdout.write(text)
    return 0 if result["chosen"] else 1


if __name__ == "__main__":
    sys.exit(main())
