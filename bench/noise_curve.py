"""The variance reduction as a curve over the research world's per-call exogenous noise.

One reduction measured at one calibrated noise level says how much Groundhog helps in that
world, not elsewhere: the declared constants predict ~10.7x and the run measured 9-12x. This
sweep restarts the uncooperative research world at several per-call attention weights (from
none to the declared 0.6), measures (A) and (C) at each, and puts the measured reduction with
its interval beside the arithmetic prediction, so the table shows where sharing helps and
where there is nothing to share.

Prediction: siblings of a group share the day's attention and draw the per-call part
independently in (A), so (A)'s contrast carries 2 sigma_exo^2 more variance than (C)'s, where
sigma_exo = ATTENTION_SD * weight (the attention enters the reward with coefficient one);
reduction = 1 + 2 sigma_exo^2 / var(C). (sigma_exo / gap)^2 is the exogenous share's size
against the verify-deep gap the learner must resolve.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench import collect as phases
from bench import harness, intervals, stats
from bench.config import BenchConfig, for_world
from bench.groups import cell_context
from bench.measurements import ConditionData
from bench.world_client import WorldControl
from groundhog.client import Groundhog

# Six points from no per-call noise to the declared world's 0.6 (worldsim/render.py).
WEIGHTS: tuple[float, ...] = (0.0, 0.12, 0.24, 0.36, 0.48, 0.6)
ATTENTION_SD = 1.45  # worldsim.render.ATTENTION_SD, declared in bench/protocol.toml
DECLARED_GAP = 0.15  # the research world's declared verify - deep gap (protocol.toml)


def predicted_reduction(weight: float, groundhog_variance: float) -> float:
    """1 + 2 sigma_exo^2 / var(C): what sharing the per-call draw removes from (A)."""
    sigma_exo = ATTENTION_SD * weight
    return 1.0 + 2.0 * sigma_exo**2 / groundhog_variance


def point(weight: float, naive: Sequence[float], groundhog: Sequence[float]) -> dict[str, Any]:
    """One sweep point: measured reduction with its paired bootstrap interval, and predicted."""
    groundhog_variance = stats.sample_variance(groundhog)
    sigma_exo = ATTENTION_SD * weight
    return {
        "call_weight": weight,
        "sigma_exo": sigma_exo,
        "exo_over_gap_squared": (sigma_exo / DECLARED_GAP) ** 2,
        "naive_variance": stats.sample_variance(naive),
        "groundhog_variance": groundhog_variance,
        "measured": intervals.variance_ratio(naive, groundhog, paired=True),
        "predicted": predicted_reduction(weight, groundhog_variance),
        "worlds": len(naive),
    }


def collect(
    config: BenchConfig,
    *,
    resolver_url: str,
    proxy_url: str,
    run_id: str,
    advance: Callable[[int], None],
    weights: Sequence[float] = WEIGHTS,
) -> list[tuple[float, dict[str, ConditionData]]]:
    """At each weight, an uncooperative research world of its own; (A) and (C) through it.

    Returns the raw conditions (per-world, per-branch rewards), which bench/rawfiles.py keeps;
    `points` makes the curve's rows from them.
    """
    research = replace(for_world(config, "research"), worlds=config.noise_curve_worlds)
    raw = []
    with contextlib.ExitStack() as stack:
        logs = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="gh-noise-")))
        admin = stack.enter_context(Groundhog(resolver_url, proxy_url=proxy_url))
        for index, weight in enumerate(weights):
            arguments = ["worldsim", "--world", "research", "--uncooperative"]
            arguments += ["--sandbox-cap", str(harness.SANDBOX_CAP)]
            arguments += ["--attention-call-weight", str(weight)]
            child = harness.spawn_child(f"worldsim-noise-{index}", arguments, log_dir=logs)
            try:
                harness.await_child(child, health="http")
                services = (resolver_url, child.url, proxy_url)
                raw.append((weight, _conditions(research, admin, services, f"{run_id}n{index}")))
            finally:
                child.stop()
            advance(1)
    return raw


def points(
    config: BenchConfig, raw: Sequence[tuple[float, Mapping[str, ConditionData]]]
) -> list[dict[str, Any]]:
    """The curve's rows from `collect`'s raw conditions: (A)'s and (C)'s per-world contrasts."""
    research = for_world(config, "research")
    better = research.actions.index(research.better_action)
    worse = research.actions.index(research.worse_action)
    rows = []
    for weight, conditions in raw:
        naive, groundhog = (
            stats.contrasts(conditions[mode].matrix("reward"), better, worse).tolist()
            for mode in ("naive", "groundhog")
        )
        rows.append(point(weight, naive, groundhog))
    return rows


def _conditions(
    config: BenchConfig, admin: Groundhog, services: tuple[str, str, str], run_id: str
) -> dict[str, ConditionData]:
    """(A) and (C) through the proxy, in one world process."""
    resolver_url, world_url, proxy_url = services
    with WorldControl(world_url) as world:
        context = cell_context(
            admin,
            world,
            world_url=world_url,
            resolver_url=resolver_url,
            proxy_url=proxy_url,
            run_id=run_id,
            kind="research",
            cooperative=False,
        )
        conditions = {}
        for mode in ("naive", "groundhog"):
            data, _ = phases.collect_condition(context, config, mode, lambda _step: None)
            conditions[mode] = data
    return conditions
