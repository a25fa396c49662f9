"""Issue 12 item 8: each hostile value is a 4xx problem+json naming its field, never a 500."""

from __future__ import annotations

from typing import Any

import pytest

from bench.reliability.hostile_fields import run_hostile_fields


@pytest.fixture(scope="module")
def figures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return run_hostile_fields(tmp_path_factory.mktemp("hostile-fields"))


def test_every_hostile_value_is_refused_naming_its_field(figures: dict[str, Any]) -> None:
    failed = [case for case in figures["cases"] if not case["held"]]
    assert not failed, failed
    assert len(figures["cases"]) == 12 and figures["alive"]


def test_nothing_hostile_was_imported(figures: dict[str, Any]) -> None:
    assert figures["tapes_after"] == ["hostile-fields"]
