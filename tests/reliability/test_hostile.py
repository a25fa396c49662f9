"""Hand-made hostile input against the real resolver and proxy (bench/reliability/hostile.py)."""

from __future__ import annotations

from typing import Any

import pytest

from bench.reliability.hostile import _cases, gzip_bomb, run_hostile

pytestmark = pytest.mark.slow

CASE_NAMES = [case.name for case in _cases(b"")]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return run_hostile(tmp_path_factory.mktemp("hostile"))


@pytest.mark.parametrize(
    "name",
    CASE_NAMES,
)
def test_hostile_input_gets_a_clear_answer_and_no_crash(hostile: dict[str, Any], name: str) -> None:
    (case,) = [case for case in hostile["cases"] if case["case"] == name]
    assert case["alive"], case
    assert case["status"] is not None and case["status"] < 500, case
    if case["expect"] == "4xx":
        assert 400 <= case["status"] < 500, case
    assert case["rss_jump_mib"] < 192, case
    assert case["held"], case


def test_traversal_names_are_refused_and_write_nothing_outside(hostile: dict[str, Any]) -> None:
    traversal = [case for case in hostile["cases"] if case["case"].startswith("traversal")]
    assert len(traversal) >= 7
    assert all(case["status"] in (404, 422) for case in traversal), traversal
    assert hostile["files_written_outside"] == []


def test_gzip_bomb_is_really_a_bomb() -> None:
    bomb = gzip_bomb()
    assert len(bomb) < 1024 * 1024  # under a MiB on the wire, 512 MiB inflated
