"""Every cell's equivalence and ceiling verdicts, whether or not a claim covers the cell.

The protocol declares claims per cell, so a verdict no claim covers was computed and never
told: (C)'s bias in the cooperative shop failed its equivalence test in every run of versions
4 to 8 with no claim on it, and the README said "every claim supported but S1" (issue 58,
point 2). Here each gate a run applied somewhere — (C)'s equivalence, (C)'s share of the fully
coupled variance (the ceiling test), (A)'s calibration — is applied, as the run applied it
(the gate and its positive control read back from the run's own verdicts), to every cell the
claim did not cover. The verdicts are reported beside the claims (benchmark.md) and where the
headline is (the README block); they are not claims, and they gate nothing.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

from bench import claims
from bench.assemble import gate_metrics

# The metrics every cell is told on: (C)'s equivalence, (C)'s ceiling test, (A)'s calibration.
TOLD = ("groundhog.equivalence", "groundhog.estimand_share", "naive.calibration")
NO_METRIC = {
    "groundhog.estimand_share": "no fully coupled live contrast: the world has no cooperative "
    "cell to couple both actions in",
}


def metric_of(gate: str) -> str:
    """The metric a verdict's gate reads: "groundhog.estimand_share.low > 0.8" reads
    "groundhog.estimand_share"."""
    return gate.split(" ", 1)[0].rsplit(".", 1)[0]


def _gate(text: str) -> dict[str, Any]:
    """A verdict's gate back as the protocol wrote it: "m.low > 0.8" is low > 0.8."""
    target, op, value = text.split(" ", 2)
    return {"bound": target.rsplit(".", 1)[1], "op": op, "value": ast.literal_eval(value)}


def templates(results: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Per told metric, the first claim of the run that gated it, as a protocol claim."""
    found: dict[str, dict[str, Any]] = {}
    for verdict in results.get("claims", []):
        metric = metric_of(verdict["gate"])
        if metric not in TOLD or metric in found:
            continue
        control = verdict.get("control") or {}
        found[metric] = {
            "id": verdict["id"],
            "text": verdict["claim"],
            "metric": metric,
            "gate": _gate(verdict["gate"]),
            **({"control": control["metric"].split(".")[0]} if control.get("metric") else {}),
        }
    return found


def verdicts(results: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each told gate on each cell no claim of the run covers, with its verdict and evidence."""
    covered = {
        (verdict["cell"], metric_of(verdict["gate"])) for verdict in results.get("claims", [])
    }
    told = []
    withheld: dict[str, str] = {}
    gates = templates(results)
    for cell_name, cell in results["cells"].items():
        if not cell.get("published", True):
            withheld[cell_name] = (
                claims.SMOKE if results["meta"].get("quick") else claims.UNPUBLISHED
            )
        metrics = gate_metrics(cell)
        for metric, template in gates.items():
            if (cell_name, metric) in covered:
                continue
            verdict = claims.evaluate({**template, "cell": cell_name}, metrics)
            verdict["as_claim"] = template["id"]
            told.append(verdict)
    return claims.withhold(told, withheld)


def by_cell(results: Mapping[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """Every told metric's verdict per (cell, metric): the claim's where one covers the cell."""
    found = {(v["cell"], metric_of(v["gate"])): v for v in results.get("claims", [])}
    return {**found, **{(v["cell"], metric_of(v["gate"])): v for v in verdicts(results)}}


def failed(results: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The told verdicts that are not supported (not measured included: it is not support)."""
    return [verdict for verdict in verdicts(results) if not verdict["supported"]]


def line(verdict: Mapping[str, Any]) -> str:
    """One verdict as a sentence: which gate, on which cell, and what it read."""
    shown = verdict["verdict"]
    if verdict.get("direction"):
        shown += f" (gate went: {verdict['direction']})"
    evidence = verdict["evidence"]
    if verdict.get("direction", verdict["verdict"]) == claims.NOT_MEASURED:
        evidence = NO_METRIC.get(metric_of(verdict["gate"]), "the cell has no such measurement")
    return (
        f"{verdict['cell']}, {verdict['as_claim']}'s gate `{verdict['gate']}` (no claim covers "
        f"this cell): {shown} — {evidence}"
    )
