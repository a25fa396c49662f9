"""The predictor: it recovers a known reduction, its intervals cover at about their level,
and a misread share (what the tape shares taken for what it does not) makes it fail."""

from __future__ import annotations

import numpy as np
import pytest

from bench import design_check, prediction, stats
from bench import world_designs as designs

# A rollout as the research agent reports it: six reads, then a write (the deep strategy).
METHODS = ("GET",) * 6 + ("POST",)
MISREAD = ("POST",) + ("GET",) * 5 + ("POST",)  # as if the first write came first


def _rollout(rng: np.random.Generator, shared: float, agent: float, rest: float, methods=METHODS):
    """Reward terms: one on a read before the write, the agent's own, one on the write."""
    return [(1, shared), (None, agent), (6, rest)], list(methods)


def _synthetic(worlds: int, sd: tuple[float, float, float], seed: int, methods=METHODS):
    """(A)'s terms and (C)'s contrasts, the shared term drawn once per group under (C)."""
    rng = np.random.default_rng(seed)
    shared_sd, agent_sd, rest_sd = sd
    rows, c_contrasts = [], []
    for _ in range(worlds):
        agents = rng.normal(0.0, agent_sd, 2)  # the same agent seeds in (A) and (C)
        live = [
            _rollout(rng, rng.normal(0.0, shared_sd), a, rng.normal(0.0, rest_sd), methods)
            for a in agents
        ]
        rows.append(prediction.world_terms(live[0], live[1]))
        common = rng.normal(0.0, shared_sd)
        fresh = rng.normal(0.0, rest_sd, 2)
        c_contrasts.append((common + agents[0] + fresh[0]) - (common + agents[1] + fresh[1]))
    return [list(column) for column in zip(*rows, strict=True)], c_contrasts


def _known(sd: tuple[float, float, float]) -> float:
    shared, agent, rest = sd
    return (shared**2 + agent**2 + rest**2) / (agent**2 + rest**2)


@pytest.mark.parametrize("sd", [(2.0, 0.3, 0.5), (0.5, 0.0, 1.0), (1.0, 1.0, 0.2)])
def test_the_prediction_recovers_the_known_reduction(sd) -> None:
    (c_a, agent, fresh), c_c = _synthetic(5000, sd, seed=1)
    predicted = prediction.predict(c_a, agent, fresh)
    assert predicted["value"] == pytest.approx(_known(sd), rel=0.06)
    # The interval is for the reduction measured on these worlds, not for the true one.
    measured = stats.sample_variance(c_a) / stats.sample_variance(c_c)
    assert prediction.covered(predicted, measured)


def test_a_misread_share_predicts_no_reduction_and_is_not_covered() -> None:
    sd = (2.0, 0.3, 0.5)
    (c_a, agent, fresh), c_c = _synthetic(2000, sd, seed=2, methods=MISREAD)
    predicted = prediction.predict(c_a, agent, fresh)
    measured = stats.sample_variance(c_a) / stats.sample_variance(c_c)
    assert predicted["value"] == pytest.approx(1.0, rel=0.05)
    assert not prediction.covered(predicted, measured)


def test_the_intervals_cover_at_about_their_level_at_twelve_worlds() -> None:
    hits = 0
    trials = 400
    for seed in range(trials):
        (c_a, agent, fresh), c_c = _synthetic(12, (1.5, 0.4, 0.6), seed=100 + seed)
        predicted = prediction.predict(c_a, agent, fresh, level=0.90)
        hits += prediction.covered(predicted, np.var(c_a, ddof=1) / np.var(c_c, ddof=1))
    assert 0.85 <= hits / trials <= 0.95


def test_strategies_that_read_differently_before_writing_are_refused() -> None:
    rng = np.random.default_rng(0)
    short = _rollout(rng, 1.0, 0.0, 0.0, methods=("GET", "POST"))
    with pytest.raises(ValueError, match="read differently"):
        prediction.world_terms(_rollout(rng, 1.0, 0.0, 0.0), short)


def test_a_split_sends_each_term_to_its_part() -> None:
    parts = prediction.split([(0, 1.0), (5, 2.0), (6, 4.0), (None, 8.0)], METHODS)
    assert parts == prediction.Split(shared=3.0, agent=8.0, rest=4.0)


def _in_process(design: designs.Design, worlds: int, *, misread: bool) -> tuple[dict, float]:
    server = design_check.world(design)
    rows, c_c = [], []
    for day in range(worlds):
        pair = design_check.group(design, server, day, shared=False, strategies=("verify", "deep"))
        terms = [
            (r.sources(), MISREAD[:1] * misread + tuple(s.method for s in r.steps)) for r in pair
        ]
        rows.append(prediction.world_terms(terms[0], terms[1]))
        shared = design_check.group(design, server, day, shared=True, strategies=("verify", "deep"))
        c_c.append(shared[0].reward - shared[1].reward)
    c_a, agent, fresh = (list(column) for column in zip(*rows, strict=True))
    predicted = prediction.predict(c_a, agent, fresh)
    return predicted, stats.sample_variance(c_a) / stats.sample_variance(c_c)


def test_in_process_designs_are_covered_and_not_when_the_share_is_misread() -> None:
    """The real world and agent in process: (C) emulated by sharing reads before a write."""
    drawn = [d for d in designs.draw_many(4242, 40) if d.shares["read"] > 0.6]
    assert len(drawn) == 3
    right = [prediction.covered(*_in_process(d, 30, misread=False)) for d in drawn]
    wrong = [prediction.covered(*_in_process(d, 30, misread=True)) for d in drawn]
    assert all(right)
    assert not any(wrong)
