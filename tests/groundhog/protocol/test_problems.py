from __future__ import annotations

import json

from groundhog.protocol.problems import MEDIA_TYPE, TYPE_BASE, problem_bytes, problem_document


def test_identical_problems_are_identical_bytes() -> None:
    first = problem_bytes(502, "sealed-miss", "Not on tape", "d", b=1, a=2)
    second = problem_bytes(502, "sealed-miss", "Not on tape", "d", a=2, b=1)
    assert first == second
    assert json.loads(first) == {
        "type": TYPE_BASE + "sealed-miss",
        "title": "Not on tape",
        "status": 502,
        "detail": "d",
        "a": 2,
        "b": 1,
    }
    assert MEDIA_TYPE == "application/problem+json"


def test_extras_cannot_replace_the_standard_members() -> None:
    document = problem_document(400, "x", "X", "d", type_base="urn:w:", type="forged")
    assert document["type"] == "urn:w:x"
