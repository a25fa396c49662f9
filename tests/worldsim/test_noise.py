"""The keyed hash behind every exogenous value: fixed by its address, independent across it."""

from __future__ import annotations

import statistics

from worldsim import noise


def test_same_address_gives_the_same_value_and_any_part_changes_it() -> None:
    assert noise.uniform(7, "GET /context", 0) == noise.uniform(7, "GET /context", 0)
    variants = {
        noise.uniform(7, "GET /context", 0),
        noise.uniform(8, "GET /context", 0),
        noise.uniform(7, "GET /context", 1),
        noise.uniform(7, "GET /trends", 0),
    }
    assert len(variants) == 4


def test_part_boundaries_are_not_ambiguous() -> None:
    assert noise.uniform(1, "ab", "c") != noise.uniform(1, "a", "bc")


def test_draws_have_the_promised_distributions() -> None:
    uniforms = [noise.uniform(3, "u", index) for index in range(4000)]
    assert all(0.0 < value < 1.0 for value in uniforms)
    assert abs(statistics.fmean(uniforms) - 0.5) < 0.02
    normals = [noise.normal(3, "n", index) for index in range(4000)]
    assert abs(statistics.fmean(normals)) < 0.06
    assert abs(statistics.stdev(normals) - 1.0) < 0.05
    medians = sorted(noise.lognormal(3, 120.0, 0.5, "l", index) for index in range(4001))
    assert 110.0 < medians[2000] < 130.0


def test_salted_seeds_are_distinct_per_salt() -> None:
    assert noise.salted_seed(7, "root/b0") != noise.salted_seed(7, "root/b1")
    assert noise.salted_seed(7, "root/b0") == noise.salted_seed(7, "root/b0")
