"""Keep a worker process's shim counters with its branch in the resolver's store.

A branch's counters must outlive the process that drew them: `groundhog run --branch root
--shim`, then `groundhog tape fork`, then `groundhog run --branch root/b0 --shim` must continue
the sequence (no repeated uuid4, no clock going back), on any node, with no environment
plumbing. So a shimmed worker loads its branch's counters from the resolver at start and reports
them periodically and at exit; the resolver merges reports so they never go back.

Standard library only (urllib, no proxy): this runs at interpreter start-up of every worker and
must neither slow it nor route Groundhog's own calls through the recording proxy.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import sys
import threading
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import quote

from groundhog.errors import LocalProblem
from groundhog.shim.context import outside_branch
from groundhog.shim.state import BranchState

RESOLVER_URL_ENV = "GROUNDHOG_RESOLVER_URL"
TAPE_ENV = "GROUNDHOG_TAPE"
ADMIN_TOKEN_ENV = "GROUNDHOG_ADMIN_TOKEN"
REPORT_INTERVAL_ENV = "GROUNDHOG_SHIM_REPORT_S"
DEFAULT_REPORT_INTERVAL_S = 30.0
TIMEOUT_S = 5.0

logger = logging.getLogger(__name__)
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class StoreUnavailable(LocalProblem, RuntimeError):
    """The resolver could not be asked (or refused); the reason is in the message."""

    title = "Resolver unavailable to the shim"


def branch_url(resolver_url: str, tape: str, branch: str) -> str:
    return (
        f"{resolver_url.rstrip('/')}/v1/tapes/{quote(tape, safe='')}"
        f"/branches/{quote(branch, safe='')}"
    )


def _call(url: str, *, method: str = "GET", body: Any = None, token: str | None = None) -> Any:
    headers = {"Accept": "application/json"}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=data, headers=headers, method=method)
    # Outside the branch: the call's own clock reads must not move the branch's virtual clock.
    with outside_branch():
        try:
            with _NO_PROXY.open(request, timeout=TIMEOUT_S) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            detail = error.read().decode(errors="replace")[:300]
            raise StoreUnavailable(f"{method} {url} answered {error.code}: {detail}") from error
        except (OSError, ValueError) as error:
            raise StoreUnavailable(f"{method} {url} failed: {error}") from error


def load_counters(resolver_url: str, tape: str, branch: str, token: str | None = None) -> dict:
    """The branch's stored counters ({} for a branch that never ran shimmed)."""
    document = _call(branch_url(resolver_url, tape, branch), token=token)
    return dict(document.get("shim_counters") or {})


def report_counters(
    resolver_url: str, tape: str, state: BranchState, token: str | None = None
) -> None:
    url = branch_url(resolver_url, tape, state.branch) + "/shim-counters"
    _call(url, method="PUT", body=state.counters(), token=token)


class Reporter:
    """Reports one state's counters every `interval` seconds (real time) and once at exit."""

    def __init__(
        self,
        resolver_url: str,
        tape: str,
        state: BranchState,
        *,
        token: str | None = None,
        interval: float = DEFAULT_REPORT_INTERVAL_S,
    ) -> None:
        self.resolver_url, self.tape, self.state, self.token = resolver_url, tape, state, token
        self.interval = interval
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def report(self) -> bool:
        try:
            report_counters(self.resolver_url, self.tape, self.state, self.token)
        except StoreUnavailable as error:
            sys.stderr.write(f"groundhog: could not store the shim counters: {error}\n")
            return False
        return True

    def _loop(self) -> None:
        # Event.wait blocks on a lock with a timeout: real time, untouched by the virtual clock.
        while not self._stopped.wait(self.interval):
            self.report()

    def start(self) -> Reporter:
        if self.interval > 0:
            self._thread = threading.Thread(
                target=self._loop, name="groundhog-shim-reporter", daemon=True
            )
            self._thread.start()
        atexit.register(self.close)
        return self

    def close(self) -> None:
        if self._stopped.is_set():
            return
        self._stopped.set()
        self.report()


def from_environment() -> tuple[str, str, str | None] | None:
    """(resolver URL, tape, token) when this process is a worker of a known tape, else None."""
    resolver_url = os.environ.get(RESOLVER_URL_ENV)
    tape = os.environ.get(TAPE_ENV)
    if not resolver_url or not tape:
        return None
    return resolver_url, tape, os.environ.get(ADMIN_TOKEN_ENV) or None


def report_interval() -> float:
    raw = os.environ.get(REPORT_INTERVAL_ENV)
    try:
        return float(raw) if raw else DEFAULT_REPORT_INTERVAL_S
    except ValueError:
        return DEFAULT_REPORT_INTERVAL_S
