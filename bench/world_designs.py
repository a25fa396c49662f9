"""Random research-world designs: where the exogenous noise sits, drawn from a declared seed.

The benchmark's 11x is one world's number: one attention shock read by every sibling at one
address. Whether Groundhog "gives what the world's noise structure predicts" can only be
judged across worlds whose noise sits elsewhere, so this draws them. A design says how much of
the (A) contrast's exogenous variance sits in each of four places, and how large it is:

- `read`: a shared read, `GET /context`'s per-call attention, read by every sibling at one
  address (`--attention-call-weight`);
- `write`: inside a write, each publication's answer carries a fresh `reception` draw
  (`--write-noise-sd`);
- `agent`: the agent's own sampling, its writing noise keyed by its seed (`writing_noise_sd`);
- `clock`: the world's clock, every call's reported latency scaled (shared before a write, not
  after: `--clock-scale`).

The shares are a Dirichlet draw (each kind switched off with probability OFF_PROBABILITY, one
always on), the total a log-uniform draw; each kind's knob is set so that its own contribution
to var(A's contrast) is its share of the total, by the first-order arithmetic below. That
arithmetic only places the designs; nothing downstream trusts it (bench/prediction.py measures).
The world's other noise (search order, the reviewer's strictness, the day) stays as declared.

Design ``i`` of seed ``s`` is drawn from ``numpy.random.default_rng([s, i])``: the same seed
gives the same designs, and the first N designs do not depend on how many are drawn.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from worldsim import render

KINDS = ("read", "write", "agent", "clock")
OFF_PROBABILITY = 0.25
# The total exogenous variance of (A)'s verify - deep contrast a design places, log-uniform.
TOTAL_RANGE = (0.05, 4.0)
# A latency's standard deviation in seconds per unit clock scale (lognormal, median 0.12 s,
# sigma 0.5), its cost per second, and the calls whose latencies enter the contrast (verify
# makes nine, deep seven): the clock's variance per unit scale squared.
_LATENCY_SD = (
    render.LATENCY_MEDIAN_MS
    / 1000
    * math.sqrt(math.exp(render.LATENCY_SIGMA**2) * (math.exp(render.LATENCY_SIGMA**2) - 1))
)
CLOCK_VARIANCE_PER_SCALE2 = 16 * (0.25 * _LATENCY_SD) ** 2
# The world's and the agent's validated ranges (worldsim/config.py).
MAX_CALL_WEIGHT = 2.0
MAX_WRITE_SD = 5.0
MAX_CLOCK_SCALE = 100.0


@dataclass(frozen=True)
class Design:
    """One world design: the drawn shares and total, the knobs, and the seeds it runs with."""

    seed: int
    index: int
    shares: dict[str, float]
    total_variance: float
    attention_call_weight: float
    write_noise_sd: float
    writing_noise_sd: float
    clock_scale: float
    world_seed: int
    agent_seed: int

    def world_arguments(self) -> list[str]:
        """The `python -m worldsim` flags that serve this design (uncooperative research)."""
        return [
            "--world",
            "research",
            "--uncooperative",
            "--seed",
            str(self.world_seed),
            "--attention-call-weight",
            repr(self.attention_call_weight),
            "--write-noise-sd",
            repr(self.write_noise_sd),
            "--clock-scale",
            repr(self.clock_scale),
        ]

    def agent_options(self) -> dict[str, Any]:
        """The research agent's own settings under this design (`run_rollout` keywords)."""
        return {"writing_noise_sd": self.writing_noise_sd}

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _shares(rng: np.random.Generator) -> dict[str, float]:
    on = rng.random(len(KINDS)) >= OFF_PROBABILITY
    if not on.any():
        on[rng.integers(len(KINDS))] = True
    weights = rng.dirichlet(np.ones(len(KINDS))) * on
    weights /= weights.sum()
    return {kind: float(weight) for kind, weight in zip(KINDS, weights, strict=True)}


def draw(seed: int, index: int) -> Design:
    """Design ``index`` of ``seed``."""
    rng = np.random.default_rng([seed, index])
    shares = _shares(rng)
    low, high = TOTAL_RANGE
    total = float(math.exp(rng.uniform(math.log(low), math.log(high))))
    # Each kind's contribution to var(A's contrast): read 2 (ATTENTION_SD w)^2, write and agent
    # 2 sd^2 (one draw per branch), clock CLOCK_VARIANCE_PER_SCALE2 k^2.
    weight = math.sqrt(shares["read"] * total / 2) / render.ATTENTION_SD
    write_sd = math.sqrt(shares["write"] * total / 2)
    agent_sd = math.sqrt(shares["agent"] * total / 2)
    clock = math.sqrt(shares["clock"] * total / CLOCK_VARIANCE_PER_SCALE2)
    return Design(
        seed=seed,
        index=index,
        shares=shares,
        total_variance=total,
        attention_call_weight=round(min(weight, MAX_CALL_WEIGHT), 6),
        write_noise_sd=round(min(write_sd, MAX_WRITE_SD), 6),
        writing_noise_sd=round(agent_sd, 6),
        clock_scale=round(min(clock, MAX_CLOCK_SCALE), 6),
        world_seed=int(rng.integers(1, 2**31)),
        agent_seed=int(rng.integers(1, 2**20)),
    )


def draw_many(seed: int, count: int) -> list[Design]:
    """Designs 0..count-1 of ``seed``."""
    return [draw(seed, index) for index in range(count)]
