"""Learning, powered (issue 58 item 6): the gradient's SNR and steps to a declared P(best).

The benchmark's only learning claim was the shop's SG1, where there is no variance reduction
and no negative control. Here, in the research world (uncooperative, the headline mode, about
11x less contrast variance under (C)), two measurements through the real proxy stack, with
the gates and sizes declared in bench/learning.toml before the run:

1. SNR: at declared policy states, one GRPO group per world per condition on the same worlds
   with the same sampled actions; each group's policy-gradient estimate; SNR = |E g|^2 / tr
   Cov g with BCa intervals over worlds, the ratios, and each condition's mean gradient
   against (C)'s (the replay's bias shows as less weight on verify).
2. Efficiency: GRPO from uniform on fresh worlds, every condition on the same seeds; steps
   until P(best) reaches and holds the threshold, (C) against (A), and against (B) as the
   negative control; t intervals over the paired seeds (few seeds: see policy_gradient.t_interval).

`python -m bench.learning --simulate` sizes the efficiency claim in process
(bench/learning_sim.py); `python -m bench.learning` runs it through the proxy.
"""

from __future__ import annotations

import argparse
import json
import logging
import operator
import sys
import time
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench import policy_gradient as pg

SETTINGS = Path(__file__).with_name("learning.toml")
CONDITIONS: tuple[str, ...] = ("naive", "replay", "groundhog")
OPERATORS = {"<": operator.lt, ">": operator.gt}
logger = logging.getLogger(__name__)


def load(path: Path = SETTINGS) -> dict[str, Any]:
    with path.open("rb") as handle:
        return tomllib.load(handle)


def gradients(row: Mapping[str, Any], condition: str) -> np.ndarray:
    """Each world's gradient estimate at the row's state under ``condition``."""
    state = np.asarray(row["state"], dtype=float)
    policy = state / state.sum()
    return np.array(
        [
            pg.group_gradient(rewards, chosen, policy)
            for rewards, chosen in zip(row["rewards"][condition], row["actions"], strict=True)
        ]
    )


def snr_state(row: Mapping[str, Any], best: int, level: float) -> dict[str, Any]:
    """One state's SNRs, ratios, mean gradients and the bias on ``best``'s logit."""
    estimates = {condition: gradients(row, condition) for condition in CONDITIONS}
    means = {condition: g.mean(axis=0) for condition, g in estimates.items()}
    result: dict[str, Any] = {"state": row["state"], "worlds": len(row["worlds"])}
    for condition, g in estimates.items():
        parts = pg.snr(g)
        result[condition] = {
            "snr": pg.snr_interval(g, level),
            "signal": parts["signal"],
            "noise_trace": parts["noise"],
            "mean_gradient": means[condition].tolist(),
            "component_sd": g.std(axis=0, ddof=1).tolist(),
            "cosine_to_groundhog_mean": pg.cosine(means[condition], means["groundhog"]),
            "cosine_to_naive_mean": pg.cosine(means[condition], means["naive"]),
        }
    result["snr_ratio_naive_over_groundhog"] = pg.snr_ratio(
        estimates["naive"], estimates["groundhog"], level
    )
    result["snr_ratio_replay_over_groundhog"] = pg.snr_ratio(
        estimates["replay"], estimates["groundhog"], level
    )
    result["noise_ratio_naive_over_groundhog"] = (
        result["naive"]["noise_trace"] / result["groundhog"]["noise_trace"]
    )
    for other in ("replay", "naive"):
        difference = estimates[other][:, best] - estimates["groundhog"][:, best]
        result[f"{other}_minus_groundhog_verify"] = pg.t_interval(difference, level)
    return result


def efficiency(
    runs: Mapping[str, Sequence[Mapping[str, Any]]], best: int, threshold: float, level: float
) -> dict[str, Any]:
    """Per condition: steps to the held threshold, finals; paired (C) - (A) and (C) - (B)."""
    steps = {
        c: [pg.steps_to(run["probabilities"], best, threshold) for run in runs[c]] for c in runs
    }
    result: dict[str, Any] = {"threshold": threshold}
    for condition, values in steps.items():
        finals = [run["probabilities"][-1] for run in runs[condition]]
        horizon = len(runs[condition][0]["probabilities"]) - 1
        result[condition] = {
            "steps_to_threshold": values,
            "reached": sum(value <= horizon for value in values),
            "seeds": len(values),
            "mean_steps": pg.t_interval(values, level),
            "final_best_probability": [final[best] for final in finals],
            "mean_final_best": pg.t_interval([final[best] for final in finals], level),
            "final_argmax": [int(np.argmax(final)) for final in finals],
        }
    for other in ("naive", "replay"):
        difference = np.subtract(steps["groundhog"], steps[other])
        result[f"steps_groundhog_minus_{other}"] = {
            **pg.t_interval(difference, level),
            "differences": difference.tolist(),
        }
    return result


def lookup(result: Mapping[str, Any], path: str) -> Any:
    value: Any = result
    for part in path.split("."):
        value = value[part]
    return value


def verdict(gate: Mapping[str, Any], result: Mapping[str, Any]) -> dict[str, Any]:
    bound = lookup(result, gate["metric"])
    passed = bound is not None and OPERATORS[gate["op"]](bound, gate["value"])
    return {"id": gate["id"], "text": gate["text"], "bound": bound, "supported": bool(passed)}


def analyse(raw: Mapping[str, Any], settings: Mapping[str, Any]) -> dict[str, Any]:
    """Every number and gate verdict from the run's raw groups and curves."""
    best = settings["world"]["strategies"].index(settings["world"]["best"])
    snr_level = float(settings["snr"]["level"])
    states = [snr_state(row, best, snr_level) for row in raw["snr"]]
    gates = []
    for index, state in enumerate(states):
        for gate in settings["snr"]["gates"]:
            if gate["id"] == "LS2" and index > 0:
                continue  # LS2 is declared at the uniform state only
            gates.append({**verdict(gate, state), "state": index})
    declared = settings["efficiency"]
    learned = efficiency(raw["runs"], best, float(declared["threshold"]), float(declared["level"]))
    gates += [verdict(gate, learned) for gate in declared["gates"]]
    return {"snr": states, "efficiency": learned, "gates": gates}


def run(settings: dict[str, Any], run_id: str, checkpoint: Path | None = None) -> dict[str, Any]:
    from bench import learning_proxy

    world = settings["world"]
    started = time.perf_counter()
    with learning_proxy.research_context(run_id) as context:
        snr_raw = learning_proxy.snr_groups(
            context, settings["snr"], world["strategies"], world["group_size"]
        )
        snr_seconds = time.perf_counter() - started
        if checkpoint is not None:  # a later failure keeps the first phase's groups
            checkpoint.write_text(json.dumps({"snr": snr_raw, "settings": settings}) + "\n")
        runs = learning_proxy.train_all(
            context, settings["efficiency"], world["strategies"], world["group_size"]
        )
    total = time.perf_counter() - started
    raw = {"snr": snr_raw, "runs": runs}
    timings = {"snr": snr_seconds, "efficiency": total - snr_seconds, "total": total}
    return {"raw": raw, "timings_seconds": timings, "retried_groups": list(learning_proxy.RETRIES)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("bench/results/learning.json"))
    parser.add_argument("--simulate", action="store_true", help="size the claim in process")
    parser.add_argument("--pool", type=int, default=48, help="--simulate: seeds per condition")
    parser.add_argument("--reanalyse", type=Path, help="every number again from a run's raw")
    parser.add_argument("--snr-worlds", type=int, help="smoke: not the declared size")
    parser.add_argument("--seeds", type=int, help="smoke: not the declared size")
    parser.add_argument("--steps", type=int, help="smoke: not the declared size")
    arguments = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request drowns the rest
    settings = load()
    output: dict[str, Any]
    if arguments.reanalyse:
        output = json.loads(arguments.reanalyse.read_text())
        settings = output["settings"]
        output.update(analyse(output["raw"], settings))
    elif arguments.simulate:
        from bench import learning_sim

        output = learning_sim.declared_plan(settings, arguments.pool)
    else:
        overrides = {
            ("snr", "worlds"): arguments.snr_worlds,
            ("efficiency", "seeds"): arguments.seeds,
            ("efficiency", "steps"): arguments.steps,
        }
        for (section, key), value in overrides.items():
            if value is not None:
                settings[section][key] = value
        checkpoint = arguments.out.with_suffix(".snr.json")
        arguments.out.parent.mkdir(parents=True, exist_ok=True)
        output = run(settings, run_id=str(int(time.time())), checkpoint=checkpoint)
        output.update(analyse(output["raw"], settings))
        output["published"] = all(value is None for value in overrides.values())
    output["settings"] = settings
    arguments.out.parent.mkdir(parents=True, exist_ok=True)
    arguments.out.write_text(json.dumps(output, indent=1, sort_keys=True) + "\n")
    for gate in output.get("gates", []):
        mark = "supported" if gate["supported"] else "NOT supported"
        where = f"@{gate['state']}" if "state" in gate else ""
        print(f"{gate['id']}{where}: {mark} (bound {gate['bound']})")
    print(f"wrote {arguments.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
