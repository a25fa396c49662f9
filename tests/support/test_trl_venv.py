"""The TRL venv's builder: what makes a build impossible here, and what is a real failure."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.support import trl_venv


def test_the_wheel_names_the_interpreter_the_venv_is_made_from() -> None:
    wheel = Path("torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl")
    assert trl_venv.wheel_python_version(wheel) == (3, 11)
    with pytest.raises(trl_venv.TrlVenvUnavailable, match="names no CPython"):
        trl_venv.wheel_python_version(Path("trl-1.16.0-py3-none-any.whl"))


def test_a_named_wheel_that_is_not_there_makes_the_build_unavailable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(trl_venv.WHEEL_ENV, str(tmp_path / "torch.whl"))
    with pytest.raises(trl_venv.TrlVenvUnavailable, match="is not a file"):
        trl_venv.torch_wheel()


def test_an_unreachable_index_is_unavailable_and_any_other_failure_raises() -> None:
    def failing(printed: str) -> list[str]:
        return [sys.executable, "-c", f"import sys; print({printed!r}); sys.exit(1)"]

    with pytest.raises(trl_venv.TrlVenvUnavailable, match="cannot be reached"):
        trl_venv._run(failing("error: Failed to fetch: dns error: failed to lookup address"))
    with pytest.raises(RuntimeError, match="No solution found") as raised:
        trl_venv._run(failing("No solution found when resolving dependencies"))
    assert not isinstance(raised.value, trl_venv.TrlVenvUnavailable)
