"""The benchmark's sizes and seeds, for a full run and for `--quick`.

Every number in the table depends on how many worlds, pairs and seeds produced it; keeping
them in one frozen value that is written into benchmark.json means a reader can always tell
what a run measured, and a quick run can never be mistaken for a full one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from bench import claims

ACTIONS: tuple[str, ...] = ("guess", "skim", "deep", "verify")
# Each world's actions and the contrast the benchmark measures (better minus worse).
WORLDS: dict[str, dict[str, object]] = {
    "research": {
        "actions": ACTIONS,
        "grpo_actions": (),
        "better_action": "verify",
        "worse_action": "deep",
    },
    # Protocol version 6: four strategies, so a shop group has four branches like the research
    # world's; its GRPO policy stays over the three SG1 was declared on (`learning_actions`).
    "shop": {
        "actions": ("impulse", "compare", "deal", "coupon"),
        "grpo_actions": ("impulse", "compare", "deal"),
        "better_action": "deal",
        "worse_action": "compare",
    },
    # The MCP world (worldsim/mcp_world.py): tools over MCP streamable HTTP, always uncooperative.
    "mcp": {
        "actions": ("first", "compare", "upgrade"),
        "grpo_actions": (),
        "better_action": "upgrade",
        "worse_action": "compare",
    },
}
# The modes a world runs in, where not every mode: the MCP world reads no X-Groundhog-* header
# and cannot announce hints in a tool's answer, so it has no cooperative (ceiling) cell.
WORLD_MODES: dict[str, tuple[str, ...]] = {"mcp": ("uncooperative",)}
CONDITIONS: tuple[str, ...] = ("naive", "replay", "groundhog")


@dataclass(frozen=True)
class BenchConfig:
    """What one benchmark run does."""

    quick: bool
    worlds: int
    reference_pairs: int
    reference_ranking_worlds: int
    equivalence_worlds: int
    reproducibility_runs: int
    group_sizes: tuple[int, ...]
    curve_worlds: int
    dependency_worlds: int
    grpo_steps: int
    grpo_fresh_steps: int = 3
    grpo_learning_rate: float = 1.0
    grpo_threshold: float = 0.9
    grpo_seeds: tuple[int, ...] = (0, 1, 2)
    alpha: float = 0.05
    min_samples: int = 5
    first_world_seed: int = 1000
    reference_first_seed: int = 500_000
    agent_seed: int = 7
    better_action: str = "verify"
    worse_action: str = "deep"
    cooperative_model: str = "hints"
    uncooperative_model: str = "rules"
    modes: tuple[str, ...] = ("uncooperative", "cooperative")
    worlds_run: tuple[str, ...] = ("research", "shop")
    dependency_models: tuple[str, ...] = ("closure", "path", "rules", "hints")
    workers: int = 2
    # Cells (a world in a mode) run at once: each has its own world process and tapes, so only
    # wall time changes (a phase's timing then includes its neighbour's load). A full run takes
    # the protocol's [run] cell_workers.
    cell_workers: int = 1
    reference_workers: int = 3
    actions: tuple[str, ...] = ACTIONS
    # The actions GRPO's policy is over, where not every action (the shop since version 6: with
    # `coupon` 0.09 below `deal` at a reward sd of 0.45, SG1 would need 80 seeds x 200 steps).
    grpo_actions: tuple[str, ...] = ()
    conditions: tuple[str, ...] = CONDITIONS
    rollouts_per_contrast: int = 2
    measure_speed: bool = False
    # The speed rows at their scripts' --quick sizes even in a full run (protocol [run] speed).
    quick_speed: bool = False
    # --noise-curve: the per-call attention weights to sweep (bench/noise_curve.py), and how
    # many worlds each point runs for (A) and (C).
    noise_curve: tuple[float, ...] = ()
    noise_curve_worlds: int = 8
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def group_size(self) -> int:
        return len(self.actions)

    @property
    def learning_actions(self) -> tuple[str, ...]:
        """What a GRPO step samples its group (of ``group_size``) from."""
        return self.grpo_actions or self.actions

    @property
    def rollouts_horizon(self) -> int:
        return self.worlds * self.rollouts_per_contrast

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["rollouts_horizon"] = self.rollouts_horizon
        data["group_size"] = self.group_size
        return data


def cells(config: BenchConfig) -> list[tuple[str, str]]:
    """The (world, mode) cells ``config`` runs, in order: each world in the modes it has."""
    return [
        (world, mode)
        for world in config.worlds_run
        for mode in config.modes
        if mode in WORLD_MODES.get(world, (mode,))
    ]


def for_world(config: BenchConfig, world: str) -> BenchConfig:
    """``config`` with ``world``'s actions and contrast."""
    return replace(config, **WORLDS[world])  # type: ignore[arg-type]


def declared_sizes(config: BenchConfig) -> dict[str, int]:
    """The sizes of ``config`` that bench/protocol.toml fixes per cell."""
    return {
        "worlds": config.worlds,
        "reference_pairs": config.reference_pairs,
        "grpo_seeds": len(config.grpo_seeds),
        "grpo_steps": config.grpo_fresh_steps,
    }


def for_cell(config: BenchConfig, world: str, mode: str, sizes: dict[str, Any]) -> BenchConfig:
    """``world``'s config for one cell: a full run takes the cell's sizes from the protocol.

    ``sizes`` is the protocol's ``[sizes]`` table. A quick run, or one whose sizes were set on
    the command line (``extra["sizes_overridden"]``), keeps its own: it is not published.
    """
    cell = for_world(config, world)
    declared = sizes.get(f"{world}/{mode}")
    if config.quick or config.extra.get("sizes_overridden") or not declared:
        return cell
    changes: dict[str, Any] = {
        "worlds": declared["worlds"],
        "reference_pairs": declared["reference_pairs"],
    }
    if "grpo_seeds" in declared:
        changes["grpo_seeds"] = tuple(range(declared["grpo_seeds"]))
        changes["grpo_fresh_steps"] = declared["grpo_steps"]
    return replace(cell, **changes)


def full_config(protocol: Mapping[str, Any] | None = None) -> BenchConfig:
    """A full run: every world in every mode it has, laid out as the protocol declares.

    Each cell's worlds, reference pairs and GRPO seeds and steps come from bench/protocol.toml's
    ``[sizes]`` (see ``for_cell``; the numbers below serve only a cell the protocol does not
    size); how many cells and groups run at once, the two curves' sizes and the speed rows come
    from its ``[run]`` and ``[curves]`` (version 4), so the run that is committed is the run
    the protocol describes, not whatever the command line defaulted to.
    """
    declared = claims.load() if protocol is None else protocol
    layout = declared.get("run", {})
    group_curve = declared.get("curves", {}).get("group_size", {})
    noise_share = declared.get("curves", {}).get("noise_share", {})
    return BenchConfig(
        quick=False,
        worlds=96,
        reference_pairs=200,
        reference_ranking_worlds=24,
        equivalence_worlds=8,
        reproducibility_runs=3,
        group_sizes=tuple(group_curve.get("sizes", (1, 2, 4))),
        curve_worlds=int(group_curve.get("worlds", 1)),
        dependency_worlds=6,
        grpo_steps=0,
        grpo_fresh_steps=4,
        grpo_seeds=tuple(range(20)),
        worlds_run=tuple(WORLDS),
        workers=int(layout.get("workers", 2)),
        cell_workers=int(layout.get("cell_workers", 1)),
        measure_speed="speed" in layout,
        quick_speed=layout.get("speed") == "quick",
        noise_curve=tuple(float(weight) for weight in noise_share.get("weights", ())),
        noise_curve_worlds=int(noise_share.get("worlds", 8)),
    )


def quick_config() -> BenchConfig:
    """A smoke run: the research world in both modes, the fewest worlds the statistics accept.

    The shop and the MCP world join with `--worlds-run research,shop,mcp`. Its numbers are
    directions, not results.
    """
    return BenchConfig(
        quick=True,
        worlds=8,
        reference_pairs=8,
        reference_ranking_worlds=4,
        equivalence_worlds=2,
        reproducibility_runs=1,
        group_sizes=(),
        curve_worlds=0,
        dependency_worlds=1,
        grpo_steps=0,
        # One fresh group per seed and condition: the row's shape, not a learning curve.
        grpo_fresh_steps=1,
        grpo_seeds=(0, 1),
        worlds_run=("research",),
        cell_workers=2,
    )
