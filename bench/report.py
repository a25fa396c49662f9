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

from bench import uncovered

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


def interval_text(value: Mapping[str, Any] | None, digits: int = 1, suffix: str = "x") -> str:
    if not value or value.get("value") is None:
        return NOT_MEASURED
    point = value["value"]
    text = "inf" if point in ("inf", math.inf) else f"{point:.{digits}f}{suffix}"
    if value.get("low") is not None and value.get("high") is not None:
        text += f" [{value['low']:.{digits}f}, {value['high']:.{digits}f}]"
    return text


def _pvalue(test: Mapping[str, Any] | None) -> str:
    if not test:
        return "—"
    return f"{test['p']:.2g}"


def _rate(value: Mapping[str, Any] | None) -> str:
    if not value or not value.get("n"):
        return NOT_MEASURED
    unit = f" {value['unit']}" if value.get("unit") else ""
    return (
        f"{100 * value['value']:.1f}% ({value['k']}/{value['n']}{unit}; "
        f"95% CI {100 * value['low']:.1f}-{100 * value['high']:.1f}%)"
    )


def _sequential(value: Mapping[str, Any] | None) -> str:
    if not value:
        return NOT_MEASURED
    median = value["stable_median"]
    low, high = value["stable_iqr"]

    def show(number_: float) -> str:
        return f">{value['horizon']}" if number_ in (math.inf, "inf", None) else f"{number_:.0f}"

    return (
        f"{show(median)} (IQR {show(low)}-{show(high)}; stable in "
        f"{100 * value['stable_reached']:.0f}% of {value['reshuffles']} orders)"
    )


def _first(value: Mapping[str, Any] | None) -> str:
    if not value:
        return NOT_MEASURED
    median = value["first_significant_median"]
    shown = "never" if median is None else f"{median:.0f}"
    return f"{shown} (wrong sign in {100 * value['first_significant_wrong_sign']:.0f}% of orders)"


def _equivalent(value: Mapping[str, Any] | None) -> str:
    if not value:
        return NOT_MEASURED
    low, high = value["interval"]
    verdict = "equivalent" if value["equivalent"] else "not shown equivalent"
    return f"{verdict}: 90% CI [{low:+.3f}, {high:+.3f}] vs ±{value['margin']}"


def _exact(row: Mapping[str, Any], cooperative: bool, name: str) -> str:
    if name == "naive":
        return "not checked ((A) is the live world's own noise)"
    if not cooperative:
        return "n/a (the world draws fresh noise per call)"
    value = row.get("exact_equivalence")
    if not value:
        return NOT_MEASURED
    return f"{value['identical']}/{value['total']} (max |diff| {value['max_abs_diff']:.3g})"


Row = tuple[str, Callable[[Mapping[str, Any], bool, str], str]]

ROWS: list[Row] = [
    ("(1) advantage-contrast variance", lambda c, _, __: number(c.get("contrast_variance"))),
    (
        "variance reduction vs (A) [95% bootstrap CI]",
        lambda c, _, __: interval_text(c.get("reduction")),
    ),
    ("group advantage variance", lambda c, _, __: number(c.get("group_advantage_variance"))),
    ("Levene vs (A): p", lambda c, _, __: _pvalue(c.get("levene_vs_naive"))),
    (
        "(2) rollouts to a stable correct answer, median over reshuffles",
        lambda c, _, __: _sequential(c.get("sequential")),
    ),
    ("first significant answer, median", lambda c, _, __: _first(c.get("sequential"))),
    ("(3) estimated contrast (± 1 s.e.)", lambda c, _, __: estimate(c.get("estimated_contrast"))),
    ("bias vs live world (± 1 s.e.)", lambda c, _, __: estimate(c.get("bias"))),
    (
        "share of the fully coupled live variance (the ceiling test's metric) [95% bootstrap CI]",
        lambda c, _, __: interval_text(c.get("estimand_share"), 3, ""),
    ),
    ("bias equivalence test (TOST)", lambda c, _, __: _equivalent(c.get("equivalence"))),
    ("reward identical to a live rollout", lambda c, coop, name: _exact(c, coop, name)),
    ("world lied: stale reads served (oracle)", lambda c, _, __: _rate(c.get("lies"))),
    ("agent blind to its own write (oracle)", lambda c, _, __: _rate(c.get("blind"))),
    (
        "resolver's own `stale` decisions (count)",
        lambda c, _, __: str(c.get("resolver_stale_decisions", NOT_MEASURED)),
    ),
    (
        "(4) reads shared across the group (resolver report; set by the script and model)",
        lambda c, _, __: percent(c.get("reads_shared")),
    ),
    (
        "(5) live calls / group at the world (set by the script and model)",
        lambda c, _, __: number(c.get("live_calls_per_group"), 1),
    ),
]


def _columns(results: Mapping[str, Any], world: str) -> list[tuple[str, str]]:
    columns = []
    for cell_name, cell in results["cells"].items():
        if not cell_name.startswith(f"{world}/"):
            continue
        for name in CONDITIONS:
            if name in cell["conditions"]:
                columns.append((cell_name, name))
    return columns


def _column_label(results: Mapping[str, Any], cell_name: str, name: str) -> str:
    mode = cell_name.split("/")[-1]
    model = ""
    if name == "groundhog":
        config = results["meta"]["config"]
        model = (
            f", {config['cooperative_model' if mode == 'cooperative' else 'uncooperative_model']}"
        )
    return f"{LABELS[name]} {mode}{model}"


def worlds(results: Mapping[str, Any]) -> list[str]:
    return list(dict.fromkeys(name.split("/")[0] for name in results["cells"]))


def condition_table(results: Mapping[str, Any], world: str) -> str:
    columns = _columns(results, world)
    lines = [
        "| metric | " + " | ".join(_column_label(results, *column) for column in columns) + " |",
        "|---|" + "---|" * len(columns),
    ]
    for label, render in ROWS:
        cells = [
            render(
                results["cells"][cell]["conditions"][name],
                results["cells"][cell]["cooperative"],
                name,
            )
            for cell, name in columns
        ]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _size(size: Mapping[str, Any] | None) -> str:
    if not size:
        return "—"
    return ", ".join(f"{name} {value}" for name, value in size.items())


def claims_section(results: Mapping[str, Any]) -> list[str]:
    # Version 1 runs carry no declared sizes or power: their table keeps its columns.
    sized = (results["meta"].get("protocol_version") or 1) >= 2
    lines = ["## Predeclared claims (bench/protocol.toml)", ""]
    if results["meta"].get("quick"):
        lines += ["**Smoke test (`--quick`): the verdicts below are directions, not claims.**", ""]
    if sized:
        lines += [
            "| id | cell | claim | gate | size | power | verdict | evidence |",
            "|---|---|---|---|---|---|---|---|",
        ]
    else:
        lines += ["| id | cell | claim | gate | verdict | evidence |", "|---|---|---|---|---|---|"]
    for claim in results.get("claims", []):
        verdict = claim["verdict"]
        shown = f"**{verdict}**" if verdict != "supported" else verdict
        if claim.get("direction"):
            shown += f" (gate went: {claim['direction']})"
        extra = ""
        if sized:
            power = claim.get("power")
            extra = f"| {_size(claim.get('size'))} | {'—' if power is None else f'{power:.2f}'} "
        lines.append(
            f"| {claim['id']} | {claim['cell']} | {claim['claim']} | `{claim['gate']}` "
            f"{extra}| {shown} | {claim['evidence']} |"
        )
    return [*lines, "", *_uncovered_section(results)]


def _uncovered_section(results: Mapping[str, Any]) -> list[str]:
    """The claims' gates on the cells no claim covers: computed, so told (bench/uncovered.py)."""
    told = uncovered.verdicts(results)
    if not told:
        return []
    lines = [
        "## The same gates on every cell no claim covers (told, not claims)",
        "",
        "| cell | gate (as claim) | verdict | evidence |",
        "|---|---|---|---|",
    ]
    for verdict in told:
        shown = verdict["verdict"]
        shown = shown if shown == "supported" else f"**{shown}**"
        if verdict.get("direction"):
            shown += f" (gate went: {verdict['direction']})"
        lines.append(
            f"| {verdict['cell']} | `{verdict['gate']}` ({verdict['as_claim']}) | {shown} | "
            f"{verdict['evidence']} |"
        )
    return [*lines, ""]


def _grpo_section(results: Mapping[str, Any]) -> list[str]:
    lines = []
    for cell_name, cell in results["cells"].items():
        summary = cell.get("grpo")
        if not summary:
            continue
        lines += [
            f"## GRPO on fresh rollouts through the proxy ({cell_name})",
            "",
            f"Best action (from the live reference): `{cell['reference']['best_action']}`.",
            "",
            "| condition | steps | final P(best) per seed | mean [95% CI] | seeds at >= 0.9 "
            "| steps to 0.9 (censored at steps + 1), mean [95% CI] |",
            "|---|---|---|---|---|---|",
        ]
        for name in CONDITIONS:
            row = summary.get(name)
            if not row:
                continue
            finals = ", ".join(f"{value:.2f}" for value in row["final_best_probability"])
            mean = interval_text(row["mean_final_best"], 2, "")
            reached = _rate(row["reached_threshold"])
            steps = interval_text(row.get("mean_steps_to_threshold"), 1, "")
            lines.append(
                f"| {LABELS[name]} | {row['steps']} | {finals} | {mean} | {reached} | {steps} |"
            )
        for key, label in (
            ("groundhog_minus_naive", "(C) - (A) final P(best), paired seeds"),
            ("steps_groundhog_minus_naive", "(C) - (A) steps to 0.9, paired seeds"),
        ):
            paired = summary.get(key)
            if paired:
                lines.append(
                    f"- {label}: {interval_text(paired, 3, '')} over {paired['seeds']} seeds"
                )
        lines.append("")
    return lines


def _curve_section(cell_name: str, cell: Mapping[str, Any]) -> list[str]:
    curve = cell.get("group_size_curve")
    if not curve or not curve.get("sizes"):
        return []
    present = [name for name in CONDITIONS if name in curve["live_calls_per_group"]]
    lines = [
        f"## Live calls per group against group size ({cell_name}, counted at the world)",
        "",
        "| group size | " + " | ".join(LABELS[name] for name in present) + " |",
        "|---|" + "---|" * len(present),
    ]
    worlds = {len(counts) for by_size in curve["per_world"].values() for counts in by_size}
    for index, size in enumerate(curve["sizes"]):
        cells = [
            interval_text(curve["live_calls_per_group"][name][index], 1, "") for name in present
        ]
        lines.append(f"| {size} | " + " | ".join(cells) + " |")
    return [
        *lines,
        "",
        f"Mean over {', '.join(map(str, sorted(worlds)))} worlds per size "
        "and condition, with a 95% t interval over worlds.",
        "",
    ]


def _dependency_section(cell_name: str, cell: Mapping[str, Any]) -> list[str]:
    models = cell.get("dependency_models")
    if not models:
        return []
    lines = [
        f"## Dependency models against the world's oracle ({cell_name}, reads after a write)",
        "",
        "| model | precision | recall | reads scored | stale reads served (oracle) "
        "| live calls / group |",
        "|---|---|---|---|---|---|",
    ]
    for name, row in models.items():
        precision = row.get("precision")
        shown = number(precision, 2) if precision is not None else "undefined (flagged none)"
        lines.append(
            f"| {name} | {shown} | {number(row.get('recall'), 2)} | {row.get('reads_scored', 0)} "
            f"| {_rate(row.get('lies'))} | {number(row.get('live_calls_per_group'), 1)} |"
        )
    return [*lines, ""]


def _speed_rows(name: str, rows: list[Mapping[str, Any]]) -> list[str]:
    columns = list(dict.fromkeys(key for row in rows for key in row))
    if all("name" in row and "summary" in row for row in rows):
        columns = ["name", "summary"]
    lines = [f"### (8) {name}", "", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
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
    for cell_name, cell in results["cells"].items():
        repro = cell.get("reproducibility")
        if repro and repro.get("total"):
            lines.append(
                f"- (7) {cell_name}: same world recorded twice, identical digests: "
                f"{repro['identical']}/{repro['total']}"
            )
    lines += _faults_lines(results.get("faults"))
    tables: list[str] = []
    for name, rows in (results.get("speed") or {}).items():
        if isinstance(rows, str):
            lines.append(f"- (8) {name}: {rows}")
        else:
            tables += _speed_rows(name, rows)
    return [*lines, "", *tables]


def _noise_section(results: Mapping[str, Any]) -> list[str]:
    """The noise-share curve (bench/noise_curve.py): predicted beside measured."""
    points = results.get("noise_curve")
    if not points:
        return []
    lines = [
        "## Variance reduction against the per-call exogenous noise (research, uncooperative)",
        "",
        "| call weight | sigma_exo | (sigma_exo / gap)^2 | predicted 1 + 2 sigma_exo^2 / var(C) "
        "| measured var(A) / var(C) [95% CI] | worlds |",
        "|---|---|---|---|---|---|",
    ]
    for row in points:
        measured = row["measured"]
        interval = (
            f"{measured['value']:.1f}x"
            if measured.get("low") is None
            else f"{measured['value']:.1f}x [{measured['low']:.1f}, {measured['high']:.1f}]"
        )
        lines.append(
            f"| {row['call_weight']:.2f} | {row['sigma_exo']:.2f} | "
            f"{row['exo_over_gap_squared']:.1f} | {row['predicted']:.1f}x | {interval} "
            f"| {row['worlds']} |"
        )
    return [*lines, ""]


def _sizes_line(results: Mapping[str, Any], world: str) -> str:
    """What each cell of ``world`` ran, read from its data: a world's cells may differ."""
    parts = []
    for name, cell in results["cells"].items():
        if cell.get("world") != world or not cell.get("sizes"):
            continue
        sizes, actions = cell["sizes"], cell.get("actions", [])
        text = (
            f"{name.split('/')[-1]}: {sizes['worlds']} worlds per condition, groups of "
            f"{len(actions)} branches ({', '.join(actions)}; (B) and (C) add a probe), "
            f"{sizes['reference_pairs']} live reference pairs"
        )
        if "grpo_seeds" in sizes:
            text += f", GRPO {sizes['grpo_seeds']} seeds x {sizes['grpo_steps']} fresh groups"
        parts.append(text)
    return "Sizes: " + "; ".join(parts) + "." if parts else "Sizes: not recorded."


def summary_block(results: Mapping[str, Any]) -> str:
    """Each world's table and the claims: the head of docs/benchmark/benchmark.md."""
    meta = results["meta"]
    header = (
        f"Mode: {'quick' if meta['quick'] else 'full'}; protocol version "
        f"{meta.get('protocol_version', '?')}; each world's sizes under its heading. "
        "Uncooperative (the headline) beside cooperative (the ceiling)."
    )
    lines = [header, ""]
    for world in worlds(results):
        cooperative = results["cells"].get(f"{world}/cooperative", {})
        # A world with no cooperative cell (the MCP world) names its contrast in its other cell.
        uncooperative = results["cells"].get(f"{world}/uncooperative", {})
        contrast = cooperative.get("contrast") or uncooperative.get("contrast")
        better, worse = contrast or ["verify", "deep"]
        lines += [f"### World `{world}` (contrast: {better} - {worse})", ""]
        lines += [_sizes_line(results, world), ""]
        # Each mode's reduction is bounded by its own (A)'s ceiling, never another mode's.
        ceilings = [
            f"{name.split('/')[-1]} {interval_text(cell['reference']['ceiling_interval'])}"
            for name, cell in results["cells"].items()
            if cell.get("world") == world and cell.get("reference", {}).get("ceiling_interval")
        ]
        if ceilings:
            lines += [f"Endogenous ceiling on the variance reduction: {'; '.join(ceilings)}.", ""]
        lines += [condition_table(results, world), ""]
    return "\n".join([*lines, *claims_section(results)])


def render_markdown(results: Mapping[str, Any]) -> str:
    meta = results["meta"]
    sections: list[str] = []
    for cell_name, cell in results["cells"].items():
        sections += _dependency_section(cell_name, cell) + _curve_section(cell_name, cell)
    notes = [f"- {note}" for note in meta.get("notes", [])]
    # The figures are written beside benchmark.md, so their links are relative to it.
    figures = [f"![{Path(name).stem}]({name})" for name in meta.get("figures", [])]
    return "\n".join(
        [
            "# Groundhog benchmark",
            "",
            summary_block(results),
            *([*figures, ""] if figures else []),
            *_grpo_section(results),
            *_noise_section(results),
            *sections,
            *_other_section(results),
            "## Notes",
            "",
            *notes,
            "",
        ]
    )


def write_markdown(results: Mapping[str, Any], path: Path) -> None:
    path.write_text(render_markdown(clean(results)))
