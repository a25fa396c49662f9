"""The Python client of the resolver's admin API: tapes, forks, seals, reports, export/import.

Scripts and the CLI both drive Groundhog through this one class, so the shapes in
docs/internals.md are decoded in one place and every failure arrives as a `GroundhogError`
carrying the server's problem detail.

    gh = Groundhog()                                  # GROUNDHOG_RESOLVER_URL, default :8070
    tape = gh.open("demo", world_seed=7)
    for branch in tape.fork("root", 4):
        subprocess.run(cmd, env={**os.environ, **branch.env()})
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

from groundhog.errors import ForkWarning, GroundhogError
from groundhog.models import BranchEvent, BranchInfo, ForkResult, TapeDigest, TapeInfo, TapeReport
from groundhog.tape import AUTO, Tape
from groundhog.transport import AdminTransport
from groundhog.worker_env import (
    CA_FILE_ENV,
    DEFAULT_PROXY_URL,
    PROXY_URL_ENV,
    CaFiles,
    proxy_url_from_env,
    proxy_url_with_credentials,
    store_ca,
)

ProgressCallback = Callable[[int, int | None], None]
"""Called with (bytes done, bytes total or None) during export and import."""

# A verify replays every ask of the tape; a large tape takes minutes, not the usual seconds.
VERIFY_TIMEOUT_S = 3600.0
_CHUNK = 256 * 1024
_PACKAGE_DIR = str(Path(__file__).parent)


def _segment(value: str) -> str:
    return quote(value, safe="")


class Groundhog:
    """A connection to one resolver (and the address of the proxy its workers use)."""

    def __init__(
        self,
        resolver_url: str | None = None,
        *,
        token: str | None = None,
        proxy_url: str | None = None,
        ca_file: str | Path | None = None,
        timeout: float = 60.0,
    ) -> None:
        self.transport = AdminTransport(resolver_url, token=token, timeout=timeout)
        given = proxy_url or os.environ.get(PROXY_URL_ENV)
        self._proxy_url = self._checked_proxy_url(given) if given else None
        chosen_ca = ca_file or os.environ.get(CA_FILE_ENV)
        self._ca_file = Path(chosen_ca) if chosen_ca else None
        self._ca: CaFiles | None = None

    @staticmethod
    def _checked_proxy_url(url: str) -> str:
        url = proxy_url_from_env(url)
        try:
            proxy_url_with_credentials(url, "tape", "root")
        except ValueError as error:
            raise GroundhogError(None, "Bad proxy URL", f"{error} (GROUNDHOG_PROXY_URL)") from None
        return url

    @property
    def proxy_url(self) -> str:
        """The proxy workers use: as given, else GROUNDHOG_PROXY_URL, else the one the resolver
        announces (`groundhog up` tells it), else the default port on loopback."""
        if self._proxy_url is None:
            announced = self.deployment_info().get("proxy_url")
            self._proxy_url = self._checked_proxy_url(announced or DEFAULT_PROXY_URL)
        return self._proxy_url

    def deployment_info(self) -> dict[str, Any]:
        """`GET /v1/info`; a resolver without the route counts as announcing nothing."""
        try:
            return dict(self.transport.json("GET", "/v1/info"))
        except GroundhogError as error:
            if error.status == 404:
                return {}
            raise

    @property
    def resolver_url(self) -> str:
        return self.transport.url

    def close(self) -> None:
        self.transport.close()

    def __enter__(self) -> Groundhog:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- tapes -----------------------------------------------------------------------------

    def open_tape(
        self,
        name: str,
        world_seed: int | None = None,
        *,
        mode: str | None = None,
        online: bool | None = None,
        dependency_model: str | None = None,
        **config: Any,
    ) -> TapeInfo:
        """Create the tape, or return it if it exists with the same config (409 otherwise).

        Settings left as None are not sent: the server's defaults apply to a new tape, and an
        existing tape is compared only on the settings given.
        """
        given = {
            "world_seed": world_seed,
            "mode": None if mode is None else str(mode),
            "online": online,
            "dependency_model": None if dependency_model is None else str(dependency_model),
            **config,
        }
        body = {"name": name, **{key: value for key, value in given.items() if value is not None}}
        return TapeInfo.from_json(self.transport.json("POST", "/v1/tapes", json=body))

    def open(self, name: str, world_seed: int | None = None, **options: Any) -> Tape:
        """`open_tape` returning a handle to fork and inspect the tape."""
        return Tape(self, self.open_tape(name, world_seed, **options))

    def tape(self, name: str) -> Tape:
        """A handle to an existing tape (fetches it, so an unknown name fails here)."""
        return Tape(self, self.get_tape(name))

    def list_tapes(self) -> list[TapeInfo]:
        document = self.transport.json("GET", "/v1/tapes")
        return [TapeInfo.from_json(item) for item in document.get("tapes", [])]

    def get_tape(self, name: str) -> TapeInfo:
        return TapeInfo.from_json(self.transport.json("GET", f"/v1/tapes/{_segment(name)}"))

    def delete_tape(self, name: str) -> None:
        self.transport.request("DELETE", f"/v1/tapes/{_segment(name)}")

    def seal(self, name: str) -> TapeInfo:
        return TapeInfo.from_json(self.transport.json("POST", f"/v1/tapes/{_segment(name)}/seal"))

    def unseal(self, name: str) -> TapeInfo:
        path = f"/v1/tapes/{_segment(name)}/unseal"
        return TapeInfo.from_json(self.transport.json("POST", path))

    def report(self, name: str, *, view: str = "full") -> TapeReport:
        """`view="counts"`: the decision counts only, without the signals, digests,
        contamination and costs that read every answer of the tape (`possibly_contaminated`
        and `costs` then read as 0 and empty: not computed, not clean)."""
        path = f"/v1/tapes/{_segment(name)}/report"
        params = None if view == "full" else {"view": view}
        return TapeReport.from_json(self.transport.json("GET", path, params=params))

    def audit(self, name: str) -> dict[str, Any]:
        """`{"tape", "clean", "findings": [{"exchange", "where", "rule"}]}`: where the tape's
        stored bytes still look like secrets (never the values)."""
        return dict(self.transport.json("GET", f"/v1/tapes/{_segment(name)}/audit"))

    def digest(self, name: str) -> TapeDigest:
        document = self.transport.json("GET", f"/v1/tapes/{_segment(name)}/digest")
        return TapeDigest(document["tape"], document["digest"], int(document["exchanges"]))

    # -- branches --------------------------------------------------------------------------

    def fork(
        self,
        name: str,
        parent: str = "root",
        children: int | list[str] = 2,
        *,
        shim_counters: dict[str, Any] | None = AUTO,
        warn: bool = True,
    ) -> ForkResult:
        """Fork `parent` into children; by default hands them this context's shim counters.

        The resolver's warnings (e.g. `parent` was forked before) are raised as `ForkWarning`
        unless `warn` is false (a caller adding siblings to a group on purpose); either way they
        are in the result's `warnings`."""
        if shim_counters is AUTO:
            from groundhog.shim.api import current  # on use: the shim's patches cost ~0.1 s

            state = current()
            shim_counters = state.counters() if state is not None else None
        body: dict[str, Any] = {"parent": parent, "children": children}
        if shim_counters is not None:
            body["shim_counters"] = shim_counters
        document = self.transport.json("POST", f"/v1/tapes/{_segment(name)}/fork", json=body)
        result = ForkResult(
            document["parent"],
            list(document["branches"]),
            list(document.get("warnings", [])),
            dict(document.get("capabilities") or {}),
        )
        for message in result.warnings if warn else ():
            # Attributed to the caller's line, not to the client or Tape/GroupRunner inside it.
            warnings.warn(message, ForkWarning, skip_file_prefixes=(_PACKAGE_DIR,))
        return result

    def report_shim_counters(self, name: str, path: str, counters: dict[str, Any]) -> BranchInfo:
        """Store a branch's shim counters (merged: the stored sequence never goes back)."""
        route = f"/v1/tapes/{_segment(name)}/branches/{_segment(path)}/shim-counters"
        return BranchInfo.from_json(self.transport.json("PUT", route, json=counters))

    def list_branches(self, name: str) -> list[BranchInfo]:
        document = self.transport.json("GET", f"/v1/tapes/{_segment(name)}/branches")
        return [BranchInfo.from_json(item) for item in document.get("branches", [])]

    def get_branch(self, name: str, path: str) -> BranchInfo:
        route = f"/v1/tapes/{_segment(name)}/branches/{_segment(path)}"
        return BranchInfo.from_json(self.transport.json("GET", route))

    def events(
        self, name: str, *, branch: str | None = None, after: int = 0, limit: int = 100
    ) -> tuple[list[BranchEvent], int | None]:
        """One page of what branches were served, and the `after` of the next page (or None)."""
        params: dict[str, Any] = {"after": after, "limit": limit}
        if branch is not None:
            params["branch"] = branch
        document = self.transport.json("GET", f"/v1/tapes/{_segment(name)}/events", params=params)
        events = [BranchEvent.from_json(item) for item in document.get("events", [])]
        return events, document.get("next_after")

    def iter_events(self, name: str, *, branch: str | None = None) -> Iterator[BranchEvent]:
        after: int | None = 0
        while after is not None:
            page, after = self.events(name, branch=branch, after=after)
            yield from page

    def diff(self, name: str, a: str, b: str) -> dict[str, Any]:
        """Where branches `a` and `b` diverged, the reads they share and why the others not."""
        route = f"/v1/tapes/{_segment(name)}/diff"
        return dict(self.transport.json("GET", route, params={"a": a, "b": b}))

    def exchange(self, name: str, exchange_id: int) -> dict[str, Any]:
        return self.transport.json("GET", f"/v1/tapes/{_segment(name)}/exchanges/{exchange_id}")

    # -- export / import / verify ----------------------------------------------------------

    def verify(self, name: str, *, timeout: float = VERIFY_TIMEOUT_S) -> dict[str, Any]:
        """Replay the tape with the world closed (POST /v1/tapes/{t}/verify): its verdict,
        per-branch summary and first mismatch. Takes as long as replaying every branch."""
        route = f"/v1/tapes/{_segment(name)}/verify"
        document: dict[str, Any] = self.transport.json("POST", route, timeout=timeout)
        return document

    def export_tape(
        self,
        name: str,
        destination: str | Path,
        *,
        progress: ProgressCallback | None = None,
        allow_unscrubbed: bool = False,
    ) -> Path:
        """Download the tape as a standalone SQLite file; a failure leaves no partial file.
        A tape whose audit finds secrets is refused (409) unless `allow_unscrubbed`."""
        target = Path(destination)
        partial = target.with_name(target.name + ".partial")
        params = {"allow_unscrubbed": "true"} if allow_unscrubbed else {}
        route = f"/v1/tapes/{_segment(name)}/export"
        try:
            with (
                self.transport.stream("GET", route, params=params) as response,
                partial.open("wb") as handle,
            ):
                total = (
                    int(response.headers["content-length"])
                    if "content-length" in response.headers
                    else None
                )
                done = 0
                for chunk in response.iter_bytes(_CHUNK):
                    handle.write(chunk)
                    done += len(chunk)
                    if progress:
                        progress(done, total)
            partial.replace(target)
        finally:
            partial.unlink(missing_ok=True)
        return target

    def import_tape(
        self, source: str | Path, name: str, *, progress: ProgressCallback | None = None
    ) -> TapeInfo:
        """Upload an exported SQLite file as a new tape called `name`."""
        path = Path(source)
        if not path.is_file():
            raise GroundhogError(None, "No such file", f"{path} does not exist or is not a file")
        total = path.stat().st_size

        def chunks() -> Iterator[bytes]:
            done = 0
            with path.open("rb") as handle:
                while chunk := handle.read(_CHUNK):
                    done += len(chunk)
                    if progress:
                        progress(done, total)
                    yield chunk

        document = self.transport.json(
            "POST",
            "/v1/tapes/import",
            params={"name": name},
            content=chunks(),
            headers={"Content-Type": "application/vnd.sqlite3", "Content-Length": str(total)},
        )
        return TapeInfo.from_json(document)

    # -- worker plumbing -------------------------------------------------------------------

    def ca_pem(self) -> bytes:
        return self.transport.request("GET", "/v1/ca.pem").content

    def ca_files(self, *, refresh: bool = False) -> CaFiles:
        """The proxy CA on local disk, downloaded from the resolver once per client."""
        if self._ca is None or refresh:
            if self._ca_file is not None and self._ca_file.is_file() and not refresh:
                pem = self._ca_file.read_bytes()
            else:
                pem = self.ca_pem()
            try:
                self._ca = store_ca(pem, self.resolver_url, self._ca_file)
            except ValueError as error:
                raise GroundhogError(None, "Bad CA certificate", str(error)) from error
            except OSError as error:
                raise GroundhogError(
                    None,
                    "Cannot store the CA",
                    f"{error}; point GROUNDHOG_CA_FILE (or XDG_CACHE_HOME) at a writable place",
                ) from error
        return self._ca

    def healthy(self) -> bool:
        try:
            self.transport.request("GET", "/healthz")
        except GroundhogError:
            return False
        return True
