"""bench.noise_curve's arithmetic, table and figure on synthetic sweeps with known reductions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench import claims, figures, noise_curve, report


def _sweep(rng: np.random.Generator, worlds: int = 400) -> list[dict]:
    """(A) carries two independent per-call draws of sd 1.45 w; (C) shares them."""
    points = []
    for weight in noise_curve.WEIGHTS:
        estimand = rng.normal(0.15, 0.38, size=worlds)
        exogenous = 1.45 * weight * (rng.normal(size=worlds) - rng.normal(size=worlds))
        points.append(noise_curve.point(weight, (estimand + exogenous).tolist(), estimand.tolist()))
    return points


def test_the_prediction_is_one_at_zero_noise_and_grows_with_the_weight() -> None:
    assert noise_curve.predicted_reduction(0.0, 0.15) == 1.0
    # The declared world: 1 + 2 (1.45 * 0.6)^2 / 0.147 = 11.3, the ~10.7x the issue names.
    assert noise_curve.predicted_reduction(0.6, 0.147) == pytest.approx(11.3, abs=0.05)
    assert noise_curve.WEIGHTS[0] == 0.0 and noise_curve.WEIGHTS[-1] == 0.6
    assert 5 <= len(noise_curve.WEIGHTS) <= 7


def test_measured_intervals_cover_the_prediction_when_the_world_is_as_modelled() -> None:
    points = _sweep(np.random.default_rng(5))
    for row in points:
        assert row["measured"]["low"] <= row["predicted"] <= row["measured"]["high"], row
    assert points[0]["measured"]["value"] == pytest.approx(1.0)  # nothing to share at zero
    assert points[-1]["exo_over_gap_squared"] == pytest.approx((1.45 * 0.6 / 0.15) ** 2)


def test_the_curve_is_tabled_and_drawn(tmp_path: Path) -> None:
    points = _sweep(np.random.default_rng(6), worlds=40)
    lines = report._noise_section({"noise_curve": points})
    assert len([line for line in lines if line.startswith("| 0.")]) == len(noise_curve.WEIGHTS)
    path = tmp_path / "noise_curve.png"
    figures.noise_curve({"noise_curve": points}, path)
    assert path.stat().st_size > 0
    assert report._noise_section({}) == []


def test_the_quick_sweep_uses_the_protocols_weights() -> None:
    # --noise-curve on a quick run sweeps WEIGHTS; a full run sweeps the protocol's.
    declared = claims.load()["curves"]["noise_share"]["weights"]
    assert tuple(declared) == noise_curve.WEIGHTS
