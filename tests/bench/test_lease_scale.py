"""bench/lease_scale.py: a small run through real sidecars and a real resolver counts what the
hits cost the resolver (every hit a resolve with plain proxies, none with leases), and its rows
and table carry the leased-against-plain ratios."""

from __future__ import annotations

import pytest

from bench import lease_scale

pytestmark = pytest.mark.slow


def test_a_small_run_counts_a_resolve_per_plain_hit_and_none_per_leased_one() -> None:
    rows = lease_scale.measure([2], per_sidecar=12, database_url=None)
    by_mode = {row["mode"]: row for row in rows}
    assert set(by_mode) == {"plain", "leased"}
    assert by_mode["plain"]["hits"] == by_mode["leased"]["hits"] == 24
    assert by_mode["plain"]["resolves_per_hit"] == 1.0
    assert by_mode["leased"]["resolves_per_hit"] == 0.0
    assert "throughput_vs_plain" in by_mode["leased"]
    assert "throughput_vs_plain" not in by_mode["plain"]


def test_ratios_and_table_are_leased_against_plain_at_each_count() -> None:
    rows = [
        {"sidecars": 4, "mode": "plain", "hits": 10, "p50_ms": 2.0, "throughput_rps": 100.0,
         "resolver_cpu_ms_per_1000": 900.0, "resolves_per_hit": 1.0, "store": "s",
         "lease_calls": {}, "store_statements_per_hit": 0.0},
        {"sidecars": 4, "mode": "leased", "hits": 10, "p50_ms": 1.0, "throughput_rps": 250.0,
         "resolver_cpu_ms_per_1000": 90.0, "resolves_per_hit": 0.0, "store": "s",
         "lease_calls": {"take": 1, "events": 2, "renew": 0}, "store_statements_per_hit": 1.4},
    ]  # fmt: skip
    leased = lease_scale.with_ratios(rows)[1]
    assert (leased["throughput_vs_plain"], leased["resolver_cpu_vs_plain"]) == (2.5, 0.1)
    lines = lease_scale.table(lease_scale.with_ratios(rows)).splitlines()
    assert lines[-1] == (
        "| 4 | leased | 10 | 1.00 | 250 | 90 | 0.00 | 1 / 0 / 2 / 0 | 1.400 | 2.50x | 0.10x |"
    )
    assert lines[-2].endswith("| — | — | — | — |")


def test_a_bad_sidecar_list_names_the_fix(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        lease_scale.main(["--sidecars", "one,two"])
    assert "--sidecars takes numbers separated by commas" in capsys.readouterr().err
