"""The proxy measurement's rows: ratios against its baselines, medians over runs, the table.

A speed row means nothing alone: `row` divides each condition by mitmdump with no addon and by
mitmdump's server replay measured in the same run (and a siblings row also by its plain group,
`bench.proxy_groups`), rounding only at the end; `median_rows` takes each number's median over
whole runs, ratios taken within a run first, so one unlucky run's baseline cannot skew a ratio;
`table` renders what a reader checks the goals of issue 18 against.
"""

from __future__ import annotations

import statistics
from typing import Any

from sqlalchemy.engine import make_url

from bench.capability_cost import CAPABILITY_ROW, describe
from bench.proxy_groups import GROUP, GROUP_BASELINES, SIBLINGS

NO_ADDON = "mitmproxy (no addon)"
REPLAY = "mitmproxy server replay"


def store_label(database_url: str | None) -> str:
    """Which store the resolver used, for the table's title and each row (no password)."""
    if not database_url:
        return "sqlite (a fresh file)"
    url = make_url(database_url)
    return f"{url.get_backend_name()} ({url.render_as_string(hide_password=True)})"


def ratio_row(
    condition: str, clients: int, numbers: dict[str, float], measured: dict[str, dict[str, float]]
) -> dict[str, Any]:
    """`numbers` as a row: with its p50 and throughput against each baseline in `measured`."""
    row: dict[str, Any] = {"condition": condition, "clients": clients, **numbers}
    baselines = [("no_addon", measured[NO_ADDON]), ("replay", measured[REPLAY])]
    if condition in GROUP_BASELINES:
        # Issue 18 judges the siblings against one plain forward (the no-addon row); four plain
        # forwards at once, through one proxy or one each, show how much of that gap is
        # mitmproxy's own cost of four flows.
        baselines.append(("plain_group", measured[GROUP_BASELINES[condition]]))
    for name, baseline in baselines:
        row[f"p50_vs_{name}"] = numbers["p50_ms"] / baseline["p50_ms"]
        row[f"throughput_vs_{name}"] = numbers["throughput_rps"] / baseline["throughput_rps"]
    return {
        key: round(value, 3) if isinstance(value, float) else value for key, value in row.items()
    }


def median_rows(runs: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Each number the median over whole runs; ratios are taken within a run first.

    On a shared machine one run's baseline can be slowed by a neighbour; ratios from the same
    run move together, and the median of several runs drops an unlucky one.
    """
    combined = []
    for rows in zip(*runs, strict=True):
        first = rows[0]
        if any(
            (row["condition"], row["clients"]) != (first["condition"], first["clients"])
            for row in rows
        ):
            raise ValueError("runs measured different conditions")
        merged = dict(first)
        for key, value in first.items():
            if isinstance(value, float):
                merged[key] = round(statistics.median(row[key] for row in rows), 3)
        combined.append(merged)
    return combined


def table(rows: list[dict[str, Any]]) -> str:
    """The rows as markdown, titled with the resolver's store, then the siblings' two ratios."""
    stores = ", ".join(dict.fromkeys(str(row.get("store", "not recorded")) for row in rows))
    lines = [
        f"proxy rows; the resolver's store: {stores}",
        "",
        "| condition | clients | p50 ms | p90 ms | req/s | p50 vs no-addon | req/s vs no-addon "
        "| p50 vs replay | req/s vs replay |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    timed = [row for row in rows if "cpu_ms" not in row and row["condition"] != CAPABILITY_ROW]
    for row in timed:
        lines.append(
            f"| {row['condition']} | {row['clients']} | {row['p50_ms']:.2f} | {row['p90_ms']:.2f} "
            f"| {row['throughput_rps']:.0f} | {row['p50_vs_no_addon']:.2f}x "
            f"| {row['throughput_vs_no_addon']:.2f}x | {row['p50_vs_replay']:.2f}x "
            f"| {row['throughput_vs_replay']:.2f}x |"
        )
    cpu = [row for row in rows if "cpu_ms" in row]
    if cpu:
        lines += ["", "| the resolver's CPU | clients | ms per 1000 hits |", "|---|---|---|"]
        lines += [f"| {row['condition']} | {row['clients']} | {row['cpu_ms']:.0f} |" for row in cpu]
    for row in rows:
        if row["condition"] == CAPABILITY_ROW:
            lines += ["", describe(row)]
    for row in timed:
        if row["condition"] in GROUP_BASELINES:
            how = "through one proxy" if row["condition"] == SIBLINGS else "one sidecar each"
            lines += [
                "",
                f"{GROUP} siblings' last answer, {how} (goal: within 1.3x of one plain forward): "
                f"{row['p50_vs_no_addon']:.2f}x one plain forward, "
                f"{row['p50_vs_plain_group']:.2f}x {GROUP} concurrent plain forwards "
                f"{how} (p50, mitmproxy with no addon, same run)",
            ]
    return "\n".join(lines)
