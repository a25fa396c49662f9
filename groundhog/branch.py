"""A handle on one branch: its worker environment, HTTP clients wired to the proxy, its shim.

A rollout needs three things to be a branch: its HTTP goes through the proxy naming tape and
branch, it trusts the proxy's CA, and its clock/random/uuid are keyed by the tape's world
seed. This module hands out each of them ready-made, for a subprocess (`env()`) or in-process
(`client()`, `async_client()`, `session()`, `shim()`).
"""

from __future__ import annotations

import ssl
from typing import TYPE_CHECKING, Any

import httpx

from groundhog.models import BranchInfo
from groundhog.protocol.headers import naming
from groundhog.real_clock import _RealClockAsyncTransport, _RealClockTransport
from groundhog.shim import shim
from groundhog.worker_env import proxy_url_with_credentials, worker_env

if TYPE_CHECKING:
    import requests

    from groundhog.client import Groundhog


class Branch:
    """Branch `path` of tape `tape` on the resolver `client` talks to."""

    def __init__(
        self,
        client: Groundhog,
        tape: str,
        path: str,
        *,
        world_seed: int | None = None,
        capability: str | None = None,
    ) -> None:
        self.groundhog = client
        self.tape = tape
        self.path = path
        self._world_seed = world_seed
        self._capability = capability
        self._capability_asked = capability is not None

    def __repr__(self) -> str:
        return f"Branch({self.tape!r}, {self.path!r})"

    @property
    def world_seed(self) -> int:
        if self._world_seed is None:
            self._world_seed = self.groundhog.get_tape(self.tape).world_seed
        return self._world_seed

    @property
    def capability(self) -> str | None:
        """What this branch's worker presents to the proxy (docs/reliability.md): from the fork
        that made the branch, else asked of the resolver once (None from one that has none)."""
        if not self._capability_asked:
            self.info()
        return self._capability

    def info(self) -> BranchInfo:
        info = self.groundhog.get_branch(self.tape, self.path)
        self._capability = info.capability or self._capability
        self._capability_asked = True
        return info

    def fork(self, children: int | list[str] = 2, **kwargs: Any) -> list[Branch]:
        result = self.groundhog.fork(self.tape, self.path, children, **kwargs)
        return [
            Branch(
                self.groundhog,
                self.tape,
                path,
                world_seed=self._world_seed,
                capability=result.capabilities.get(path),
            )
            for path in result.branches
        ]

    # -- for a worker subprocess -------------------------------------------------------------

    def env(
        self, *, no_proxy: list[str] | None = None, model_urls: list[str] | None = None
    ) -> dict[str, str]:
        """The exports for a worker process of this branch (also checks the branch exists).

        `model_urls` name the policy's endpoints (OPENAI_BASE_URL is added by itself) and
        `no_proxy` other hosts: both bypass the proxy, the policy is not the world.
        GROUNDHOG_NO_PROXY adds more hosts, comma-separated; GROUNDHOG_RECORD_URLS keeps a model
        endpoint that is part of the world (a judge) on the tape.
        """
        info = self.info()
        return worker_env(
            tape=self.tape,
            branch=self.path,
            world_seed=self.world_seed,
            resolver_url=self.groundhog.resolver_url,
            proxy_url=self.groundhog.proxy_url,
            ca=self.groundhog.ca_files(),
            no_proxy=no_proxy,
            model_urls=model_urls,
            shim_counters=info.shim_counters or None,
            capability=self.capability,
        )

    # -- in-process --------------------------------------------------------------------------

    @property
    def proxy_url(self) -> str:
        """The proxy URL with `TAPE:BRANCH:CAPABILITY` credentials."""
        return proxy_url_with_credentials(
            self.groundhog.proxy_url, self.tape, self.path, self.capability
        )

    def headers(self) -> dict[str, str]:
        return naming(self.tape, self.path, self.capability)

    def _ssl_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.groundhog.ca_files().bundle_file))

    def client(self, **kwargs: Any) -> httpx.Client:
        """An httpx client whose every request goes through the proxy as this branch."""
        kwargs.setdefault("timeout", 60.0)
        headers = {**self.headers(), **kwargs.pop("headers", {})}
        inner = httpx.HTTPTransport(proxy=self.proxy_url, verify=self._ssl_context())
        return httpx.Client(
            transport=_RealClockTransport(inner), headers=headers, trust_env=False, **kwargs
        )

    def async_client(self, **kwargs: Any) -> httpx.AsyncClient:
        """The asyncio twin of `client()`, for rollouts run with `asyncio.gather`."""
        kwargs.setdefault("timeout", 60.0)
        headers = {**self.headers(), **kwargs.pop("headers", {})}
        inner = httpx.AsyncHTTPTransport(proxy=self.proxy_url, verify=self._ssl_context())
        return httpx.AsyncClient(
            transport=_RealClockAsyncTransport(inner), headers=headers, trust_env=False, **kwargs
        )

    def session(self) -> requests.Session:
        """A requests session through the proxy as this branch, trusting its CA."""
        import requests  # on use: clients that never ask for a session never load it

        from groundhog.real_clock_requests import _RealClockAdapter

        session = requests.Session()
        session.trust_env = False  # an inherited NO_PROXY must not send requests live
        session.mount("http://", _RealClockAdapter())
        session.mount("https://", _RealClockAdapter())
        session.proxies = {"http": self.proxy_url, "https": self.proxy_url}
        session.verify = str(self.groundhog.ca_files().bundle_file)
        session.headers.update(self.headers())
        return session

    def shim(
        self, *, counters: dict[str, Any] | None = None, fetch_counters: bool = True, **kwargs: Any
    ) -> shim:
        """A `shim(...)` block for this branch, resuming the counters stored at its fork."""
        if counters is None and fetch_counters:
            counters = self.info().shim_counters or None
        return shim(
            world_seed=self.world_seed,
            branch=self.path,
            tape=self.tape,
            counters=counters,
            **kwargs,
        )
