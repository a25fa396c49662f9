"""Predict, then measure: Groundhog's reduction across random world designs (issue 58 item 5).

"Our world gives 11x" is one design's number. This draws world designs (bench/world_designs.py:
exogenous noise in shared reads, inside writes, in the agent, in the clock, at random shares
and scales), serves each with its own uncooperative research world through the real resolver
and proxy, predicts var(A)/var(C) from (A)'s live rollouts alone (bench/prediction.py), then
measures (C) on the same worlds, and judges the share of designs whose measurement falls inside
its prediction interval against the gate bench/predict.toml declared before the run.

    python -m bench.predict --designs 36 --worlds-per-design 40 --seed 58005 --out DIR

writes DIR/predict.json: every design, its prediction, its measurement, the coverage with its
interval and the verdict. The control beside it (not a gate): the one constant reduction that
covers the most designs, chosen after seeing them, with each design's own relative interval
width: how far "one number for every world" gets.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import secrets
import tempfile
import time
import tomllib
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench import collect as phases
from bench import harness, intervals, prediction, stats, world_designs
from bench.config import BenchConfig, for_world, quick_config
from bench.groups import GroupResult, cell_context
from bench.world_client import WorldControl
from groundhog.client import Groundhog

logger = logging.getLogger(__name__)

DECLARED = Path(__file__).with_name("predict.toml")


def load_declared(path: Path = DECLARED) -> dict[str, Any]:
    with path.open("rb") as handle:
        return tomllib.load(handle)


def world_terms(
    groups: Sequence[GroupResult], better: str, worse: str
) -> list[tuple[float, float, float]]:
    """Each (A) group's (c, a, v) in world order (bench/prediction.py's derivation)."""
    rows = []
    for group in sorted(groups, key=lambda group: group.world_seed):
        by_strategy = {branch.strategy: branch.outcome for branch in group.branches}
        pair = [(by_strategy[s].sources, by_strategy[s].methods) for s in (better, worse)]
        rows.append(prediction.world_terms(pair[0], pair[1]))
    return rows


def contrasts(groups: Sequence[GroupResult], better: str, worse: str) -> list[float]:
    """Each group's reward contrast, in world order."""
    rows = []
    for group in sorted(groups, key=lambda group: group.world_seed):
        rewards = {branch.strategy: branch.outcome.reward for branch in group.branches}
        rows.append(rewards[better] - rewards[worse])
    return rows


def design_result(
    design: world_designs.Design,
    naive: Sequence[GroupResult],
    groundhog: Sequence[GroupResult],
    *,
    better: str,
    worse: str,
    level: float,
) -> dict[str, Any]:
    """One design's prediction (from (A) alone), its measurement, and whether it is covered."""
    terms = world_terms(naive, better, worse)
    c_a, agent, fresh = (list(column) for column in zip(*terms, strict=True))
    predicted = prediction.predict(c_a, agent, fresh, level=level)
    c_c = contrasts(groundhog, better, worse)
    measured = stats.reduction_ratio(stats.sample_variance(c_a), stats.sample_variance(c_c))
    return {
        "design": design.to_json(),
        "prediction": predicted,
        "measured": measured,
        "measured_interval": intervals.variance_ratio(c_a, c_c, paired=True, level=level),
        "covered": prediction.covered(predicted, measured),
        "contrasts": {"naive": c_a, "groundhog": c_c},
        "terms": {"agent": agent, "fresh": fresh},
    }


def verdict(results: Sequence[dict[str, Any]], gate: dict[str, Any]) -> dict[str, Any]:
    """The coverage, its interval, the declared gate applied to its lower bound, the control."""
    hits = sum(bool(result["covered"]) for result in results)
    coverage = intervals.rate(hits, len(results), level=float(gate["coverage_level"]))
    supported = coverage["low"] is not None and coverage["low"] > float(gate["min_coverage"])
    return {
        "coverage": coverage,
        "gate": f"coverage low > {gate['min_coverage']}",
        "supported": bool(supported),
        "constant_control": constant_control(results),
    }


def constant_control(results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The best single constant prediction, chosen after the fact, with each design's widths."""

    def covers(constant: float, result: dict[str, Any]) -> bool:
        point = result["prediction"]
        scale = constant / point["value"]
        return bool(point["low"] * scale <= result["measured"] <= point["high"] * scale)

    candidates = [result["measured"] for result in results]
    best = max(candidates, key=lambda constant: sum(covers(constant, r) for r in results))
    hits = sum(covers(best, result) for result in results)
    return {"constant": best, "covered": hits, "designs": len(results)}


def measure_design(
    design: world_designs.Design,
    base: BenchConfig,
    services: tuple[str, str],
    logs: Path,
    run_id: str,
) -> tuple[list[GroupResult], list[GroupResult]]:
    """(A) then (C) for one design, in a world process of its own, through the real proxy."""
    resolver_url, proxy_url = services
    arguments = ["worldsim", *design.world_arguments(), "--sandbox-cap", str(harness.SANDBOX_CAP)]
    child = harness.spawn_child(f"worldsim-design-{design.index}", arguments, log_dir=logs)
    config = replace(base, agent_seed=design.agent_seed)
    started = time.monotonic()
    try:
        harness.await_child(child, health="http")
        with (
            Groundhog(resolver_url, proxy_url=proxy_url) as admin,
            WorldControl(child.url) as world,
        ):
            context = cell_context(
                admin,
                world,
                world_url=child.url,
                resolver_url=resolver_url,
                proxy_url=proxy_url,
                run_id=f"{run_id}d{design.index}",
                kind="research",
                cooperative=False,
            )
            context = replace(context, agent_options=design.agent_options())
            _, naive = phases.collect_condition(context, config, "naive", lambda _step: None)
            _, groundhog = phases.collect_condition(context, config, "groundhog", lambda _s: None)
    finally:
        child.stop()
    logger.info("design %d measured in %.1f s", design.index, time.monotonic() - started)
    return naive, groundhog


def run(
    *, designs: int, worlds: int, seed: int, design_workers: int, declared: dict[str, Any]
) -> dict[str, Any]:
    """Draw, serve, predict and measure every design; the whole result as JSON-ready data."""
    drawn = world_designs.draw_many(seed, designs)
    research = for_world(quick_config(), "research")
    # Only the contrast's two strategies run: the others' rollouts would measure nothing here.
    actions = (research.better_action, research.worse_action)
    base = replace(research, worlds=worlds, actions=actions)
    level = float(declared["gate"]["interval_level"])
    run_id = secrets.token_hex(3)
    started = time.monotonic()
    with contextlib.ExitStack() as stack:
        logs = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="gh-predict-")))
        services = stack.enter_context(harness.started_services(cells=(), data_dir=logs / "s"))
        urls = (services.resolver_url, services.proxy_url)

        def one(design: world_designs.Design) -> dict[str, Any]:
            naive, groundhog = measure_design(design, base, urls, logs, run_id)
            result = design_result(
                design,
                naive,
                groundhog,
                better=base.better_action,
                worse=base.worse_action,
                level=level,
            )
            logger.info(
                "design %d: predicted %.2f [%.2f, %.2f], measured %.2f",
                design.index,
                result["prediction"]["value"],
                result["prediction"]["low"],
                result["prediction"]["high"],
                result["measured"],
            )
            return result

        with ThreadPoolExecutor(max_workers=max(1, design_workers)) as pool:
            results = list(pool.map(one, drawn))
    return {
        "declared": declared,
        "sizes": {"designs": designs, "worlds_per_design": worlds, "seed": seed},
        "wall_seconds": round(time.monotonic() - started, 1),
        "designs": results,
        "verdict": verdict(results, declared["gate"]),
    }


def summary(output: dict[str, Any]) -> str:
    """The run in a few lines: one per design, then the coverage and the verdict."""
    lines = ["design  shares(read/write/agent/clock)  predicted [interval]   measured  in"]
    for result in output["designs"]:
        shares = "/".join(f"{share:.2f}" for share in result["design"]["shares"].values())
        p = result["prediction"]
        lines.append(
            f"{result['design']['index']:>6}  {shares:<30}  {p['value']:6.2f} "
            f"[{p['low']:5.2f}, {p['high']:6.2f}]  {result['measured']:7.2f}  "
            f"{'yes' if result['covered'] else 'NO'}"
        )
    judged = output["verdict"]
    coverage = judged["coverage"]
    control = judged["constant_control"]
    lines.append(
        f"coverage {coverage['k']}/{coverage['n']} = {coverage['value']:.3f} "
        f"[{coverage['low']:.3f}, {coverage['high']:.3f}] ({coverage['level']:.0%} CP); "
        f"gate {judged['gate']}: {'supported' if judged['supported'] else 'NOT supported'}"
    )
    lines.append(
        f"control (best constant after the fact, {control['constant']:.2f}x): "
        f"{control['covered']}/{control['designs']} covered"
    )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    declared = load_declared()
    sizes = declared["run"]
    parser = argparse.ArgumentParser(prog="python -m bench.predict", description=__doc__)
    parser.add_argument("--designs", type=int, default=int(sizes["designs"]))
    parser.add_argument("--worlds-per-design", type=int, default=int(sizes["worlds_per_design"]))
    parser.add_argument("--seed", type=int, default=int(sizes["seed"]))
    parser.add_argument("--design-workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("bench/results/predict"))
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    output = run(
        designs=args.designs,
        worlds=args.worlds_per_design,
        seed=args.seed,
        design_workers=args.design_workers,
        declared=declared,
    )
    output["declared_sizes"] = bool(
        (args.designs, args.worlds_per_design, args.seed)
        == (sizes["designs"], sizes["worlds_per_design"], sizes["seed"])
    )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "predict.json").write_text(json.dumps(output, indent=1, sort_keys=True) + "\n")
    print(summary(output))
    if not output["declared_sizes"]:
        print("sizes differ from bench/predict.toml's: not the declared run")


if __name__ == "__main__":
    main()
