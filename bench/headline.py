"""The README's one screen of benchmark: the headline, what it depends on, and every failure.

The full tables (every row of every cell, the claims, GRPO, the speed rows) live in
docs/benchmark/benchmark.md. A newcomer reading the README needs less, and a skeptical reader
needs one thing more than the tables gave them: every failure told where the headline is told.
So this block names the headline with its interval and *its own mode's* ceiling, shows the
noise-share curve the effect depends on, lists (C)'s verdicts in every cell whether or not a
claim covers them, and lists every claim and control that is not supported, one line each.
Everything is rendered from benchmark.json (bench/readme.py writes it, a test holds it equal).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench import uncovered
from bench.report import NOT_MEASURED, interval_text

HEADLINE_CLAIM = "U1"
BENCHMARK_MD = "docs/benchmark/benchmark.md"


def _equivalence(value: Mapping[str, Any] | None) -> str:
    if not value:
        return NOT_MEASURED
    low, high = value["interval"]
    verdict = "equivalent" if value["equivalent"] else "**not shown equivalent**"
    return f"{value['bias']:+.3f}, 90% CI [{low:+.3f}, {high:+.3f}]: {verdict}"


def _ceiling_verdict(groundhog: Mapping[str, Any], verdict: Mapping[str, Any] | None) -> str:
    """(C)'s share of the coupled live variance, and the verdict of the run's own ceiling gate
    on this cell (its claim's, or the same gate where no claim covers the cell)."""
    share = groundhog.get("estimand_share")
    if not share or share.get("value") is None:
        return "not measured"
    shown = interval_text(share, 2, "")
    if verdict is None:
        return shown
    if verdict["supported"]:
        return f"{shown}: passes"
    return f"**{shown}: {verdict['verdict']}**"


def _lies(value: Mapping[str, Any] | None) -> str:
    if not value or not value.get("n"):
        return NOT_MEASURED
    return f"{value['k']}/{value['n']} groups"


def _cell_rows(results: Mapping[str, Any]) -> list[str]:
    told = uncovered.by_cell(results)
    ceiling_gate = next(
        (v["gate"] for (_, metric), v in told.items() if metric == "groundhog.estimand_share"),
        "not gated",
    )
    lines = [
        "| cell | (C) variance reduction vs (A) | this mode's own ceiling | (C) bias vs the live "
        f"world (TOST ±0.10) | (C) share of the coupled live variance (ceiling test: "
        f"`{ceiling_gate}`) | (C) stale groups (oracle) |",
        "|---|---|---|---|---|---|",
    ]
    for name, cell in results["cells"].items():
        groundhog = cell["conditions"].get("groundhog")
        if groundhog is None:
            continue
        ceiling = cell.get("reference", {}).get("ceiling_interval")
        share = _ceiling_verdict(groundhog, told.get((name, "groundhog.estimand_share")))
        lines.append(
            f"| {name} | {interval_text(groundhog.get('reduction'))} | {interval_text(ceiling)} | "
            f"{_equivalence(groundhog.get('equivalence'))} | {share} | "
            f"{_lies(groundhog.get('lies'))} |"
        )
    return lines


def _curve_rows(results: Mapping[str, Any]) -> list[str]:
    points = results.get("noise_curve") or []
    if not points:
        return []
    lines = [
        "| (sigma_exo / gap)^2 | predicted | measured [95% CI] |",
        "|---|---|---|",
    ]
    for row in points:
        lines.append(
            f"| {row['exo_over_gap_squared']:.1f} | {row['predicted']:.1f}x | "
            f"{interval_text(row['measured'])} |"
        )
    return lines


def _failures(results: Mapping[str, Any]) -> list[str]:
    failed = [claim for claim in results.get("claims", []) if not claim.get("supported")]
    lines = [
        f"- **{claim['id']}** ({claim['cell']}): {claim['claim']} — {claim['evidence']}"
        for claim in failed
    ]
    # The same gates on the cells no claim covers: told here too, one line each.
    lines += [f"- {uncovered.line(verdict)}" for verdict in uncovered.failed(results)]
    return lines or ["- none: every predeclared claim and control is supported in this run."]


def _headline(results: Mapping[str, Any]) -> str:
    claims = {claim["id"]: claim for claim in results.get("claims", [])}
    claim = claims.get(HEADLINE_CLAIM)
    if claim is None:
        return f"The headline claim {HEADLINE_CLAIM} is not in this run."
    cell = results["cells"][claim["cell"]]
    groundhog = cell["conditions"]["groundhog"]
    ceiling = cell.get("reference", {}).get("ceiling_interval")
    verdict = "supported" if claim.get("supported") else "**NOT supported**"
    return (
        f"**Headline** ({claim['cell']}, protocol version "
        f"{results['meta'].get('protocol_version', '?')}, claim {claim['id']}: {verdict}): "
        f"(C) groundhog cuts the live world's advantage-contrast variance by "
        f"{interval_text(groundhog.get('reduction'))} (95% CI over worlds); its bias against the "
        f"live reference is {_equivalence(groundhog.get('equivalence'))} within ±0.10; "
        f"this mode's own endogenous ceiling is {interval_text(ceiling)}."
    )


def block(results: Mapping[str, Any]) -> str:
    """The README's benchmark block, rendered from a benchmark.json's content."""
    mode = "quick smoke test (its verdicts are not claims)" if results["meta"]["quick"] else "full"
    lines = [
        f"Run: {mode}. {_headline(results)}",
        "",
        "**What the effect depends on.** Common random numbers cancel the noise every sibling "
        "reads at one address, so the reduction grows with the exogenous share of reward "
        "variance (research world, uncooperative; the prediction still divides by the measured "
        "var(C), so it is not yet independent of the measurement):",
        "",
        *_curve_rows(results),
        "",
        "**(C) in every cell**, whether or not a claim covers it:",
        "",
        *_cell_rows(results),
        "",
        "**Claims, controls and uncovered verdicts not supported in this run:**",
        "",
        *_failures(results),
        "",
        f"Every table, claim, control, GRPO row and speed row: [{BENCHMARK_MD}]({BENCHMARK_MD}).",
    ]
    return "\n".join(lines) + "\n"
