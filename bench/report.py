"""Write a benchmark run's results: benchmark.json and the markdown table.

A number nobody can trace is a claim, not a result. The JSON carries every statistic with the
seeds and configuration that produced it; the markdown table is rendered from that JSON and
nothing else, so the table can never say more than the run measured. Missing measurements
print as "not measured" and claims the data do not back print as "not supported".
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

CONDITIONS = ("naive", "replay", "groundhog")
LABELS = {"naive": "(A) naive", "replay": "(B) replay", "groundhog": "(C) groundhog"}
NOT_MEASURED = "not measured"
NOT_SUPPORTED = "not supported"


def clean(value: Any) -> Any:
    """JSON has no NaN or infinity: write them as null / strings so the file stays valid."""
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return value
    if isinstance(value, Mapping):
        return {str(key): clean(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [clean(item) for item in value]
    if hasattr(value, "item") and callable(value.item):
        return clean(value.item())
    return value


def write_json(results: Mapping[str, Any], path: Path) -> None:
    path.write_text(json.dumps(clean(results), indent=2, sort_keys=False) + "\n")


def number(value: Any, digits: int = 4) -> str:
    if value is None:
        return NOT_MEASURED
    if isinstance(value, str):
        return value
    if isinstance(value, float) and math.isnan(value):
        return NOT_MEASURED
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    return f"{value:.{digits}f}"


def signed(value: Any, digits: int = 3) -> str:
    return NOT_MEASURED if value is None else f"{value:+.{digits}f}"


def percent(value: Any) -> str:
    return NOT_MEASURED if value is None else f"{100.0 * value:.1f}%"


def estimate(value: Mapping[str, Any] | None, digits: int = 3) -> str:
    if not value:
        return NOT_MEASURED
    return f"{value['value']:+.{digits}f} ± {value['stderr']:.{digits}f}"


def _ratio(value: Any) -> str:
    if value is None:
        return NOT_MEASURED
    return "inf" if value == "inf" or value == math.inf else f"{value:.1f}x"


def _pvalue(test: Mapping[str, Any] | None) -> str:
    if not test:
        return "—"
    return f"{test['p']:.2g}"


def _first_significant(value: Mapping[str, Any] | None) -> str:
    if not value:
        return "never"
    verdict = "correct sign" if value["correct"] else "wrong sign!"
    return f"{value['rollouts']} ({verdict})"


def _stable(value: Any, horizon: int) -> str:
    return f"not within {horizon}" if value is None else str(value)


def _grpo(value: Mapping[str, Any] | None) -> str:
    if not value:
        return NOT_MEASURED
    if value["median_rollouts_attained"] is None:
        return f"never ({value['seeds_attained']}/{value['seeds']} seeds)"
    seeds = f"{value['seeds_attained']}/{value['seeds']} seeds"
    return f"{value['median_rollouts_attained']:.0f} ({seeds})"


def _converged(value: Mapping[str, Any] | None, names: list[str]) -> str:
    if not value:
        return NOT_MEASURED
    finals = [names[index] for index in value["final_actions"]]
    return ", ".join(f"{name} x{finals.count(name)}" for name in dict.fromkeys(finals))


def _equivalence(value: Mapping[str, Any] | None) -> str:
    if not value:
        return NOT_MEASURED
    if value.get("is_live_world"):
        return "is the live world"
    return f"{value['identical']}/{value['total']} (max |diff| {value['max_abs_diff']:.3g})"


Row = tuple[str, Callable[[Mapping[str, Any]], str]]


def _condition_rows(results: Mapping[str, Any]) -> list[Row]:
    horizon = results["meta"]["config"]["rollouts_horizon"]
    names = results["meta"]["config"]["actions"]
    truth = results.get("reference", {}).get("contrast")
    truth_label = f"truth {estimate(truth)}" if truth else "no reference"
    return [
        ("(1) advantage contrast variance", lambda c: number(c.get("contrast_variance"))),
        ("variance reduction vs (A)", lambda c: _ratio(c.get("reduction_vs_naive"))),
        ("group advantage variance", lambda c: number(c.get("group_advantage_variance"))),
        ("Levene vs (A): p", lambda c: _pvalue(c.get("levene_vs_naive"))),
        ("Levene vs coupled live world: p", lambda c: _pvalue(c.get("levene_vs_estimand"))),
        (
            "(2) rollouts to a stable correct answer",
            lambda c: _stable(c.get("stable_rollouts"), horizon),
        ),
        (
            "first significant answer (early-stop trap)",
            lambda c: _first_significant(c.get("first_significant")),
        ),
        ("GRPO rollouts to sustained 90% on best", lambda c: _grpo(c.get("grpo"))),
        ("GRPO policy converged to", lambda c: _converged(c.get("grpo"), names)),
        (
            f"(3) estimated contrast ({truth_label})",
            lambda c: estimate(c.get("estimated_contrast")),
        ),
        ("bias vs live world", lambda c: estimate(c.get("bias"))),
        ("verdict", lambda c: c.get("verdict") or NOT_MEASURED),
        ("reward identical to live world", lambda c: _equivalence(c.get("exact_equivalence"))),
        ("world lied (stale reads served)", lambda c: percent(c.get("lie_rate"))),
        ("agent blind to its own write", lambda c: percent(c.get("blind_to_own_write"))),
        ("(4) reads shared across group", lambda c: percent(c.get("reads_shared"))),
        (
            "(5) live calls / group (at the world)",
            lambda c: number(c.get("live_calls_per_group"), 1),
        ),
        ("of which first-time recording", lambda c: number(c.get("recording_calls_per_group"), 1)),
        ("wall seconds", lambda c: number(c.get("wall_seconds"), 1)),
    ]


def condition_table(results: Mapping[str, Any]) -> str:
    conditions = results["conditions"]
    present = [name for name in CONDITIONS if name in conditions]
    lines = [
        "| metric | " + " | ".join(LABELS[name] for name in present) + " |",
        "|---|" + "---|" * len(present),
    ]
    for label, render in _condition_rows(results):
        cells = [render(conditions[name]) for name in present]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _claims_section(results: Mapping[str, Any]) -> list[str]:
    lines = ["## Claims checked by this run", ""]
    for claim in results.get("claims", []):
        status = "supported" if claim["supported"] else NOT_SUPPORTED
        lines.append(f"- {claim['claim']}: **{status}** ({claim['evidence']})")
    return [*lines, ""]


def _curve_section(results: Mapping[str, Any]) -> list[str]:
    curve = results.get("group_size_curve")
    if not curve:
        return ["## Live calls against group size", "", NOT_MEASURED, ""]
    present = [name for name in CONDITIONS if name in curve["live_calls_per_group"]]
    lines = [
        "## Live calls per group against group size (counted at the world)",
        "",
        "| group size | " + " | ".join(LABELS[name] for name in present) + " |",
        "|---|" + "---|" * len(present),
    ]
    for index, size in enumerate(curve["sizes"]):
        cells = [number(curve["live_calls_per_group"][name][index], 1) for name in present]
        lines.append(f"| {size} | " + " | ".join(cells) + " |")
    return [*lines, ""]


def _dependency_section(results: Mapping[str, Any]) -> list[str]:
    models = results.get("dependency_models")
    if not models:
        return ["## Dependency models", "", NOT_MEASURED, ""]
    lines = [
        "## Dependency models against the world's oracle (reads after a write)",
        "",
        "| model | precision | recall | reads scored | live calls / group |",
        "|---|---|---|---|---|",
    ]
    for name, row in models.items():
        precision = row.get("precision")
        if precision is None and row.get("reads_scored"):
            precision = "undefined (flagged none)"
        lines.append(
            f"| {name} | {number(precision, 2)} | {number(row.get('recall'), 2)} "
            f"| {row.get('reads_scored', 0)} | {number(row.get('live_calls_per_group'), 1)} |"
        )
    return [*lines, ""]


def _speed_rows(name: str, rows: list[Mapping[str, Any]]) -> list[str]:
    columns = list(dict.fromkeys(key for row in rows for key in row))
    if all("name" in row and "summary" in row for row in rows):
        # The script summarised each row itself; its other fields stay in benchmark.json.
        columns = ["name", "summary"]
    lines = [
        f"### (8) {name}",
        "",
        "| " + " | ".join(columns) + " |",
        "|" + "---|" * len(columns),
    ]
    for row in rows:
        cells = [
            number(row.get(column), 3)
            if isinstance(row.get(column), float)
            else str(row.get(column, ""))
            for column in columns
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return [*lines, ""]


def _faults_lines(row: Mapping[str, Any] | None) -> list[str]:
    """The bench/faults.py row: does a fault shared by the group cancel in the advantage?"""
    if not row:
        return [f"- (9) faults shared vs independent: {NOT_MEASURED}"]
    shared, independent = row["shared"], row["independent"]
    return [
        f"- (9) recovering from injected 503s (rate {row['fault_rate']}, {row['groups']} groups"
        f" of {row['group_size']}): same-policy reward variance shared "
        f"{shared['same_policy_reward_variance']:.4f} vs independent "
        f"{independent['same_policy_reward_variance']:.4f}; patient-minus-impatient contrast "
        f"variance shared {shared['contrast_variance']:.4f} vs independent "
        f"{independent['contrast_variance']:.4f}"
    ]


def _other_section(results: Mapping[str, Any]) -> list[str]:
    lines = ["## Reproducibility and speed", ""]
    repro = results.get("reproducibility")
    if repro and repro.get("total"):
        lines.append(
            f"- (7) same world recorded twice, identical digests: "
            f"{repro['identical']}/{repro['total']}"
        )
    else:
        lines.append(f"- (7) reproducibility: {NOT_MEASURED}")
    lines += _faults_lines(results.get("faults"))
    tables: list[str] = []
    for name, rows in (results.get("speed") or {}).items():
        if isinstance(rows, str):
            lines.append(f"- (8) {name}: {rows}")
        else:
            tables += _speed_rows(name, rows)
    return [*lines, "", *tables]


def render_markdown(results: Mapping[str, Any]) -> str:
    meta = results["meta"]
    reference = results.get("reference", {})
    header = [
        "# Groundhog benchmark",
        "",
        f"Mode: {'quick' if meta['quick'] else 'full'}; worlds per condition: "
        f"{meta['config']['worlds']}; group size {meta['config']['group_size']}; "
        f"live reference pairs: {meta['config']['reference_pairs']}; "
        f"seeds recorded in benchmark.json. Every number below was computed by this run.",
        "",
    ]
    ceiling = reference.get("ceiling")
    if ceiling is not None:
        header += [f"Endogenous ceiling on the variance reduction: {_ratio(ceiling)}.", ""]
    notes = [f"- {note}" for note in meta.get("notes", [])]
    return "\n".join(
        [
            *header,
            condition_table(results),
            "",
            *_claims_section(results),
            *_curve_section(results),
            *_dependency_section(results),
            *_other_section(results),
            "## Notes",
            "",
            *notes,
            "",
        ]
    )


def write_markdown(results: Mapping[str, Any], path: Path) -> None:
    path.write_text(render_markdown(clean(results)))
