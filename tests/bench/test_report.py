"""benchmark.json, benchmark.md and the figures, written from constructed results."""

from __future__ import annotations

import json
import math

from bench import figures, report
from bench.assemble import assemble
from bench.harness import Services

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _results(small_config, constructed_raws, published) -> dict:
    services = Services("w", "r", "p", "u")
    return assemble(
        small_config, constructed_raws, run_id="t", services=services, protocol=published
    )


def test_json_is_valid_even_with_nan_and_infinity(tmp_path) -> None:
    path = tmp_path / "benchmark.json"
    report.write_json({"a": math.nan, "b": [math.inf, -math.inf], "c": {"d": 1.5}}, path)
    assert json.loads(path.read_text()) == {"a": None, "b": ["inf", "-inf"], "c": {"d": 1.5}}


def test_markdown_table_renders_both_modes_and_every_row(
    small_config, constructed_raws, published, tmp_path
) -> None:
    results = _results(small_config, constructed_raws, published)
    path = tmp_path / "benchmark.md"
    report.write_markdown(results, path)
    text = path.read_text()
    assert "| (C) groundhog uncooperative, rules |" in text
    assert "| (C) groundhog cooperative, hints |" in text
    reduction = results["cells"]["research/cooperative"]["conditions"]["groundhog"]["reduction"]
    assert f"{reduction['value']:.1f}x [{reduction['low']:.1f}, {reduction['high']:.1f}]" in text
    assert "n/a (the world draws fresh noise per call)" in text
    assert "4/4 (max |diff| 0)" in text
    assert "| path | undefined (flagged none) | 0.00 | 3 |" in text
    assert "| 4 | 23.0 [10.3, 35.7] | 11.0 [11.0, 11.0] | 13.0 [13.0, 13.0] |" in text
    assert "GRPO on fresh rollouts" in text
    for claim in results["claims"]:
        assert f"| {claim['id']} |" in text


def test_unsupported_claims_are_printed_as_such(small_config, constructed_raws, published) -> None:
    constructed_raws["research/cooperative"]["reproducibility"] = [("a", "b")]
    text = report.render_markdown(report.clean(_results(small_config, constructed_raws, published)))
    line = next(line for line in text.splitlines() if line.startswith("| C5 |"))
    assert "**NOT supported**" in line


def test_missing_measurements_print_not_measured(small_config, constructed_raws, published) -> None:
    results = report.clean(_results(small_config, constructed_raws, published))
    for cell in results["cells"].values():
        cell["conditions"]["groundhog"]["lies"] = None
    text = report.render_markdown(results)
    lie_row = next(line for line in text.splitlines() if line.startswith("| world lied"))
    assert lie_row.endswith("| not measured |")


def test_a_claim_without_its_metric_is_not_measured(
    small_config, constructed_raws, published
) -> None:
    del constructed_raws["research/uncooperative"]["dependency_models"]
    claims = _results(small_config, constructed_raws, published)["claims"]
    assert next(c for c in claims if c["id"] == "U5")["verdict"] == "not measured"


def test_figures_are_png_files(small_config, constructed_raws, published, tmp_path) -> None:
    written = figures.draw_all(_results(small_config, constructed_raws, published), tmp_path)
    names = {path.name for path in written}
    assert names == {
        "variance.png",
        "significance.png",
        "grpo.png",
        "live_calls.png",
        "dependency_models.png",
    }
    for path in written:
        assert path.read_bytes()[:8] == PNG_MAGIC


def test_every_claim_prints_its_size_and_power(small_config, constructed_raws, published) -> None:
    published["sizes"]["research/cooperative"]["power"] = {"C2": 0.91}
    results = report.clean(_results(small_config, constructed_raws, published))
    text = report.render_markdown(results)
    line = next(line for line in text.splitlines() if line.startswith("| C2 |"))
    assert "| worlds 80, reference_pairs 300 | 0.91 |" in line
    quick = report.render_markdown({**results, "meta": {**results["meta"], "quick": True}})
    assert "Smoke test (`--quick`)" in quick


def test_the_group_size_curve_prints_a_mean_and_interval_over_worlds(
    small_config, constructed_raws, published
) -> None:
    results = _results(small_config, constructed_raws, published)
    curve = results["cells"]["research/cooperative"]["group_size_curve"]
    # naive at size 4 ran two worlds: 24 and 22 live calls.
    four = curve["live_calls_per_group"]["naive"][2]
    assert four["value"] == 23.0 and four["low"] < 22.0 and four["high"] > 24.0
    text = report.render_markdown(results)
    assert f"| 4 | 23.0 [{four['low']:.1f}, {four['high']:.1f}] |" in text
    assert "Mean over 2 worlds per size and condition, with a 95% t interval" in text


def test_the_full_tables_carry_the_grpo_rows_the_noise_curve_and_each_modes_ceiling(
    small_config, constructed_raws, published
) -> None:
    from bench import noise_curve

    results = _results(small_config, constructed_raws, published)
    results["noise_curve"] = [noise_curve.point(0.6, [1.0, -1.0, 2.0, -2.0], [0.1, -0.1, 0.2, 0.0])]
    results["meta"]["figures"] = ["variance.png"]
    text = report.render_markdown(report.clean(results))
    assert "## Predeclared claims (bench/protocol.toml)" in text
    assert "## GRPO on fresh rollouts through the proxy (research/uncooperative)" in text
    assert "## Variance reduction against the per-call exogenous noise" in text
    assert "| 0.60 | 0.87 |" in text
    assert "![variance](variance.png)" in text
    ceiling_line = next(line for line in text.splitlines() if "Endogenous ceiling" in line)
    for mode in ("uncooperative", "cooperative"):
        ceiling = results["cells"][f"research/{mode}"]["reference"]["ceiling_interval"]
        assert f"{mode} {ceiling['value']:.1f}x" in ceiling_line
