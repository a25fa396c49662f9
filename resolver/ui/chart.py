"""An inline SVG chart of the report: one stacked bar of decisions per branch.

The report's numbers say how much was shared; a picture of each branch's mix says at a glance
which branch went live, wrote, or was lied to. Inline SVG needs no script and no download.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from resolver.ui.assets import DECISION_COLOURS, decision_colour
from resolver.ui.markup import Markup, svg, tag

LABEL_WIDTH = 170
BAR_WIDTH = 520
ROW_HEIGHT = 22
BAR_HEIGHT = 15
COUNT_WIDTH = 60


def _ordered(decisions: Mapping[str, int]) -> list[tuple[str, int]]:
    known = [(name, decisions[name]) for name in DECISION_COLOURS if decisions.get(name)]
    extra = [(name, n) for name, n in sorted(decisions.items()) if name not in DECISION_COLOURS]
    return known + [(name, n) for name, n in extra if n]


def decisions_chart(branches: Mapping[str, Mapping[str, Any]]) -> Markup:
    """Stacked horizontal bars, scaled to the busiest branch; each segment has a tooltip."""
    rows = [(path, _ordered(counts.get("decisions", {}))) for path, counts in branches.items()]
    busiest = max((sum(n for _, n in segments) for _, segments in rows), default=0) or 1
    width = LABEL_WIDTH + BAR_WIDTH + COUNT_WIDTH
    height = ROW_HEIGHT * max(len(rows), 1) + 6
    shapes: list[Markup] = []
    for index, (path, segments) in enumerate(rows):
        top = 3 + index * ROW_HEIGHT
        baseline = top + BAR_HEIGHT - 3
        shapes.append(tag("text", path, x=LABEL_WIDTH - 8, y=baseline, text_anchor="end"))
        left = float(LABEL_WIDTH)
        for decision, count in segments:
            span = BAR_WIDTH * count / busiest
            shapes.append(
                tag(
                    "rect",
                    tag("title", f"{path}: {count} {decision}"),
                    x=f"{left:.1f}",
                    y=top,
                    width=f"{max(span, 1.0):.1f}",
                    height=BAR_HEIGHT,
                    fill=decision_colour(decision),
                    data_decision=decision,
                )
            )
            left += span
        total = sum(n for _, n in segments)
        shapes.append(tag("text", total, x=f"{left + 6:.1f}", y=baseline))
    return svg("Decisions per branch", shapes, width=width, height=height, class_="chart")
