"""Give every rollout of a verifiers-style environment its own Groundhog branch.

RL frameworks such as `verifiers` run a group of rollouts per prompt with `asyncio.gather`,
calling the environment's `rollout` (or `a_rollout`) once per sample. For the group's
exogenous noise to cancel, each of those calls must be a sibling branch of one fork, and every
request it makes to the world must name that branch. Without this adapter users would thread
tape and branch through every tool call by hand, and one forgotten header sends a rollout's
reads to the proxy's default branch, where siblings' writes leak into each other.

    env = with_groundhog(env, tape="run-7", resolver_url=..., proxy_url=...)
    tools_http = env.groundhog.async_httpx_client()   # adds X-Groundhog-Tape/-Branch per rollout

Nothing here imports verifiers: the rollout methods are found by name (duck typing), the branch
travels in a `ContextVar` (so concurrent asyncio tasks and threads each see their own), and
clients get it as headers from an httpx event hook or a requests adapter.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import ssl
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import httpx
import requests

# The real-clock transports keep httpx's and urllib3's own clock reads (timeouts, pools) out
# of the branch's virtual clock, exactly as `Branch.client()` does.
from groundhog.client import Groundhog
from groundhog.protocol.headers import naming as naming_headers
from groundhog.real_clock import _RealClockAsyncTransport, _RealClockTransport
from groundhog.real_clock_requests import _RealClockAdapter
from groundhog.shim import shim
from groundhog.tape import Tape
from groundhog.verifiers_v1 import (
    content_hash,
    interception_urls,
    model_urls,
    stamp_group,
    with_runtime_env,
)
from groundhog.worker_env import policy_addresses

logger = logging.getLogger(__name__)

# `run_episode` is verifiers 0.4's (v1) rollout: `Env.run_episode(task, ctx, ...)`.
ROLLOUT_METHODS = ("rollout", "a_rollout", "run_rollout", "run_episode")
# Arguments that say how to sample, not what the rollout is about: never part of a group key.
NON_TASK_ARGUMENTS = frozenset(
    {"client", "model", "sampling_args", "kwargs", "score", "args", "ctx", "on_trace",
     "on_discard"}
)  # fmt: skip
GroupKey = Callable[[Callable[..., Any], tuple[Any, ...], dict[str, Any]], str]


@dataclass(frozen=True)
class RolloutBranch:
    """The branch one rollout runs on, and the group (fork point) it belongs to."""

    tape: str
    path: str
    group: str
    world_seed: int
    # What the rollout presents for its branch (docs/reliability.md); None: the resolver gave none.
    capability: str | None = None


_current: ContextVar[RolloutBranch | None] = ContextVar("groundhog_rollout_branch", default=None)


def current_rollout_branch() -> RolloutBranch | None:
    """The branch of the rollout running in this context, if any."""
    return _current.get()


def branch_headers() -> dict[str, str]:
    """`X-Groundhog-Tape`/`-Branch` (and `-Capability`) for the current rollout; empty outside
    any rollout."""
    branch = _current.get()
    return {} if branch is None else naming_headers(branch.tape, branch.path, branch.capability)


@contextmanager
def use_branch(branch: RolloutBranch) -> Iterator[RolloutBranch]:
    """Run a block as `branch` (what the wrapped rollout methods do around each call)."""
    token = _current.set(branch)
    try:
        yield branch
    finally:
        _current.reset(token)


def add_branch_headers(request: httpx.Request) -> None:
    """An httpx `event_hooks={"request": [...]}` hook for `httpx.Client`."""
    request.headers.update(branch_headers())


async def add_branch_headers_async(request: httpx.Request) -> None:
    """The same hook for `httpx.AsyncClient`, whose hooks must be coroutines."""
    request.headers.update(branch_headers())


class BranchHeaderAdapter(_RealClockAdapter):
    """A requests adapter that names the current rollout's branch on every request it sends."""

    def add_headers(self, request: requests.PreparedRequest, **kwargs: Any) -> None:
        request.headers.update(branch_headers())


def default_group_key(method: Callable[..., Any], args: tuple[Any, ...], kwargs: dict) -> str:
    """Rollouts of the same example form a group: `example_id` if given, else the prompt."""
    try:
        bound: dict[str, Any] = dict(
            inspect.signature(method).bind_partial(*args, **kwargs).arguments
        )
    except (TypeError, ValueError):
        bound = {"args": args, **kwargs}
    candidates = [bound, *(value for value in bound.values() if isinstance(value, Mapping))]
    for mapping in candidates:
        if "example_id" in mapping:
            return f"example_id={mapping['example_id']}"
    for mapping in candidates:
        if "prompt" in mapping:
            task = {"prompt": mapping["prompt"], "answer": mapping.get("answer")}
            break
    else:
        task = {name: value for name, value in bound.items() if name not in NON_TASK_ARGUMENTS}
    # By content, never by repr: an object keyed by its address is a group of one (fails loudly).
    return "task=" + content_hash(task)[:16]


class GroundhogRollouts:
    """Allocates branches to rollouts and hands out clients that name them."""

    def __init__(
        self,
        client: Groundhog,
        tape: Tape,
        *,
        parent: str = "root",
        group_key: GroupKey = default_group_key,
        use_shim: bool = True,
        model_urls: Sequence[str] = (),
        record_urls: Sequence[str] | None = None,
        endpoints: Callable[[], list[str]] = list,
    ) -> None:
        self.client = client
        self.tape = tape
        self.parent = parent
        self.group_key = group_key
        self.use_shim = use_shim
        self.model_urls = list(model_urls)
        self.record_urls = None if record_urls is None else list(record_urls)
        self.endpoints = endpoints
        self.branches: list[RolloutBranch] = []
        self._groups: dict[str, str] = {}
        self._lock = threading.Lock()

    def new_groups(self) -> None:
        """Forget the groups: the next rollout of any example starts a new fork (a new step)."""
        with self._lock:
            self._groups.clear()

    def allocate(self, key: str) -> RolloutBranch:
        """A fresh sibling branch in `key`'s group, forking the group on its first rollout."""
        with self._lock:
            group = self._groups.get(key)
            if group is None:
                # Each task's group is a fresh child of the same parent on purpose: one tape is
                # one world, and tasks that ask what an earlier task asked are served its bytes.
                group = self.tape.fork(self.parent, 1, shim_counters=None, warn=False)[0].path
                self._groups[key] = group
                logger.info("group %s of %s is branch %s", key, self.tape.name, group)
            # A sibling joins its group on purpose: the group's earlier children are the point.
            (child,) = self.tape.fork(group, 1, shim_counters=None, warn=False)
            branch = RolloutBranch(
                self.tape.name, child.path, group, self.tape.world_seed, child.capability
            )
            self.branches.append(branch)
            return branch

    @contextmanager
    def _running(self, branch: RolloutBranch) -> Iterator[None]:
        with use_branch(branch):
            if self.use_shim:
                with shim(world_seed=branch.world_seed, branch=branch.path, tape=branch.tape):
                    yield
            else:
                yield

    def wrap(self, method: Callable[..., Any]) -> Callable[..., Any]:
        """`method` running each call on its own branch (calls nested in a rollout reuse it)."""
        if inspect.iscoroutinefunction(method):

            @functools.wraps(method)
            async def run_async(*args: Any, **kwargs: Any) -> Any:
                if _current.get() is not None:
                    return await method(*args, **kwargs)
                key = self.group_key(method, args, kwargs)
                branch = await asyncio.to_thread(self.allocate, key)
                args = await asyncio.to_thread(self._with_branch_env, branch, args, kwargs)
                with self._running(branch):
                    result = await method(*args, **kwargs)
                return annotate(result, branch)

            return run_async

        @functools.wraps(method)
        def run(*args: Any, **kwargs: Any) -> Any:
            if _current.get() is not None:
                return method(*args, **kwargs)
            branch = self.allocate(self.group_key(method, args, kwargs))
            args = self._with_branch_env(branch, args, kwargs)
            with self._running(branch):
                result = method(*args, **kwargs)
            return annotate(result, branch)

        return run

    def _with_branch_env(
        self, branch: RolloutBranch, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[Any, ...]:
        """A verifiers v1 task whose runtime (harness, per-rollout toolsets) uses the branch,
        with the policy's endpoints (the run's `ModelContext`, the env's interception, the
        `model_urls` given) in NO_PROXY: the model is the policy, not the world."""
        named = [*self.model_urls, *model_urls(args, kwargs)]

        def bypass() -> list[str]:
            return policy_addresses([*named, *self.endpoints()], self.record_urls)

        handle = self.tape.branch(branch.path, capability=branch.capability)
        return with_runtime_env(args, handle.env, bypass)

    # -- clients for the environment's tools ---------------------------------------------------

    def _verify(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.client.ca_files().bundle_file))

    def httpx_client(self, **kwargs: Any) -> httpx.Client:
        """An httpx client through the proxy, trusting its CA, naming the current branch."""
        hooks = kwargs.pop("event_hooks", {})
        hooks = {**hooks, "request": [*hooks.get("request", []), add_branch_headers]}
        kwargs.setdefault("timeout", 60.0)
        inner = httpx.HTTPTransport(proxy=self.client.proxy_url, verify=self._verify())
        return httpx.Client(
            transport=_RealClockTransport(inner),
            trust_env=False,
            event_hooks=hooks,
            **kwargs,
        )

    def async_httpx_client(self, **kwargs: Any) -> httpx.AsyncClient:
        hooks = kwargs.pop("event_hooks", {})
        hooks = {**hooks, "request": [*hooks.get("request", []), add_branch_headers_async]}
        kwargs.setdefault("timeout", 60.0)
        inner = httpx.AsyncHTTPTransport(proxy=self.client.proxy_url, verify=self._verify())
        return httpx.AsyncClient(
            transport=_RealClockAsyncTransport(inner),
            trust_env=False,
            event_hooks=hooks,
            **kwargs,
        )

    def requests_session(self) -> requests.Session:
        session = requests.Session()
        session.trust_env = False  # an inherited NO_PROXY must not send tool calls live
        session.mount("http://", BranchHeaderAdapter())
        session.mount("https://", BranchHeaderAdapter())
        session.proxies = {"http": self.client.proxy_url, "https": self.client.proxy_url}
        session.verify = str(self.client.ca_files().bundle_file)
        return session


def annotate(result: Any, branch: RolloutBranch) -> Any:
    """Record the branch in a verifiers-style state dict (`(completion, state)` or `state`)."""
    state = result
    if isinstance(result, tuple) and len(result) >= 2:
        state = result[1]
    if isinstance(state, dict):
        state.setdefault("groundhog", {"tape": branch.tape, "branch": branch.path})
    stamp_group(result, branch.group)  # a verifiers v1 Episode
    return result


def with_groundhog(
    env: Any,
    *,
    tape: str | Tape,
    resolver_url: str | None = None,
    proxy_url: str | None = None,
    world_seed: int | None = None,
    parent: str = "root",
    group_key: GroupKey = default_group_key,
    use_shim: bool = True,
    methods: Sequence[str] = ROLLOUT_METHODS,
    token: str | None = None,
    model_urls: Sequence[str] = (),
    record_urls: Sequence[str] | None = None,
) -> Any:
    """Wrap `env`'s rollout methods in place so each call runs on its own sibling branch.

    Opens `tape` (creating it with `world_seed` if needed), and sets `env.groundhog` to the
    `GroundhogRollouts` that hands out proxy clients for the environment's tools. The policy's
    endpoints bypass the proxy in the rollout's runtime: the run's `ModelContext` URL, the env's
    interception endpoint, OPENAI_BASE_URL and `model_urls`; `record_urls` (else
    GROUNDHOG_RECORD_URLS) names a model endpoint that is part of the world, kept on the tape.
    """
    if isinstance(tape, Tape):
        handle = tape
        client = tape.client
    else:
        client = Groundhog(resolver_url, proxy_url=proxy_url, token=token)
        handle = client.open(tape, world_seed)
    found = {name: getattr(env, name) for name in methods if callable(getattr(env, name, None))}
    if not found:
        raise TypeError(
            f"{type(env).__name__} has none of the rollout methods {', '.join(methods)}; "
            "pass methods=[...] naming the one that runs a single rollout"
        )
    rollouts = GroundhogRollouts(
        client,
        handle,
        parent=parent,
        group_key=group_key,
        use_shim=use_shim,
        model_urls=model_urls,
        record_urls=record_urls,
        endpoints=lambda: interception_urls(env),
    )
    try:
        for name, method in found.items():
            setattr(env, name, rollouts.wrap(method))
        env.groundhog = rollouts
    except (AttributeError, TypeError) as error:
        raise TypeError(
            f"cannot wrap {type(env).__name__}'s rollout methods ({error}); "
            "the environment must allow setting attributes on its instances"
        ) from error
    return env
