"""A side-by-side line diff of two recorded answers, as table rows.

Comparing one address across sibling branches is how a person checks that a branch which
changed nothing got the same bytes as its siblings, and sees exactly what a branch's own write
changed; a unified diff of pretty-printed JSON hides which side a line belongs to.
"""

from __future__ import annotations

from dataclasses import dataclass
from difflib import SequenceMatcher


@dataclass(frozen=True)
class DiffRow:
    kind: str  # "same", "changed", "removed" (left only) or "added" (right only)
    left_number: int | None
    left: str
    right_number: int | None
    right: str


def side_by_side(left_text: str, right_text: str) -> list[DiffRow]:
    left = left_text.splitlines()
    right = right_text.splitlines()
    rows: list[DiffRow] = []
    matcher = SequenceMatcher(a=left, b=right, autojunk=False)
    for operation, left_start, left_end, right_start, right_end in matcher.get_opcodes():
        if operation == "equal":
            for offset in range(left_end - left_start):
                i, j = left_start + offset, right_start + offset
                rows.append(DiffRow("same", i + 1, left[i], j + 1, right[j]))
            continue
        span = max(left_end - left_start, right_end - right_start)
        for offset in range(span):
            i, j = left_start + offset, right_start + offset
            has_left, has_right = i < left_end, j < right_end
            kind = "changed" if has_left and has_right else ("removed" if has_left else "added")
            rows.append(
                DiffRow(
                    kind,
                    i + 1 if has_left else None,
                    left[i] if has_left else "",
                    j + 1 if has_right else None,
                    right[j] if has_right else "",
                )
            )
    return rows


def differing(rows: list[DiffRow]) -> int:
    return sum(1 for row in rows if row.kind != "same")
