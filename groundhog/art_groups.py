"""OpenPipe ART trajectory groups on Groundhog forks: one fork per scenario, a branch per rollout.

ART trains on `TrajectoryGroup`s, the n rollouts of one scenario gathered with
`art.gather_trajectory_groups(art.trajectory_group(rollout(model, scenario) for _ in range(n))
for scenario in scenarios)`, and compares their rewards within the group. Left alone, every
rollout of a group draws its own search results, clock and random numbers, and that noise lands
in the group-relative advantage. `ArtGroups.trajectory_group` is `art.trajectory_group` with
Groundhog in it:

    art_groups = ArtGroups(gh.open(f"run-7-step{step}", world_seed=step))
    async with art_groups.async_client() as tools:           # the rollouts' client for the world
        groups = await art.gather_trajectory_groups(
            art_groups.trajectory_group(scenario, (rollout(model, scenario) for _ in range(4)))
            for scenario in scenarios
        )

Each group is one fork, `root/scenario-<hash>`, keyed by a SHA-256 of the scenario's content
(a pydantic model, dataclass or JSON value: the same scenario loaded again keys the same fork);
each rollout runs on its own branch of it (`RolloutGroups`: `.../s<index>`), so `tools` names
that branch on every request, and time/random/uuid are the branch's shim. A scenario that could
only be keyed by its memory address raises `UnstableGroupKey` before anything is forked: every
rollout would otherwise be a group of one, sharing nothing, silently. Every trajectory's
`metadata["groundhog_branch"]` and the group's `metadata["groundhog_group"]` name the branches.

ART is imported on first use, not here: the worker install does not need it (nor its 16 s
import).
"""

from __future__ import annotations

import inspect
import logging
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from typing import TYPE_CHECKING, Any

import httpx

from groundhog.rollout_groups import RolloutGroups, rollout_path
from groundhog.tape import Tape
from groundhog.verifiers_v1 import content_hash

if TYPE_CHECKING:
    import art

logger = logging.getLogger(__name__)

BRANCH_METADATA = "groundhog_branch"
GROUP_METADATA = "groundhog_group"


def scenario_key(scenario: Any) -> str:
    """The group of a scenario: `scenario-<sha256 of its content>`, stable across processes."""
    return "scenario-" + content_hash(scenario)[:16]


class ArtGroups:
    """Builds ART trajectory groups whose rollouts each run on their own Groundhog branch."""

    def __init__(
        self,
        tape: Tape,
        *,
        parent: str = "root",
        use_shim: bool = True,
        group_key: Callable[[Any], str] = scenario_key,
    ) -> None:
        self.groups = RolloutGroups(tape, parent=parent, use_shim=use_shim)
        self.group_key = group_key
        self._next_sample: dict[str, int] = {}
        self._lock = threading.Lock()

    def async_client(self, **kwargs: Any) -> httpx.AsyncClient:
        """The rollouts' client for the world: through the proxy, naming each request's branch
        (a request sent outside any rollout is refused, not recorded on the default branch)."""
        return self.groups.async_client(**kwargs)

    def _samples(self, key: str, count: int) -> range:
        # A second group of the same scenario on this tape continues the sample numbers: it
        # shares the scenario's fork (the same world) but no rollout shares another's branch.
        with self._lock:
            first = self._next_sample.get(key, 0)
            self._next_sample[key] = first + count
        return range(first, first + count)

    def trajectory_group(
        self,
        scenario: Any,
        rollouts: Iterable[Awaitable[art.Trajectory]],
        **kwargs: Any,
    ) -> Coroutine[Any, Any, art.TrajectoryGroup]:
        """`art.trajectory_group(rollouts, **kwargs)` with each rollout on a branch of the
        scenario's fork; hand it to `art.gather_trajectory_groups` as ART's own.

        `rollouts` are the group's un-awaited rollout coroutines (`rollout(model, scenario)
        for _ in range(n)`): each starts inside its branch, so everything it sends through
        `async_client()` names that branch. Raises `UnstableGroupKey` (and closes the
        coroutines) if the scenario cannot be keyed by its content.
        """
        pending = list(rollouts)
        try:
            key = self.group_key(scenario)
            for item in pending:
                if not inspect.isawaitable(item):
                    raise TypeError(
                        f"a rollout of the group is {type(item).__name__}, not an awaitable: "
                        "pass the rollouts un-awaited (`rollout(model, scenario) for _ in "
                        "range(n)`), so each can start on its own branch"
                    )
        except BaseException:
            for item in pending:
                if inspect.iscoroutine(item):
                    item.close()  # never started: no "was never awaited" warning on top
            raise
        samples = self._samples(key, len(pending))
        group_path = rollout_path(key, 0, parent=self.groups.parent).rsplit("/", 1)[0]
        logger.info("ART group of %s is %s (samples %s)", key, group_path, list(samples))
        metadata = {**(kwargs.pop("metadata", None) or {}), GROUP_METADATA: group_path}
        wrapped = [
            self._on_branch(key, sample, item)
            for sample, item in zip(samples, pending, strict=True)
        ]

        async def build() -> art.TrajectoryGroup:
            import art

            return await art.trajectory_group(wrapped, metadata=metadata, **kwargs)

        return build()

    async def _on_branch(
        self, key: str, sample: int, rollout: Awaitable[art.Trajectory]
    ) -> art.Trajectory:
        async with self.groups.rollout(key, sample) as branch:
            trajectory = await rollout
        metadata = getattr(trajectory, "metadata", None)
        if isinstance(metadata, dict):
            metadata[BRANCH_METADATA] = branch.path
        return trajectory
