"""Unit tests of groundhog/tape.py: a tape handle delegating to its client."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from groundhog.branch import Branch
from groundhog.models import BranchInfo, ForkResult, TapeDigest, TapeInfo, TapeReport
from groundhog.tape import AUTO, Tape


def _info(online: bool = True, seed: int = 5) -> TapeInfo:
    return TapeInfo(
        name="t", world_seed=seed, mode="groundhog", online=online, dependency_model="closure"
    )


class RecordingClient:
    """Answers like the resolver would and remembers every call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    def _note(self, name: str, *args: Any, **kwargs: Any) -> None:
        self.calls.append((name, args, kwargs))

    def get_tape(self, name: str) -> TapeInfo:
        self._note("get_tape", name)
        return _info(seed=6)

    def fork(
        self, name: str, parent: str, children: Any, *, shim_counters: Any, warn: bool = True
    ) -> ForkResult:
        self._note("fork", name, parent, children, shim_counters=shim_counters)
        count = children if isinstance(children, int) else len(children)
        names = children if isinstance(children, list) else [f"b{i}" for i in range(count)]
        return ForkResult(parent, [f"{parent}/{child}" for child in names])

    def list_branches(self, name: str) -> list[BranchInfo]:
        self._note("list_branches", name)
        return [BranchInfo("root", None)]

    def seal(self, name: str) -> TapeInfo:
        self._note("seal", name)
        return _info(online=False)

    def unseal(self, name: str) -> TapeInfo:
        self._note("unseal", name)
        return _info(online=True)

    def report(self, name: str) -> TapeReport:
        self._note("report", name)
        return TapeReport.from_json({"tape": name, "mode": "groundhog"})

    def digest(self, name: str) -> TapeDigest:
        self._note("digest", name)
        return TapeDigest(name, "ab" * 32, 0)

    def export_tape(self, name: str, destination: Any, **kwargs: Any) -> Path:
        self._note("export_tape", name, destination, **kwargs)
        return Path(destination)


def _tape() -> tuple[Tape, RecordingClient]:
    client = RecordingClient()
    return Tape(client, _info()), client  # type: ignore[arg-type]


def test_properties_and_repr() -> None:
    tape, _ = _tape()
    assert (tape.name, tape.world_seed) == ("t", 5)
    assert repr(tape) == "Tape('t', world_seed=5, mode='groundhog')"


def test_branch_handles_carry_the_world_seed() -> None:
    tape, _ = _tape()
    branch = tape.branch("root/b1")
    assert isinstance(branch, Branch)
    assert (branch.tape, branch.path, branch.world_seed) == ("t", "root/b1", 5)
    assert tape.branch().path == "root"


def test_fork_returns_branch_handles_and_passes_auto_counters() -> None:
    tape, client = _tape()
    forked = tape.fork(children=3)
    assert [branch.path for branch in forked] == ["root/b0", "root/b1", "root/b2"]
    assert client.calls[-1] == ("fork", ("t", "root", 3), {"shim_counters": AUTO})
    named = tape.fork("root/b0", ["x"], shim_counters=None)
    assert [branch.path for branch in named] == ["root/b0/x"]
    assert client.calls[-1][2] == {"shim_counters": None}


def test_seal_unseal_and_refresh_update_the_cached_info() -> None:
    tape, _ = _tape()
    assert tape.seal().online is False and tape.info.online is False
    assert tape.unseal().online is True and tape.info.online is True
    tape.refresh()
    assert tape.world_seed == 6


def test_reads_delegate_with_the_tape_name(tmp_path: Path) -> None:
    tape, client = _tape()
    assert tape.branches()[0].path == "root"
    assert tape.report().tape == "t"
    assert tape.digest().digest == "ab" * 32
    assert tape.export(tmp_path / "x.sqlite", progress=None) == tmp_path / "x.sqlite"
    assert [call[0] for call in client.calls] == [
        "list_branches",
        "report",
        "digest",
        "export_tape",
    ]
    assert all(call[1][0] == "t" for call in client.calls)
    assert client.calls[-1][2] == {"progress": None}
