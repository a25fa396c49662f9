"""Branches named by a framework's own rollout identifiers, so any process can find its branch.

RL frameworks identify a rollout by (group, sample): SkyRL's `TrajectoryID(instance_id,
repetition_id)`, veRL's `sample_index` within `rollout_n`, TRL's position among
`num_generations`, ART's scenario and index in a `TrajectoryGroup`, a NeMo Gym task and its
repeat. Mapping that pair to a branch path deterministically — `root/<group>/s<sample>` — means
no process has to be told which branch it is: a group spread over several nodes forks nothing
twice and needs no coordinator, because creating a branch that already exists is accepted.

    groups = RolloutGroups(gh.open("run-7", world_seed=7))
    async with groups.rollout("prompt-42", 3) as branch:     # one rollout, one task
        reply = await tools.get(url)                          # tools = groups.async_client()

Inside `rollout()` time/random/uuid are the branch's shim (resumed from the store) and the shared
client names the branch on every request; at exit the branch's counters are stored.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import re
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import requests

from groundhog.branch import Branch
from groundhog.errors import GroundhogError
from groundhog.shim import shim
from groundhog.tape import Tape
from groundhog.verifiers_adapter import (
    GroundhogRollouts,
    RolloutBranch,
    add_branch_headers_async,
    current_rollout_branch,
    use_branch,
)

_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def branch_name(identifier: object) -> str:
    """A branch-path segment for any identifier: itself if it is one, else a readable prefix
    plus a hash (so two distinct identifiers never share a branch)."""
    text = str(identifier)
    if _NAME.match(text) and text not in (".", ".."):
        return text
    readable = re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-.")[:40] or "id"
    return f"{readable}-{hashlib.sha256(text.encode()).hexdigest()[:10]}"


def rollout_path(group: object, sample: int, *, parent: str = "root") -> str:
    """`<parent>/<group>/s<sample>`: the same on every node for the same identifiers."""
    if isinstance(sample, bool) or not isinstance(sample, int) or sample < 0:
        raise ValueError(f"a sample index is an integer >= 0, got {sample!r}")
    return f"{parent}/{branch_name(group)}/s{sample}"


class RolloutGroups:
    """Hands out the branch of (group, sample) on one tape, creating it on first use."""

    def __init__(self, tape: Tape, *, parent: str = "root", use_shim: bool = True) -> None:
        self.tape = tape
        self.parent = parent
        self.use_shim = use_shim
        self._tools = GroundhogRollouts(tape.client, tape, parent=parent, use_shim=use_shim)
        self._made: set[str] = set()  # branches known to exist: no fork call for them again

    def _ensure_child(self, parent: str, name: str) -> None:
        if f"{parent}/{name}" in self._made:
            return
        try:
            # No counters sent: the child takes its parent's stored ones, on whichever node.
            # Named branches of one group on purpose: siblings joining it are not a re-fork.
            self.tape.client.fork(self.tape.name, parent, [name], shim_counters=None, warn=False)
        except GroundhogError as error:
            if error.status != 409:  # 409: another node (or an earlier call) made it already
                raise
        self._made.add(f"{parent}/{name}")

    def branch(self, group: object, sample: int) -> Branch:
        """The branch of rollout `sample` of `group` (created, with its group, if missing)."""
        path = rollout_path(group, sample, parent=self.parent)
        group_path = path.rsplit("/", 1)[0]
        self._ensure_child(self.parent, group_path.rsplit("/", 1)[1])
        self._ensure_child(group_path, f"s{sample}")
        return self.tape.branch(path)

    def env(self, group: object, sample: int) -> dict[str, str]:
        """The environment of a sandbox running this rollout: per-rollout HTTP_PROXY credentials
        (tape:branch), the CA and the seed — what a verifiers sandbox runtime injects."""
        return self.branch(group, sample).env()

    @contextlib.contextmanager
    def rollout_sync(self, group: object, sample: int) -> Iterator[Branch]:
        """One rollout in this thread: its shim and its branch for the shared clients."""
        branch = self.branch(group, sample)
        counters = branch.info().shim_counters or None
        with self._running(branch, counters) as block:
            yield branch
        if block is not None:
            self.tape.client.report_shim_counters(self.tape.name, branch.path, block.counters())

    @contextlib.asynccontextmanager
    async def rollout(self, group: object, sample: int) -> AsyncIterator[Branch]:
        """One rollout in this asyncio task (`asyncio.gather` runs a group of them)."""
        branch = await asyncio.to_thread(self.branch, group, sample)
        counters = await asyncio.to_thread(lambda: branch.info().shim_counters or None)
        with self._running(branch, counters) as block:
            yield branch
        if block is not None:
            await asyncio.to_thread(
                self.tape.client.report_shim_counters, self.tape.name, branch.path, block.counters()
            )

    @contextlib.contextmanager
    def _running(self, branch: Branch, counters: dict[str, Any] | None) -> Iterator[shim | None]:
        marker = RolloutBranch(
            self.tape.name,
            branch.path,
            branch.path.rsplit("/", 1)[0],
            self.tape.world_seed,
            branch.capability,
        )
        with use_branch(marker):
            if not self.use_shim:
                yield None
                return
            with shim(
                world_seed=self.tape.world_seed,
                branch=branch.path,
                tape=self.tape.name,
                counters=counters,
            ) as b:
                yield b

    def async_client(self, **kwargs: Any) -> httpx.AsyncClient:
        """One client for every rollout of the process: each request names the branch of the
        rollout it is sent from, and a request sent outside any rollout is refused."""
        hooks = kwargs.pop("event_hooks", {})
        kwargs["event_hooks"] = {
            **hooks,
            "request": [_require_rollout, *hooks.get("request", []), add_branch_headers_async],
        }
        return self._tools.async_httpx_client(**kwargs)

    def requests_session(self) -> requests.Session:
        """A requests session for every rollout of the process, naming the current rollout's
        branch on each request (for frameworks whose tools hold a `requests.Session`)."""
        return self._tools.requests_session()


async def _require_rollout(request: httpx.Request) -> None:
    if current_rollout_branch() is None:
        raise RuntimeError(
            f"{request.method} {request.url} was sent outside any rollout: it would be recorded "
            "on the proxy's default branch; send it inside `async with groups.rollout(...)`"
        )
