"""Row 8: the speed rows, taken from the resolver and proxy performance scripts.

Other scripts own the speed measurements (`bench/resolver_perf.py`, `bench/proxy_perf.py`,
`bench/redaction_perf.py`);
the benchmark calls each one's `measure(quick=...)` and reports its rows unchanged. When a script
or its function is missing the row says "not measured" rather than leaving a gap that reads as
zero.
"""

from __future__ import annotations

import importlib
import inspect
import logging
from collections.abc import Callable
from typing import Any

from bench.config import BenchConfig

SCRIPTS = {
    "resolver": "bench.resolver_perf",
    "proxy": "bench.proxy_perf",
    "redaction": "bench.redaction_perf",
}
NOT_MEASURED = "not measured"

logger = logging.getLogger(__name__)


def measure_one(module_name: str, quick: bool) -> list[dict[str, Any]] | str:
    """The script's rows, or a sentence saying why there are none."""
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        return f"{NOT_MEASURED} ({module_name} is not importable: {error})"
    function = getattr(module, "measure", None)
    if (
        not callable(function)
        or inspect.iscoroutinefunction(function)
        or "quick" not in inspect.signature(function).parameters
    ):
        return f"{NOT_MEASURED} ({module_name} has no synchronous measure(quick=...) function)"
    try:
        rows = function(quick=quick)
    except Exception as error:  # a failed speed script must not lose the other rows
        logger.exception("speed script %s failed", module_name)
        return f"{NOT_MEASURED} ({module_name} failed: {type(error).__name__}: {error})"
    if isinstance(rows, dict):
        rows = [rows]
    return [dict(row) for row in rows]


def measure(config: BenchConfig, advance: Callable[[int], None]) -> dict[str, Any]:
    """Every script's rows, in quick mode when the run is quick or the protocol says so."""
    results: dict[str, Any] = {}
    for name, module_name in SCRIPTS.items():
        if config.measure_speed:
            results[name] = measure_one(module_name, config.quick or config.quick_speed)
        else:
            results[name] = f"{NOT_MEASURED} (skipped with --no-speed)"
        advance(1)
    return results
