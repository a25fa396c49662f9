"""The raw measurements a benchmark run collects, before any statistic is computed.

Collection (HTTP, processes) and analysis (pure arithmetic) meet here. Holding the raw
rewards and counts in plain typed values lets the analysis be run and tested without servers,
and lets benchmark.json carry the raw data next to the statistics computed from it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray


@dataclass(frozen=True)
class Rollout:
    """One agent rollout: which world, branch and action, and what the agent observed."""

    world_seed: int
    branch: str
    action: str
    reward: float
    attention: float | None = None
    saw_own_write: bool | None = None


@dataclass
class ReportTotals:
    """Resolver report counts summed over a condition's tapes."""

    reads: int = 0
    reads_shared: int = 0
    live_calls: int = 0
    lies: int = 0
    decisions: dict[str, int] = field(default_factory=dict)

    def add(self, counts: dict[str, Any]) -> None:
        self.reads += int(counts.get("reads", 0))
        self.reads_shared += int(counts.get("reads_shared", 0))
        self.live_calls += int(counts.get("live_calls", 0))
        self.lies += int(counts.get("lies", 0))
        for name, value in (counts.get("decisions") or {}).items():
            self.decisions[name] = self.decisions.get(name, 0) + int(value)


@dataclass
class OracleCounts:
    """The world oracle's verdicts on every read a condition's rollouts were served.

    Reads are counted, but the rates are stated per *group*: a group's stale reads share one
    cause (one recorded read served to siblings that wrote differently), so at most about one
    per group is independent, and reads as trials would shrink the interval many-fold.
    """

    reads: int = 0
    stale: int = 0
    ungraded: int = 0
    rollouts_reading_after_write: int = 0
    rollouts_blind: int = 0
    groups: int = 0
    groups_stale: int = 0
    groups_reading_after_write: int = 0
    groups_blind: int = 0

    def add(self, grades: Any) -> None:
        self.reads += grades.reads
        self.stale += grades.stale
        self.ungraded += grades.ungraded
        if grades.reads_after_write:
            self.rollouts_reading_after_write += 1
            self.rollouts_blind += int(grades.stale_after_write > 0)

    def add_group(self, branch_grades: Sequence[Any]) -> None:
        """One group's branches: counted per read, per rollout and once per group."""
        for grades in branch_grades:
            self.add(grades)
        self.groups += 1
        self.groups_stale += int(any(grades.stale > 0 for grades in branch_grades))
        if any(grades.reads_after_write for grades in branch_grades):
            self.groups_reading_after_write += 1
            self.groups_blind += int(any(g.stale_after_write > 0 for g in branch_grades))


@dataclass
class ConditionData:
    """Everything collected for one condition: one group per world, one branch per action."""

    name: str
    actions: tuple[str, ...]
    rollouts: list[Rollout] = field(default_factory=list)
    totals: ReportTotals = field(default_factory=ReportTotals)
    world_calls: int = 0
    groups: int = 0
    wall_seconds: float = 0.0
    oracle: OracleCounts = field(default_factory=lambda: OracleCounts())

    def matrix(self, attribute: str) -> NDArray[np.float64]:
        """``attribute`` of each rollout as [world, action], worlds in collection order."""
        worlds = list(dict.fromkeys(rollout.world_seed for rollout in self.rollouts))
        table = np.full((len(worlds), len(self.actions)), np.nan)
        row_of = {seed: index for index, seed in enumerate(worlds)}
        for rollout in self.rollouts:
            value = getattr(rollout, attribute)
            table[row_of[rollout.world_seed], self.actions.index(rollout.action)] = (
                np.nan if value is None else float(value)
            )
        return table


@dataclass
class ReferenceData:
    """Live rollouts straight against the world, with no proxy.

    ``independent`` pairs run the two actions in different worlds (the live world's own
    noise, sharpened by the attention control variate); ``coupled`` runs them in the same
    world, giving the per-world contrast that no coupling can remove.
    """

    better: list[Rollout] = field(default_factory=list)
    worse_independent: list[Rollout] = field(default_factory=list)
    worse_coupled: list[Rollout] = field(default_factory=list)
    per_action: dict[str, list[float]] = field(default_factory=dict)
    attention_coefficient: float | None = None


@dataclass(frozen=True)
class EquivalenceCheck:
    """A condition's rollout compared with a live rollout of the same world, action and seed."""

    world_seed: int
    action: str
    condition_reward: float
    live_reward: float
    identical_observation: bool

    @property
    def difference(self) -> float:
        return abs(self.condition_reward - self.live_reward)
