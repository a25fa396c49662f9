"""Unit tests of resolver/answers.py: the wire form of what the store holds."""

from __future__ import annotations

import base64

import pytest

from resolver import answers
from store.exchanges import RecordedAnswer


def test_an_answer_read_for_the_resolve_path_becomes_its_wire_form() -> None:
    answer = RecordedAnswer(7, 201, [["Content-Type", "text/plain"]], "sha", b"made", None)
    wire = answers.from_answer(answer)
    assert wire == {
        "status": 201,
        "headers": [["Content-Type", "text/plain"]],
        "body": base64.b64encode(b"made").decode(),
    }
    empty = answers.from_answer(answer._replace(body=None, body_sha=None))
    assert empty["body"] == ""


def test_an_error_exchange_has_no_answer_of_its_own() -> None:
    failed = RecordedAnswer(8, None, [], None, None, "connect")
    with pytest.raises(ValueError, match="exchange 8 holds an error"):
        answers.from_answer(failed)
