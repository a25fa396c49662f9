"""Unit tests of groundhog/cli_tape.py: argument handling, tables and JSON, with a fake client.

The end-to-end lifecycle against a real resolver lives in tests/groundhog/test_cli.py; here
the client is a recording double so each command's own translation is checked precisely.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from groundhog import cli_tape
from groundhog.cli_common import CliSettings
from groundhog.cli_tape import tape_app
from groundhog.errors import GroundhogError
from groundhog.models import BranchInfo, ForkResult, TapeDigest, TapeInfo, TapeReport

runner = CliRunner()


def _info(name: str = "t", **fields: Any) -> TapeInfo:
    values: dict[str, Any] = {
        "world_seed": 7,
        "mode": "groundhog",
        "online": True,
        "dependency_model": "closure",
        "exchanges": 3,
        "branches": 4,
    }
    values.update(fields)
    return TapeInfo(name=name, **values)


class FakeClient:
    def __init__(self, calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]]) -> None:
        self.calls = calls
        self.tapes: list[TapeInfo] = []
        self.failure: GroundhogError | None = None

    def __enter__(self) -> FakeClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.calls.append(("close", (), {}))

    def _note(self, name: str, *args: Any, **kwargs: Any) -> None:
        self.calls.append((name, args, kwargs))
        if self.failure is not None:
            raise self.failure

    def open_tape(self, name: str, seed: int | None, **kwargs: Any) -> TapeInfo:
        self._note("open_tape", name, seed, **kwargs)
        return _info(name)

    def list_tapes(self) -> list[TapeInfo]:
        self._note("list_tapes")
        return self.tapes

    def get_tape(self, name: str) -> TapeInfo:
        self._note("get_tape", name)
        return _info(name)

    def list_branches(self, name: str) -> list[BranchInfo]:
        self._note("list_branches", name)
        return [
            BranchInfo("root", None, children=["root/b0", "root/b1"]),
            BranchInfo("root/b0", "root", children=["root/b0/x"], events=2),
            BranchInfo("root/b0/x", "root/b0", events=5),
            BranchInfo("root/b1", "root"),
        ]

    def fork(self, name: str, parent: str, children: Any, **kwargs: Any) -> ForkResult:
        self._note("fork", name, parent, children, **kwargs)
        names = children if isinstance(children, list) else [f"b{i}" for i in range(children)]
        return ForkResult(parent, [f"{parent}/{child}" for child in names])

    def report(self, name: str) -> TapeReport:
        self._note("report", name)
        counts = {"decisions": {"shared": 2, "recorded": 1, "write": 0}, "reads": 3}
        return TapeReport.from_json(
            {
                "tape": name,
                "mode": "groundhog",
                "totals": {**counts, "reads_shared": 2, "live_calls": 1, "lie_rate": 0.125},
                "branches": {"root/b1": counts, "root/b0": {"reads": 0}},
            }
        )

    def digest(self, name: str) -> TapeDigest:
        self._note("digest", name)
        return TapeDigest(name, "f" * 64, 9)

    def seal(self, name: str) -> TapeInfo:
        self._note("seal", name)
        return _info(name, online=False)

    def unseal(self, name: str) -> TapeInfo:
        self._note("unseal", name)
        return _info(name)

    def delete_tape(self, name: str) -> None:
        self._note("delete_tape", name)


class FakeSettings(CliSettings):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
        self.fake = FakeClient(self.calls)

    def client(self) -> FakeClient:  # type: ignore[override]
        return self.fake


@pytest.fixture
def settings() -> FakeSettings:
    return FakeSettings()


def _run(settings: FakeSettings, *args: str, input: str | None = None) -> Any:
    return runner.invoke(tape_app, list(args), obj=settings, input=input, env={"COLUMNS": "200"})


def _called(settings: FakeSettings) -> list[tuple[str, tuple[Any, ...], dict[str, Any]]]:
    return [call for call in settings.calls if call[0] != "close"]


def test_open_passes_only_the_given_settings(settings: FakeSettings) -> None:
    result = _run(settings, "open", "t", "--seed", "7", "--sealed", "--cooperative-host", "a.b")
    assert result.exit_code == 0, result.output
    assert _called(settings) == [
        (
            "open_tape",
            ("t", 7),
            {
                "mode": None,
                "online": False,
                "dependency_model": None,
                "cooperative_hosts": ["a.b"],
            },
        )
    ]
    assert settings.calls[-1][0] == "close"
    header = result.stdout.splitlines()[1]
    for column in ("name", "seed", "mode", "online", "dependencies", "exchanges", "branches"):
        assert column in header


def test_open_merges_a_config_file_and_flags_win(settings: FakeSettings, tmp_path: Path) -> None:
    config = tmp_path / "tape.json"
    config.write_text(json.dumps({"cooperative_hosts": ["old"], "ignore_params": ["ts"]}))
    result = _run(settings, "open", "t", "--config", str(config), "--cooperative-host", "new")
    assert result.exit_code == 0, result.output
    kwargs = _called(settings)[0][2]
    assert kwargs["cooperative_hosts"] == ["new"] and kwargs["ignore_params"] == ["ts"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "cannot read --config"),
        ("[1, 2]", "must hold a JSON object of tape settings"),
        (None, "cannot read --config"),
    ],
)
def test_a_bad_config_file_fails_before_any_request(
    settings: FakeSettings, tmp_path: Path, content: str | None, message: str
) -> None:
    config = tmp_path / "tape.json"
    if content is not None:
        config.write_text(content)
    result = _run(settings, "open", "t", "--config", str(config))
    assert result.exit_code == 1
    assert message in result.stderr and str(config) in result.stderr
    assert settings.calls == []


def test_open_json_prints_the_tape(settings: FakeSettings) -> None:
    result = _run(settings, "open", "t", "--json")
    document = json.loads(result.stdout)
    assert document["name"] == "t" and document["world_seed"] == 7 and "extra" not in document


def test_ls_guides_when_empty_and_tabulates_otherwise(settings: FakeSettings) -> None:
    empty = _run(settings, "ls")
    assert "no tapes yet" in empty.stdout and "groundhog tape open" in empty.stdout
    settings.fake.tapes = [_info("alpha"), _info("beta", online=False)]
    table = _run(settings, "ls").stdout
    alpha = next(line for line in table.splitlines() if "alpha" in line)
    beta = next(line for line in table.splitlines() if "beta" in line)
    assert "online" in alpha and "sealed" in beta
    listed = json.loads(_run(settings, "ls", "--json").stdout)
    assert [tape["name"] for tape in listed] == ["alpha", "beta"]


def test_show_draws_the_branch_tree(settings: FakeSettings) -> None:
    result = _run(settings, "show", "t")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    tree = lines[lines.index(next(line for line in lines if "(seed 7, groundhog)" in line)) :]
    order = [
        next(i for i, line in enumerate(tree) if f"{path}  " in line)
        for path in ("root", "root/b0", "root/b0/x", "root/b1")
    ]
    assert order == sorted(order)
    nested = next(line for line in tree if "root/b0/x" in line)
    shallow = next(line for line in tree if "root/b1" in line)
    assert nested.index("root/b0/x") > shallow.index("root/b1")
    assert "5 events" in nested
    shown = json.loads(_run(settings, "show", "t", "--json").stdout)
    assert shown["tape"]["name"] == "t" and len(shown["branches"]) == 4


def test_fork_by_count_or_by_name(settings: FakeSettings) -> None:
    counted = _run(settings, "fork", "t", "--children", "3")
    assert counted.stdout.split() == ["root/b0", "root/b1", "root/b2"]
    named = _run(settings, "fork", "t", "--parent", "root/b0", "--name", "x", "--name", "y")
    assert named.stdout.split() == ["root/b0/x", "root/b0/y"]
    forks = [call for call in _called(settings) if call[0] == "fork"]
    assert forks[0][1] == ("t", "root", 3) and forks[0][2] == {"shim_counters": None, "warn": False}
    assert forks[1][1] == ("t", "root/b0", ["x", "y"])
    as_json = json.loads(_run(settings, "fork", "t", "--json").stdout)
    assert as_json == {
        "parent": "root",
        "branches": ["root/b0", "root/b1"],
        "capabilities": {},
        "warnings": [],
    }


def test_report_rows_are_sorted_and_skip_zero_decisions(settings: FakeSettings) -> None:
    result = _run(settings, "report", "t")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    b0 = next(i for i, line in enumerate(lines) if "root/b0" in line)
    b1 = next(i for i, line in enumerate(lines) if "root/b1" in line)
    total = next(i for i, line in enumerate(lines) if "total" in line)
    assert b0 < b1 < total
    assert "recorded 1, shared 2" in lines[b1] and "write" not in lines[b1]
    assert lines[b0].rstrip(" │|").endswith("-")
    assert "0.125" in lines[total]
    assert json.loads(_run(settings, "report", "t", "--json").stdout)["totals"]["reads"] == 3


def test_seal_unseal_digest(settings: FakeSettings) -> None:
    assert "sealed t: misses are refused" in _run(settings, "seal", "t").stdout
    assert "unsealed t: misses are fetched live" in _run(settings, "unseal", "t").stdout
    assert _run(settings, "digest", "t").stdout.strip() == f"{'f' * 64}  t (9 exchanges)"
    assert json.loads(_run(settings, "digest", "t", "--json").stdout)["exchanges"] == 9


def test_digest_is_one_line_on_a_narrow_terminal(
    settings: FakeSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Scripts cut the digest from the line: a 40-column terminal must not break it mid-phrase."""
    monkeypatch.setattr(cli_tape, "console", Console(width=40, highlight=False))
    shown = _run(settings, "digest", "t").stdout
    assert shown.splitlines() == [f"{'f' * 64}  t (9 exchanges)"], shown


def test_rm_asks_first_and_deletes_nothing_on_no(settings: FakeSettings) -> None:
    declined = _run(settings, "rm", "t", input="n\n")
    assert declined.exit_code == 1 and "delete tape t" in declined.stdout
    assert _called(settings) == []
    accepted = _run(settings, "rm", "t", input="y\n")
    assert accepted.exit_code == 0 and "deleted t" in accepted.stdout
    assert _run(settings, "rm", "t", "--yes").exit_code == 0
    assert [call[0] for call in _called(settings)] == ["delete_tape", "delete_tape"]


def test_import_refuses_a_missing_file_before_any_request(
    settings: FakeSettings, tmp_path: Path
) -> None:
    result = _run(settings, "import", str(tmp_path / "absent.sqlite"), "--name", "copy")
    assert result.exit_code == 1 and "is not a file" in result.stderr
    assert settings.calls == []


def test_client_problems_exit_1_with_the_detail(settings: FakeSettings) -> None:
    settings.fake.failure = GroundhogError(404, "Not found", "tape 'zz' does not exist")
    for command in (["show", "zz"], ["seal", "zz"], ["digest", "zz"], ["report", "zz"]):
        result = _run(settings, *command)
        assert result.exit_code == 1
        assert "404 Not found" in result.stderr and "'zz' does not exist" in result.stderr
        assert result.stdout == ""
