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
RUNS = Path(__file__).resolve().parent / "runs.toml"  # the committed runs and their failures
SUPPORTED = "supported"
NOT_SUPPORTED = "NOT supported"
NOT_MEASURED = "not measured"
NOT_A_GATE = "not a gate ((B) passes it)"
SMOKE = "smoke test: not a claim"
UNPUBLISHED = "not published: sizes differ from the protocol"
OPERATORS = {">": operator.gt, "<": operator.lt, ">=": operator.ge, "<=": operator.le}


def load(path: Path = PROTOCOL) -> dict[str, Any]:
    with path.open("rb") as handle:
        return tomllib.load(handle)


def changelog(path: Path = PROTOCOL) -> dict[int, str]:
    """The protocol's changelog, by version: the comment block after `# Changelog`, an entry
    starting at each `# N:` line (the text joined, the comment marks dropped)."""
    entries: dict[int, list[str]] = {}
    current: int | None = None
    inside = False
    for line in path.read_text().splitlines():
        if line.strip() == "# Changelog":
            inside = True
            continue
        if not inside:
            continue
        if not line.startswith("#"):
            break
        head, _, rest = line[1:].strip().partition(":")
        if head.isdigit() and rest.startswith(" "):
            current = int(head)
            entries[current] = [rest.strip()]
        elif current is not None:
            entries[current].append(line[1:].strip())
    return {version: " ".join(lines) for version, lines in entries.items()}


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


def _verdict(gate: Mapping[str, Any], metric: Any, metrics: Mapping[str, Any]) -> str:
    observed = _bound(metric, gate["bound"])
    if "ref" in gate:
        target = _bound(metrics.get(gate["ref"]), gate.get("ref_bound", "value"))
    else:
        target = gate["value"]
    if observed is None or target is None:
        return NOT_MEASURED
    if gate["op"] == "==":
        return SUPPORTED if observed == target else NOT_SUPPORTED
    return SUPPORTED if OPERATORS[gate["op"]](observed, target) else NOT_SUPPORTED


def control_metric(claim: Mapping[str, Any]) -> str | None:
    """The metric of the claim's positive control: the same metric of condition ``control``.

    A claim on ``groundhog.lies`` with ``control = "replay"`` is also applied to
    ``replay.lies``; (B) lies by construction, so a gate it passes cannot tell a lie.
    """
    control = claim.get("control")
    if not control:
        return None
    _, _, rest = claim["metric"].partition(".")
    return f"{control}.{rest}"


def evaluate(claim: Mapping[str, Any], metrics: Mapping[str, Any]) -> dict[str, Any]:
    """One claim's verdict against ``metrics`` (the cell's gate metrics, by name)."""
    gate = claim["gate"]
    metric = metrics.get(claim["metric"])
    verdict = _verdict(gate, metric, metrics)
    control = control_metric(claim)
    control_verdict = None if control is None else _verdict(gate, metrics.get(control), metrics)
    if control_verdict == SUPPORTED:
        verdict = NOT_A_GATE  # the positive control passed: the gate cannot fail the product
    elif control_verdict == NOT_MEASURED and verdict == SUPPORTED:
        verdict = NOT_MEASURED  # a gate whose control was not run is not known to be a gate
    reference = gate.get("ref", "")
    return {
        "id": claim["id"],
        "cell": claim["cell"],
        "claim": claim["text"],
        "gate": f"{claim['metric']}.{gate['bound']} {gate['op']} "
        + (f"{reference}.{gate.get('ref_bound', 'value')}" if reference else repr(gate["value"])),
        "verdict": verdict,
        "supported": verdict == SUPPORTED,
        "control": None
        if control is None
        else {
            "metric": control,
            "verdict": control_verdict,
            "rejected": control_verdict == NOT_SUPPORTED,
        },
        "evidence": _describe(metric)
        + (f"; {reference} {_describe(metrics.get(reference))}" if reference else "")
        + (f"; control {control}: {control_verdict}" if control else ""),
    }


def evaluate_all(
    protocol: Mapping[str, Any], metrics_by_cell: Mapping[str, Mapping[str, Any]]
) -> list[dict[str, Any]]:
    sizes = protocol.get("sizes", {})
    verdicts = []
    for claim in protocol.get("claim", []):
        verdict = evaluate(claim, metrics_by_cell.get(claim["cell"], {}))
        declared = sizes.get(claim["cell"], {})
        verdict["size"] = {k: v for k, v in declared.items() if k != "power"} or None
        verdict["power"] = declared.get("power", {}).get(claim["id"])
        verdicts.append(verdict)
    return verdicts


def size_mismatches(
    protocol: Mapping[str, Any], cell: str, sizes: Mapping[str, int]
) -> dict[str, tuple[int | None, int]]:
    """The declared sizes a cell ran at other values: {name: (declared, ran)}."""
    declared = protocol.get("sizes", {}).get(cell)
    if declared is None:
        return {"cell": (None, 0)}
    return {
        name: (declared[name], sizes[name])
        for name in ("worlds", "reference_pairs", "grpo_seeds", "grpo_steps")
        if name in declared and declared[name] != sizes.get(name, 0)
    }


def withhold(verdicts: list[dict[str, Any]], cells: Mapping[str, str]) -> list[dict[str, Any]]:
    """Replace the verdicts of claims whose cell is not publishable by the reason.

    ``cells`` maps a cell to SMOKE or UNPUBLISHED; the computed verdict is kept beside it, so a
    smoke run still shows which way each gate went.
    """
    withheld = []
    for verdict in verdicts:
        reason = cells.get(verdict["cell"])
        if reason is None:
            withheld.append(verdict)
        else:
            withheld.append(
                {**verdict, "verdict": reason, "supported": False, "direction": verdict["verdict"]}
            )
    return withheld
