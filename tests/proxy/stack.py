"""The real resolver and the real proxy as child processes, wired together for end-to-end tests.

End-to-end tests must exercise exactly what users run: `python -m resolver` and
`python -m proxy` over loopback TCP. This helper starts both on ephemeral ports against one
data directory (the proxy's CA lands in DATA/ca) and offers the admin calls the tests need.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import httpx

from tests.support.servers import ServerProcess, start_server

_names = itertools.count()


@dataclass
class Stack:
    resolver: ServerProcess
    proxy: ServerProcess
    data_dir: Path
    resolver_args: tuple[str, ...] = ()  # after `--data DIR`: e.g. a PostgreSQL URL
    # `python -m proxy` and its flags as first started (a restart may add some to these).
    proxy_args: tuple[str, ...] = ()

    @property
    def ca(self) -> Path:
        return self.data_dir / "ca" / "mitmproxy-ca-cert.pem"

    def admin(self, method: str, route: str, *, timeout: float = 30, **kwargs) -> httpx.Response:
        answer = httpx.request(
            method, self.resolver.url + route, timeout=timeout, trust_env=False, **kwargs
        )
        if answer.status_code >= 400:
            raise AssertionError(f"{method} {route} answered {answer.status_code}: {answer.text}")
        return answer

    def open_tape(self, **config) -> str:
        name = config.pop("name", None) or f"proxy-test-{next(_names)}"
        self.admin("POST", "/v1/tapes", json={"name": name, **config})
        return name

    def fork(
        self, tape: str, children: int | list[str], parent: str = "root", *, timeout: float = 30
    ) -> list[str]:
        answer = self.admin(
            "POST",
            f"/v1/tapes/{tape}/fork",
            json={"parent": parent, "children": children},
            timeout=timeout,
        )
        return answer.json()["branches"]

    def seal(self, tape: str) -> None:
        self.admin("POST", f"/v1/tapes/{tape}/seal")

    def branch(self, tape: str, branch: str) -> dict:
        return self.admin("GET", f"/v1/tapes/{tape}/branches/{quote(branch, safe='')}").json()

    def crash_resolver(self) -> None:
        """SIGKILL the resolver's process group: no shutdown hook, no last commit."""
        self.resolver.kill_group_hard()

    def restart_resolver(self, env: dict[str, str] | None = None) -> None:
        """A new resolver on the same port and store, as a supervisor would start it (`env`:
        its environment instead of the last one's, e.g. to arm or disarm a failpoint)."""
        chosen = self.resolver.env if env is None else env
        self.resolver = start_resolver(
            self.data_dir, chosen, port=self.resolver.port, extra=self.resolver_args
        )

    def crash_proxy(self) -> None:
        """SIGKILL the proxy: what it held in memory (its unanswered attempts) is gone."""
        self.proxy.kill_hard()

    def restart_proxy(self, *extra: str) -> None:
        """A new proxy on the same port with the flags it was first started with (and `extra`
        ones, e.g. to arm a failpoint), as a supervisor would start it."""
        # `python -m ARGS… --host H --port P`: the same ARGS again.
        first = self.proxy_args or tuple(self.proxy.command[2:-4])
        self.proxy = start_server(
            [*first, *extra], port=self.proxy.port, health_path=None, env=self.proxy.env
        )

    def stop(self) -> None:
        self.proxy.stop()
        self.resolver.stop()


def start_resolver(
    data_dir: Path,
    env: dict[str, str] | None = None,
    *,
    port: int | None = None,
    extra: tuple[str, ...] = (),
) -> ServerProcess:
    """`python -m resolver` on `data_dir` (and `extra` flags), leading a process group of its
    own (a crash test kills all of it)."""
    return start_server(
        ["resolver", "--data", str(data_dir), *extra], env=env, port=port, own_group=True
    )


@contextlib.contextmanager
def running_stack(
    data_dir: Path,
    *proxy_args: str,
    resolver_env: dict[str, str] | None = None,
    resolver_args: tuple[str, ...] = (),
) -> Iterator[Stack]:
    resolver = start_resolver(data_dir, resolver_env, extra=resolver_args)
    command = (
        "proxy",
        "--resolver-url",
        resolver.url,
        "--data",
        str(data_dir),
        "--ssl-insecure",
        *proxy_args,
    )
    try:
        proxy = start_server(list(command), health_path=None)
    except BaseException:
        resolver.stop()
        raise
    stack = Stack(resolver, proxy, data_dir, resolver_args, command)
    try:
        yield stack
    finally:
        stack.stop()
