"""One reliability stack: the counting upstream, the resolver, optionally the ledger tap, proxies.

Every scenario starts the same pieces the same way; this keeps the wiring (which URL the proxy
asks, where the store file is, which tape and branches exist) in one place.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench.reliability.admin import open_forked_tape
from bench.reliability.processes import Child, Children, proxy_args, resolver_args

_tapes = itertools.count()


@dataclass
class Stack:
    group: Children
    data_dir: Path
    upstream: Child
    resolver: Child
    proxies: list[Child] = field(default_factory=list)
    tap: Child | None = None
    token: str | None = None

    @property
    def store_path(self) -> Path:
        return self.data_dir / "groundhog.sqlite3"

    @property
    def ledger_path(self) -> Path:
        return self.data_dir.parent / "ledger.jsonl"

    def open_tape(
        self, prefix: str, branches: int, *, dependency_model: str = "path"
    ) -> tuple[str, list[str]]:
        name = f"{prefix}-{next(_tapes)}"
        children = open_forked_tape(
            self.resolver.url, name, branches, token=self.token, dependency_model=dependency_model
        )
        return name, children

    def upstream_stats(self) -> dict[str, Any]:
        return httpx.get(f"{self.upstream.url}/_stats", timeout=10, trust_env=False).json()

    def upstream_log(self) -> list[list[Any]]:
        return httpx.get(f"{self.upstream.url}/_log", timeout=10, trust_env=False).json()["log"]


def start_stack(
    group: Children,
    root: Path,
    *,
    proxies: int = 1,
    with_tap: bool = False,
    resolver_env: dict[str, str] | None = None,
    upstream_timeout: float = 10.0,
    database_url: str | None = None,
) -> Stack:
    data_dir = root / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    upstream = group.start("upstream", ["bench.reliability.upstream"])
    resolver = group.start(
        "resolver", resolver_args(data_dir, database_url), env=resolver_env or {}
    )
    stack = Stack(group, data_dir, upstream, resolver)
    resolver_url = resolver.url
    if with_tap:
        stack.tap = group.start(
            "tap",
            [
                "bench.reliability.tap",
                "--target",
                resolver.url,
                "--ledger",
                str(stack.ledger_path),
            ],
            health="tcp",
        )
        resolver_url = stack.tap.url
    for index in range(proxies):
        stack.proxies.append(
            group.start(
                f"proxy{index}",
                proxy_args(resolver_url, root / f"proxy{index}", upstream_timeout=upstream_timeout),
                health="tcp",
            )
        )
    return stack
