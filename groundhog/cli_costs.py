"""The cost table of `groundhog tape report`: live calls made and avoided, priced per host.

Kept apart from cli_tape so the tape commands stay one screen each; the numbers are the
resolver's cost report (resolver/costs.py), printed as they come.
"""

from __future__ import annotations

from typing import Any

from rich.table import Table


def cost_table(costs: dict[str, Any]) -> Table:
    priced = costs.get("priced", False)

    def money(value: float | None) -> str:
        return "-" if value is None else f"{value:.4f}"

    table = Table(
        "", "live calls", "avoided", "cost", "cost avoided",
        title="live calls made and avoided" + ("" if priced else " (no prices on this tape)"),
    )  # fmt: skip
    rows = [("[bold]total[/]", costs["totals"])]
    rows += [(f"group {parent}", group) for parent, group in costs.get("groups", {}).items()]
    rows += list(costs.get("branches", {}).items())
    for label, row in rows:
        table.add_row(
            label, str(row["live_calls"]), str(row["avoided"]),
            money(row["cost"]), money(row["cost_avoided"]),
        )  # fmt: skip
    if costs.get("unpriced_hosts"):
        table.caption = "no price for: " + ", ".join(costs["unpriced_hosts"])
    return table
