"""`groundhog proxy --tape/--branch/--capability` starts a sidecar pinned to one branch
(proxy/capabilities.py; its refusals end to end: tests/proxy/test_capabilities_end_to_end.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from groundhog import cli_servers
from groundhog.cli import app
from proxy.__main__ import build_parser
from proxy.__main__ import main as proxy_main
from tests.support.servers import free_port

runner = CliRunner()


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch, default_ports_taken: list[int]) -> list[list[str]]:
    """The `python -m proxy` arguments `groundhog proxy` would run (it is never started)."""
    runs: list[list[str]] = []
    monkeypatch.setattr(cli_servers, "_run_module", lambda _module, args: runs.append(args))
    monkeypatch.delenv("GROUNDHOG_CAPABILITY", raising=False)
    return runs


def test_the_pin_and_its_capability_reach_the_proxy(started: list[list[str]], tmp_path) -> None:
    base = ["proxy", "--port", str(free_port()), "--data", str(tmp_path)]
    pinned = [*base, "--tape", "t", "--branch", "root/b0", "--capability", "c0ffee"]
    assert runner.invoke(app, pinned).exit_code == 0
    args = started[-1]
    assert args[args.index("--tape") + 1 :][:5] == [
        "t",
        "--branch",
        "root/b0",
        "--capability",
        "c0ffee",
    ]
    parsed = build_parser().parse_args(args)  # python -m proxy takes them as given
    assert (parsed.tape, parsed.branch, parsed.capability) == ("t", "root/b0", "c0ffee")

    from_env = runner.invoke(app, [*base, "--tape", "t"], env={"GROUNDHOG_CAPABILITY": "beef"})
    assert from_env.exit_code == 0
    assert started[-1][started[-1].index("--branch") + 1] == "root"
    assert started[-1][started[-1].index("--capability") + 1] == "beef"

    assert runner.invoke(app, base).exit_code == 0
    assert "--tape" not in started[-1] and "--capability" not in started[-1]


def test_a_branch_without_its_tape_is_refused(started: list[list[str]], tmp_path: Path) -> None:
    lone = runner.invoke(app, ["proxy", "--port", str(free_port()), "--branch", "root/b0"])
    assert lone.exit_code == 1 and "--tape" in lone.output
    assert started == []
    with pytest.raises(SystemExit) as refused:
        proxy_main(["--capability", "c0ffee", "--data", str(tmp_path)])
    assert refused.value.code == 2
