"""Stored bodies shown as people read them: decoded, pretty JSON, text, or a hex dump."""

from __future__ import annotations

import gzip

from resolver.ui.bodies import DISPLAY_LIMIT, show_body


def test_gzip_json_is_decoded_and_pretty_printed() -> None:
    body = gzip.compress(b'{"b":1,"a":[1,2]}')
    shown = show_body(body, [["Content-Encoding", "gzip"], ["Content-Type", "application/json"]])
    assert shown.kind == "json"
    assert shown.text == '{\n  "b": 1,\n  "a": [\n    1,\n    2\n  ]\n}'
    assert "shown decoded" in shown.notes[0]


def test_broken_encoding_is_shown_as_stored() -> None:
    shown = show_body(b"not gzip", [["content-encoding", "gzip"]])
    assert shown.kind == "text" and shown.text == "not gzip"
    assert "does not decode" in shown.notes[0]


def test_binary_gets_a_hex_dump_and_text_stays_text() -> None:
    shown = show_body(bytes([0, 159, 255, 65]), [])
    assert shown.kind == "binary" and shown.text.startswith("00000000  00 9f ff 41")
    assert show_body(b"plain {words", [["Content-Type", "text/plain"]]).kind == "text"
    assert show_body(b"", []).kind == "empty"


def test_huge_bodies_are_cut() -> None:
    shown = show_body(b"x" * (DISPLAY_LIMIT + 10), [])
    assert len(shown.text) == DISPLAY_LIMIT and "showing the first" in shown.notes[0]
