"""A small GRPO loop over the four strategies, driven by rewards collected through the proxy.

Variance and bias are properties of an estimator; a learner is what users care about. This
module trains a softmax policy over the strategies with group-relative advantages, so the
benchmark can show what each condition's rewards do to learning (converging, slowly, or to
the wrong action). It runs on cached per-world, per-action rewards so five seeds of hundreds
of steps take seconds instead of hours of live calls; without it the table would stop at
estimator statistics.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from bench.stats import sustained_attainment


@dataclass(frozen=True)
class GrpoConfig:
    """How the policy learns: steps, group size, step size and what counts as attained."""

    steps: int = 600
    group_size: int = 4
    learning_rate: float = 0.5
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    threshold: float = 0.9


@dataclass
class GrpoRun:
    """One seed's learning curve: the policy's probabilities after each step."""

    seed: int
    probabilities: NDArray[np.float64]
    group_size: int
    final_action: int = field(init=False)

    def __post_init__(self) -> None:
        self.final_action = int(np.argmax(self.probabilities[-1]))

    def rollouts_to(self, action: int, threshold: float) -> int | None:
        """Rollouts until the policy's mass on ``action`` reaches and keeps ``threshold``."""
        step = sustained_attainment(self.probabilities[:, action], threshold)
        return None if step is None else step * self.group_size


def softmax(logits: NDArray[np.float64]) -> NDArray[np.float64]:
    shifted = np.exp(logits - logits.max())
    return shifted / shifted.sum()


def train(rewards: ArrayLike, config: GrpoConfig, seed: int) -> GrpoRun:
    """Train one policy from uniform on ``rewards[world, action]``.

    Each step draws a world, samples ``group_size`` actions from the policy, reads their
    cached rewards, and ascends ``mean_i a_i * grad log pi(action_i)`` with the advantage
    ``a_i = r_i - mean(r)`` (no standard-deviation scaling, so the advantage keeps the units
    whose variance the benchmark measures).
    """
    table = np.asarray(rewards, dtype=np.float64)
    if table.ndim != 2 or table.shape[0] < 1:
        raise ValueError(f"rewards must be [worlds, actions], got shape {table.shape}")
    worlds, actions = table.shape
    rng = np.random.default_rng(seed)
    logits = np.zeros(actions)
    history = np.empty((config.steps + 1, actions))
    history[0] = softmax(logits)
    identity = np.eye(actions)
    for step in range(config.steps):
        policy = softmax(logits)
        world = rng.integers(worlds)
        chosen = rng.choice(actions, size=config.group_size, p=policy)
        group_rewards = table[world, chosen]
        advantages = group_rewards - group_rewards.mean()
        score = identity[chosen] - policy
        gradient = (advantages[:, None] * score).mean(axis=0)
        logits = logits + config.learning_rate * gradient
        history[step + 1] = softmax(logits)
    return GrpoRun(seed=seed, probabilities=history, group_size=config.group_size)


def train_seeds(rewards: ArrayLike, config: GrpoConfig) -> list[GrpoRun]:
    """One run per seed in ``config.seeds``."""
    return [train(rewards, config, seed) for seed in config.seeds]


def summarize(runs: list[GrpoRun], best_action: int, config: GrpoConfig) -> dict[str, object]:
    """What the runs converged to and how many rollouts they needed to hold the threshold."""
    reached = [run.rollouts_to(best_action, config.threshold) for run in runs]
    attained = [value for value in reached if value is not None]
    return {
        "final_actions": [run.final_action for run in runs],
        "rollouts_to_threshold": reached,
        "seeds_attained": len(attained),
        "seeds": len(runs),
        "median_rollouts_attained": float(np.median(attained)) if attained else None,
        "threshold": config.threshold,
    }
