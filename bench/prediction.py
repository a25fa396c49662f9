"""Predict Groundhog's variance reduction from (A)'s live rollouts alone, before (C) runs.

The headline's reduction (11x) was read off one world and then "predicted" by a formula that
divides by the measured var(C), the very quantity it is compared with (bench/noise_curve.py).
A prediction must not see (C). This one uses only what (A), the live world, measured, and what
the tape's dependency model says siblings share; bench/predict.py then runs (C) and checks.

Derivation. Split a rollout's reward into the terms of the calls they came from
(`worldsim.agent.Rollout.sources`): r = S + a + u, where
  S: the terms of the reads the branch makes before its first write. Under (C) every sibling's
     such read is keyed on the untouched root state, so the tape serves all siblings one
     recorded answer per address and occurrence (the dependency model refetches only what a
     branch's own write can change, and nothing is written yet);
  a: the agent's own terms (its base quality and writing noise), a function of its seed only.
     (A) and (C) run the same agent seeds on the same world seeds, so a is the same in both;
  u: the rest: a write's answer, reads after a write, and those calls' latencies, drawn fresh
     by the world for every call in (A) and (C) alike.
The contrast verify - deep is c = (S_b - S_w) + (a_b - a_w) + (u_b - u_w). Verify and deep make
the same reads before their first write (trends, context, search, three documents; checked
below), so under (C) both compute S from one set of answers: S_b = S_w, and
    c_C = (a_b - a_w) + (u'_b - u'_w),  with u' fresh draws distributed as u.
The (A) residual r_A = c_A - (S_b - S_w) = a + v (a := a_b - a_w, v := u_b - u_w) has the same
distribution. With M = var(c_A) / var(c_C) the measured reduction on those worlds, the only
unknown in M, given (A), is var(c_C) = var(a_i + v'_i) over the same worlds i (a_i known
exactly, v'_i fresh and independent of a_i, whose expected sample variance is
var(a) + sigma_v^2). Hence the point prediction
    P = var(c_A) / (var(a) + var(v))
(the sample covariance of a and v in (A) is chance: they are independent, and (C) redraws v).
The interval: given (A), M / P = (var(a) + var(v)) / var(c_C), and only v's sample variance
(the estimate's and the fresh draws') and the covariance of a with the fresh v vary. By the
delta method, with w = var(v) / (var(a) + var(v)) and kappa v's excess kurtosis (the unbiased
sample estimate, floored at 0),
    Var[log(M / P)] = w^2 2 (2 / (n - 1) + kappa / n) + 4 var(a) var(v) / (n (var(a) + var(v))^2),
(the first term: two independent sample variances of n draws, Var[log s^2] = 2/(n-1) + kappa/n;
the second: the sample covariance 2 cov(a, v') that var(c_C) carries). The interval is
P exp(+-t sd) with t the Student quantile on n - 1 degrees of freedom, for small n. (A two-stage
percentile bootstrap of v, tried first, covered 0.80 of 200 in-process designs at 12 worlds
and 0.86 at 40 against a nominal 0.90; this covered 0.875 and 0.89: bench/design_check.py,
before any run through the proxy.)

What this does not cover, by construction: a term the split puts in S that (C) does not in fact
share (a read the tape refetches), or one in u that it does share; a design whose shared reads
differ between the two strategies (refused, not predicted). A misread share moves P, not the
interval's width: tests/bench/test_prediction.py shows the coverage failing when it happens.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats as scipy_stats

from bench import stats


@dataclass(frozen=True)
class Split:
    """One rollout's reward in the three parts of the derivation."""

    shared: float
    agent: float
    rest: float


def shared_steps(methods: Sequence[str]) -> range:
    """The steps a tape shares among siblings: every read before the branch's first write."""
    first_write = next((i for i, method in enumerate(methods) if method != "GET"), len(methods))
    return range(first_write)


def split(sources: Sequence[tuple[int | None, float]], methods: Sequence[str]) -> Split:
    """A rollout's reward terms (step index or None for the agent's own) as S, a and u."""
    shared = shared_steps(methods)
    parts = {"shared": [], "agent": [], "rest": []}  # type: dict[str, list[float]]
    for step, value in sources:
        part = "agent" if step is None else "shared" if step in shared else "rest"
        parts[part].append(value)
    return Split(*(math.fsum(parts[name]) for name in ("shared", "agent", "rest")))


def world_terms(
    better: tuple[Sequence[tuple[int | None, float]], Sequence[str]],
    worse: tuple[Sequence[tuple[int | None, float]], Sequence[str]],
) -> tuple[float, float, float]:
    """One world's (A) pair as (c, a, v): the contrast, its agent part and its fresh part."""
    if len(shared_steps(better[1])) != len(shared_steps(worse[1])):
        raise ValueError("the two strategies read differently before their first write")
    b, w = split(*better), split(*worse)
    contrast = (b.shared + b.agent + b.rest) - (w.shared + w.agent + w.rest)
    return contrast, b.agent - w.agent, b.rest - w.rest


def predict(
    contrasts: Sequence[float],
    agent: Sequence[float],
    fresh: Sequence[float],
    *,
    level: float = 0.90,
) -> dict[str, Any]:
    """P = var(c_A) / (var(a) + var(v)) and the predictive interval of the measured reduction."""
    c = np.asarray(contrasts, dtype=float)
    a = np.asarray(agent, dtype=float)
    v = np.asarray(fresh, dtype=float)
    n = c.size
    if n < 3 or a.size != n or v.size != n:
        raise ValueError(f"need three or more worlds with every part (got {n}, {a.size}, {v.size})")
    var_c = stats.sample_variance(c)
    var_a, var_v = stats.sample_variance(a), stats.sample_variance(v)
    residual = var_a + var_v
    kurtosis = max(0.0, float(scipy_stats.kurtosis(v, fisher=True, bias=False)))
    share = var_v / residual
    log_variance = share**2 * 2.0 * (2.0 / (n - 1) + kurtosis / n)
    log_variance += 4.0 * var_a * var_v / (n * residual**2)
    spread = float(scipy_stats.t.ppf(0.5 + level / 2.0, n - 1)) * math.sqrt(log_variance)
    point = var_c / residual
    return {
        "value": point,
        "low": point * math.exp(-spread),
        "high": point * math.exp(spread),
        "level": level,
        "worlds": n,
        "naive_variance": var_c,
        "residual_variance": residual,
        "agent_variance": var_a,
        "fresh_variance": var_v,
        "fresh_kurtosis": kurtosis,
    }


def covered(prediction: dict[str, Any], measured: float) -> bool:
    """Whether a measured reduction falls inside its prediction interval."""
    return bool(prediction["low"] <= measured <= prediction["high"])
