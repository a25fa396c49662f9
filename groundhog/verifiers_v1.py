"""What `with_groundhog` needs to know about the verifiers v1 stack (`verifiers.v1`, ≥ 0.4).

In verifiers 0.4 one rollout is `Env.run_episode(task, ctx)`, and a group is `Env.slots(task, n)`
run slot by slot: the same `Task` object n times. Without this module the group key falls back
to `repr(task)` — a memory address — so every rollout became its own group and nothing was
shared, silently. Here a task is keyed by its content (`Task.hash`, verifiers' own SHA-256 of
the task's wire data; any pydantic model or dataclass by its fields), an argument that can only
be keyed by a memory address fails loudly, the episode is stamped with its group
(`Episode.group`, a `GroupInfo`), and the task handed to the episode carries the branch's proxy
environment in `Task.runtime_env()`, which verifiers gives the rollout's runtime: the harness
program and the per-rollout MCP toolsets launched in that box reach the world on the branch.

Nothing here imports verifiers at module level; the worker install does not need it.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from groundhog.errors import LocalProblem

# CPython's default object repr (`<pkg.Thing object at 0x7f…>`) and reprs that embed one.
_ADDRESS = re.compile(r"\bat 0x[0-9a-fA-F]{4,}")


class UnstableGroupKey(LocalProblem, TypeError):
    """A rollout argument that can only be keyed by its memory address (different per call)."""

    title = "Unstable group key"


def task_content(value: Any) -> Any:
    """A JSON-able stand-in for an argument of a rollout, by content (a `json.dumps` default)."""
    task_hash = getattr(value, "hash", None)
    if isinstance(task_hash, str) and hasattr(getattr(value, "data", None), "model_dump"):
        return {"task": type(value).__name__, "hash": task_hash}  # a verifiers v1 Task
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", exclude_none=True)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, set | frozenset):
        return sorted(map(repr, value))
    text = repr(value)
    if _ADDRESS.search(text):
        raise UnstableGroupKey(
            f"the group key of this rollout would hash {text}, which names a memory address: "
            f"every rollout would be its own group and nothing would be shared. Give "
            f"{type(value).__name__} a content-based repr, make it a dataclass or pydantic "
            "model, or pass with_groundhog(..., group_key=lambda method, args, kwargs: ...)"
        )
    return text


def content_hash(value: Any) -> str:
    """SHA-256 (hex) of `value` by content: the same for equal content loaded again, in any
    process; raises `UnstableGroupKey` for anything only a memory address could name."""
    text = json.dumps(value, sort_keys=True, default=task_content)
    return hashlib.sha256(text.encode()).hexdigest()


def stamp_group(result: Any, group: str) -> None:
    """Set a verifiers `Episode.group` the trainer left empty to the Groundhog group."""
    if getattr(result, "group", False) is not None or not hasattr(type(result), "model_fields"):
        return
    try:
        from verifiers.v1 import GroupInfo
    except ImportError:  # an episode-like object without verifiers installed: leave it
        return
    result.group = GroupInfo(id=group)


def model_urls(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> list[str]:
    """The policy's endpoints a rollout was called with: a `ModelContext`'s `client.base_url`."""
    urls = []
    for value in (*args, *kwargs.values()):
        base_url = getattr(getattr(value, "client", None), "base_url", None)
        if isinstance(base_url, str) and base_url:
            urls.append(base_url)
    return urls


def interception_urls(env: Any) -> list[str]:
    """Where the env's interception server(s) serve the model to the harness program.

    verifiers' harness reaches the policy at the interception endpoint on a random port, not at
    the `ModelContext` URL; its servers are read when the runtime starts, once `Env.serving()`
    has brought them up (a server the elastic pool adds later is not known here).
    """
    interception = getattr(env, "_interception", None)
    servers = [interception, *(getattr(interception, "servers", None) or [])]
    urls = [getattr(server, "base_url", None) for server in servers]
    return [url for url in urls if isinstance(url, str) and url]


def with_runtime_env(
    args: tuple[Any, ...],
    extra: Callable[[], Mapping[str, str]],
    bypass: Callable[[], list[str]] = list,
) -> tuple[Any, ...]:
    """`args` with a verifiers Task (the first argument) whose `runtime_env()` adds `extra()`
    (called only when there is such a task: it may download the proxy's CA) and puts `bypass()`
    (NO_PROXY entries, read when verifiers starts the runtime) in NO_PROXY.

    A shallow copy, as `Task.with_data` makes: the slot's own task object is shared by every
    rollout of the group and must not carry one branch's credentials.
    """
    if not args or not callable(getattr(args[0], "runtime_env", None)):
        return args
    task = args[0]
    own: Callable[[], Mapping[str, str]] = task.runtime_env
    added = dict(extra())
    clone = copy.copy(task)

    def runtime_env() -> dict[str, str]:
        merged = {**own(), **added}
        entries = [*merged.get("NO_PROXY", "").split(","), *bypass()]
        no_proxy = ",".join(dict.fromkeys(entry.strip() for entry in entries if entry.strip()))
        return {**merged, "NO_PROXY": no_proxy, "no_proxy": no_proxy}

    clone.runtime_env = runtime_env
    return (clone, *args[1:])
