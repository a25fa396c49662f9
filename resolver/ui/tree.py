"""The branch tree drawn as a tree (inline SVG), each node with its shared/refetched counts.

A fork's value shows in its shape: which children shared the parent's world and which went
live because their own writes changed what they read. Nodes sit at their depth (x) and are
spread over the leaves (y); each carries `data-branch`, `data-shared` and `data-refetched` so
a test (or a person with the inspector) can read the numbers, and links to the branch timeline.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from resolver.ui.markup import Markup, svg, tag

COLUMN = 190
ROW = 46
RADIUS = 7
MARGIN = 16


def _layout(
    parents: Mapping[str, str | None],
) -> tuple[dict[str, tuple[int, float]], list[tuple[str, str]]]:
    """(path -> (depth, row)), parent/child edges; a leaf takes the next row, a parent the mean."""
    children: dict[str | None, list[str]] = {}
    for path, parent in sorted(parents.items()):
        children.setdefault(parent if parent in parents else None, []).append(path)
    placed: dict[str, tuple[int, float]] = {}
    edges: list[tuple[str, str]] = []
    next_row = 0

    def place(path: str, depth: int) -> float:
        nonlocal next_row
        below = children.get(path, [])
        if not below:
            row = float(next_row)
            next_row += 1
        else:
            rows = [place(child, depth + 1) for child in below]
            edges.extend((path, child) for child in below)
            row = sum(rows) / len(rows)
        placed[path] = (depth, row)
        return row

    for root in children.get(None, []):
        place(root, 0)
    return placed, edges


def tree_svg(
    parents: Mapping[str, str | None],
    counts: Mapping[str, Mapping[str, Any]],
    href: Any,
) -> Markup:
    """`parents`: path -> parent path; `counts`: the report's per-branch counts; `href(path)`."""
    placed, edges = _layout(parents)
    depth = max((d for d, _ in placed.values()), default=0)
    rows = max((r for _, r in placed.values()), default=0.0)
    width = MARGIN * 2 + COLUMN * (depth + 1)
    height = int(MARGIN * 2 + ROW * (rows + 1))

    def point(path: str) -> tuple[float, float]:
        d, r = placed[path]
        return MARGIN + RADIUS + d * COLUMN, MARGIN + ROW / 2 + r * ROW

    shapes: list[Markup] = []
    for parent, child in edges:
        (x1, y1), (x2, y2) = point(parent), point(child)
        shapes.append(
            tag(
                "path",
                d=f"M{x1:.1f},{y1:.1f} C{(x1 + x2) / 2:.1f},{y1:.1f} "
                f"{(x1 + x2) / 2:.1f},{y2:.1f} {x2:.1f},{y2:.1f}",
                fill="none",
                stroke="#9aa5b1",
                stroke_width="1.5",
            )
        )
    for path in placed:
        x, y = point(path)
        own = counts.get(path, {})
        shared = own.get("reads_shared", 0)
        refetched = own.get("decisions", {}).get("refetched", 0)
        label = path.rsplit("/", 1)[-1]
        shapes.append(
            tag(
                "a",
                tag("title", f"{path}: {shared} shared, {refetched} refetched"),
                tag("circle", cx=f"{x:.1f}", cy=f"{y:.1f}", r=RADIUS, fill="#23313f"),
                tag("text", label, x=f"{x + RADIUS + 5:.1f}", y=f"{y - 3:.1f}", font_weight="600"),
                tag(
                    "text",
                    f"{shared} shared · {refetched} refetched",
                    x=f"{x + RADIUS + 5:.1f}",
                    y=f"{y + 12:.1f}",
                    fill="#555",
                ),
                href=href(path),
                class_="tree-node",
                data_branch=path,
                data_shared=shared,
                data_refetched=refetched,
            )
        )
    return svg("Branch tree", shapes, width=width, height=height, id="branch-tree")


def parents_of(branches: Sequence[Any]) -> dict[str, str | None]:
    return {branch.path: branch.parent_path for branch in branches}
