"""Tests for `python -m bench.proxy_perf` itself; its parts are tested beside their modules
(test_proxy_stack, test_proxy_load, test_proxy_groups, test_proxy_rows, test_load).
"""

from __future__ import annotations

from typing import Any

import pytest

from bench import proxy_perf
from bench.proxy_rows import NO_ADDON, REPLAY, ratio_row, store_label
from tests.bench.proxy_support import numbers


def test_main_gives_every_run_the_database_url(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls: list[dict[str, Any]] = []
    measured = {NO_ADDON: numbers(2.0, 1000.0), REPLAY: numbers(4.0, 500.0)}

    def fake_measure(**options: Any) -> list[dict[str, Any]]:
        calls.append(options)
        label = store_label(options["database_url"])
        return [{**ratio_row("direct", 1, numbers(1.0, 2000.0), measured), "store": label}]

    monkeypatch.setattr(proxy_perf, "measure", fake_measure)
    url = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
    proxy_perf.main(["--quick", "--repeat", "2", "--database-url", url])
    assert calls == [{"quick": True, "database_url": url}] * 2
    assert capsys.readouterr().out.startswith(
        f"proxy rows; the resolver's store: postgresql ({url})"
    )
