"""Apply the predeclared protocol (bench/protocol.toml) to a run's gate metrics.

The claims and gates are read from a file written before the run, and each is applied to an
interval the run computed: the verdict is "supported" or "NOT supported", never a softer word,
and a metric the run did not measure is "not measured" (which is not support). Keeping the
gate logic here, pure and small, means no claim can carry an escape hatch.
"""

from __future__ import annotations

import operator
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

PROTOCOL = Path(__file__).resolve().parent / "protocol.toml"
SUPPORTED = "supported"
NOT_SUPPORTED = "NOT supported"
NOT_MEASURED = "not measured"
OPERATORS = {">": operator.gt, "<": operator.lt, ">=": operator.ge, "<=": operator.le}


def load(path: Path = PROTOCOL) -> dict[str, Any]:
    with path.open("rb") as handle:
        return tomllib.load(handle)


def _bound(metric: Any, bound: str) -> Any:
    if isinstance(metric, Mapping):
        return metric.get(bound)
    return metric if bound == "value" else None


def _describe(metric: Any) -> str:
    if not isinstance(metric, Mapping):
        return repr(metric)
    if "interval" in metric:
        low, high = metric["interval"]
        return (
            f"bias {metric['bias']:+.3f}, {100 * metric['level']:.0f}% interval "
            f"[{low:+.3f}, {high:+.3f}] vs margin ±{metric['margin']}"
        )
    value, low, high = metric.get("value"), metric.get("low"), metric.get("high")
    text = "none" if value is None else f"{value:.4g}"
    if low is not None and high is not None:
        text += f" (95% interval [{low:.4g}, {high:.4g}])"
    if "k" in metric:
        text += f"; {metric['k']}/{metric['n']}"
    return text


def evaluate(claim: Mapping[str, Any], metrics: Mapping[str, Any]) -> dict[str, Any]:
    """One claim's verdict against ``metrics`` (the cell's gate metrics, by name)."""
    gate = claim["gate"]
    metric = metrics.get(claim["metric"])
    observed = _bound(metric, gate["bound"])
    if "ref" in gate:
        target = _bound(metrics.get(gate["ref"]), gate.get("ref_bound", "value"))
    else:
        target = gate["value"]
    if observed is None or target is None:
        verdict = NOT_MEASURED
    elif gate["op"] == "==":
        verdict = SUPPORTED if observed == target else NOT_SUPPORTED
    else:
        verdict = SUPPORTED if OPERATORS[gate["op"]](observed, target) else NOT_SUPPORTED
    reference = gate.get("ref", "")
    return {
        "id": claim["id"],
        "cell": claim["cell"],
        "claim": claim["text"],
        "gate": f"{claim['metric']}.{gate['bound']} {gate['op']} "
        + (f"{reference}.{gate.get('ref_bound', 'value')}" if reference else repr(gate["value"])),
        "verdict": verdict,
        "supported": verdict == SUPPORTED,
        "evidence": _describe(metric)
        + (f"; {reference} {_describe(metrics.get(reference))}" if reference else ""),
    }


def evaluate_all(
    protocol: Mapping[str, Any], metrics_by_cell: Mapping[str, Mapping[str, Any]]
) -> list[dict[str, Any]]:
    return [
        evaluate(claim, metrics_by_cell.get(claim["cell"], {}))
        for claim in protocol.get("claim", [])
    ]
