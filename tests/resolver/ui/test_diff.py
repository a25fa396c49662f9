"""The side-by-side diff pairs changed lines and marks one-sided ones."""

from __future__ import annotations

from resolver.ui.diff import differing, side_by_side


def test_rows_pair_changes_and_keep_line_numbers() -> None:
    rows = side_by_side("a\nb\nc\n", "a\nB\nc\nd\n")
    assert [(r.kind, r.left_number, r.left, r.right_number, r.right) for r in rows] == [
        ("same", 1, "a", 1, "a"),
        ("changed", 2, "b", 2, "B"),
        ("same", 3, "c", 3, "c"),
        ("added", None, "", 4, "d"),
    ]
    assert differing(rows) == 2


def test_removed_lines_sit_on_the_left() -> None:
    rows = side_by_side("x\ny", "x")
    assert rows[-1].kind == "removed" and rows[-1].left == "y" and rows[-1].right_number is None
    assert differing(side_by_side("same", "same")) == 0
