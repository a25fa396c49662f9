"""Tests for the proxy measurement's rows: ratios against the baselines, medians, the table."""

from __future__ import annotations

from typing import Any

import pytest

from bench.proxy_groups import GROUP, PLAIN_GROUP, PLAIN_SIDECARS, SIBLINGS, SIDECARS
from bench.proxy_rows import NO_ADDON, REPLAY, median_rows, ratio_row, store_label, table
from tests.bench.proxy_support import numbers


def test_row_gives_ratios_against_no_addon_and_replay_rounded() -> None:
    measured = {NO_ADDON: numbers(2.0, 900.0), REPLAY: numbers(3.0, 600.0)}
    row = ratio_row("groundhog hit path", 8, numbers(2.2, 810.0), measured)
    assert row["condition"] == "groundhog hit path" and row["clients"] == 8
    assert row["p50_vs_no_addon"] == round(2.2 / 2.0, 3)
    assert row["throughput_vs_no_addon"] == round(810.0 / 900.0, 3)
    assert row["p50_vs_replay"] == round(2.2 / 3.0, 3)
    assert row["throughput_vs_replay"] == round(810.0 / 600.0, 3)
    assert row["requests"] == 100  # integers are left alone


def test_row_without_a_baseline_measured_fails_loudly() -> None:
    with pytest.raises(KeyError):
        ratio_row("x", 1, numbers(1.0, 1.0), {NO_ADDON: numbers(1.0, 1.0)})


def test_siblings_row_is_also_judged_against_four_plain_forwards() -> None:
    measured = {
        NO_ADDON: numbers(2.0, 500.0),
        REPLAY: numbers(4.0, 250.0),
        PLAIN_GROUP: numbers(6.0, 600.0),
    }
    row = ratio_row(SIBLINGS, 1, numbers(15.0, 240.0), measured)
    assert row["p50_vs_no_addon"] == 7.5  # the ratio, unchanged: one plain forward
    assert row["p50_vs_plain_group"] == 2.5
    assert row["throughput_vs_plain_group"] == 0.4
    # The sidecar siblings are judged against four plain forwards through four proxies.
    measured[PLAIN_SIDECARS] = numbers(3.0, 1000.0)
    sidecars = ratio_row(SIDECARS, 1, numbers(4.5, 800.0), measured)
    assert sidecars["p50_vs_no_addon"] == 2.25 and sidecars["p50_vs_plain_group"] == 1.5
    # Only the siblings rows have the second baseline; without it measured, it fails loudly.
    assert "p50_vs_plain_group" not in ratio_row(PLAIN_GROUP, 1, measured[PLAIN_GROUP], measured)
    with pytest.raises(KeyError):
        ratio_row(
            SIBLINGS,
            1,
            numbers(15.0, 240.0),
            {NO_ADDON: measured[NO_ADDON], REPLAY: measured[REPLAY]},
        )


def test_table_formats_one_line_per_row_under_the_store() -> None:
    measured = {NO_ADDON: numbers(2.0, 1000.0), REPLAY: numbers(4.0, 500.0)}
    rows = [{**ratio_row("direct", 1, numbers(1.0, 2000.0), measured), "store": "sqlite (a file)"}]
    lines = table(rows).splitlines()
    assert len(lines) == 5
    assert lines[0] == "proxy rows; the resolver's store: sqlite (a file)"
    assert lines[4] == "| direct | 1 | 1.00 | 2.00 | 2000 | 0.50x | 2.00x | 0.25x | 4.00x |"


def test_table_states_the_siblings_against_both_baselines() -> None:
    measured = {
        NO_ADDON: numbers(2.0, 500.0),
        REPLAY: numbers(4.0, 250.0),
        PLAIN_GROUP: numbers(6.0, 600.0),
    }
    rows = [
        {**ratio_row(name, 1, measured[name], measured), "store": "postgresql (u)"}
        for name in (NO_ADDON, REPLAY, PLAIN_GROUP)
    ]
    rows.append(
        {**ratio_row(SIBLINGS, 1, numbers(15.0, 240.0), measured), "store": "postgresql (u)"}
    )
    measured[PLAIN_SIDECARS] = numbers(4.0, 900.0)
    rows.append(
        {**ratio_row(SIDECARS, 1, numbers(5.0, 700.0), measured), "store": "postgresql (u)"}
    )
    text = table(rows)
    assert text.startswith("proxy rows; the resolver's store: postgresql (u)\n")
    assert text.splitlines()[-3:] == [
        f"{GROUP} siblings' last answer, through one proxy (goal: within 1.3x of one plain "
        f"forward): 7.50x one plain forward, 2.50x {GROUP} concurrent plain forwards through "
        "one proxy (p50, mitmproxy with no addon, same run)",
        "",
        f"{GROUP} siblings' last answer, one sidecar each (goal: within 1.3x of one plain "
        f"forward): 2.50x one plain forward, 1.25x {GROUP} concurrent plain forwards one "
        "sidecar each (p50, mitmproxy with no addon, same run)",
    ]


def test_store_label_names_the_database_without_its_password() -> None:
    assert store_label(None) == "sqlite (a fresh file)"
    label = store_label("postgresql+psycopg://bench:secret@127.0.0.1:5432/test")
    assert label == "postgresql (postgresql+psycopg://bench:***@127.0.0.1:5432/test)"


def test_median_rows_take_each_number_over_runs() -> None:
    def run(p50: float, ratio: float) -> list[dict[str, Any]]:
        return [
            {
                "condition": "x",
                "clients": 1,
                "requests": 10,
                "p50_ms": p50,
                "p50_vs_no_addon": ratio,
            }
        ]

    rows = median_rows([run(1.0, 2.0), run(9.0, 1.0), run(2.0, 1.5)])
    assert rows == [
        {"condition": "x", "clients": 1, "requests": 10, "p50_ms": 2.0, "p50_vs_no_addon": 1.5}
    ]
    with pytest.raises(ValueError, match="different conditions"):
        median_rows([run(1.0, 1.0), [{**run(1.0, 1.0)[0], "condition": "y"}]])


def test_the_resolvers_cpu_rows_follow_the_timed_ones_in_a_table_of_their_own() -> None:
    measured = {NO_ADDON: numbers(2.0, 1000.0), REPLAY: numbers(4.0, 500.0)}
    rows = [
        {**ratio_row("direct", 1, numbers(1.0, 2000.0), measured), "store": "s"},
        {"condition": "resolver CPU per 1000 hits (leased sidecar)", "clients": 8,
         "cpu_ms": 41.6, "store": "s"},
    ]  # fmt: skip
    lines = table(rows).splitlines()
    assert lines[4].startswith("| direct | 1 |")
    assert lines[-3:] == [
        "| the resolver's CPU | clients | ms per 1000 hits |",
        "|---|---|---|",
        "| resolver CPU per 1000 hits (leased sidecar) | 8 | 42 |",
    ]
