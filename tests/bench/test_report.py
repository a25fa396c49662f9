"""benchmark.json, benchmark.md and the figures, written from constructed results."""

from __future__ import annotations

import json
import math

from bench import figures, report
from bench.assemble import assemble
from bench.harness import Services

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _results(small_config, constructed_raw) -> dict:
    return assemble(small_config, constructed_raw, run_id="t", services=Services("w", "r", "p"))


def test_json_is_valid_even_with_nan_and_infinity(tmp_path) -> None:
    path = tmp_path / "benchmark.json"
    report.write_json({"a": math.nan, "b": [math.inf, -math.inf], "c": {"d": 1.5}}, path)
    assert json.loads(path.read_text()) == {"a": None, "b": ["inf", "-inf"], "c": {"d": 1.5}}


def test_markdown_table_renders_every_condition_and_row(
    small_config, constructed_raw, tmp_path
) -> None:
    results = _results(small_config, constructed_raw)
    path = tmp_path / "benchmark.md"
    report.write_markdown(results, path)
    text = path.read_text()
    assert "| metric | (A) naive | (B) replay | (C) groundhog |" in text
    reduction = results["conditions"]["groundhog"]["reduction_vs_naive"]
    assert f"{reduction:.1f}x" in text
    assert "is the live world" in text
    assert "4/4 (max |diff| 0)" in text
    assert "not measured (test)" in text
    assert "| closure | 0.33 | 1.00 | 3 |" in text
    assert "| 4 | 24.0 | 11.0 | 13.0 |" in text
    assert "GRPO" in text


def test_unsupported_claims_are_printed_as_such(small_config, constructed_raw) -> None:
    constructed_raw["reproducibility"] = [("a", "b")]
    text = report.render_markdown(report.clean(_results(small_config, constructed_raw)))
    line = next(line for line in text.splitlines() if "identical digests:" in line and "**" in line)
    assert "**not supported**" in line


def test_missing_measurements_print_not_measured(small_config, constructed_raw) -> None:
    results = report.clean(_results(small_config, constructed_raw))
    results["conditions"]["groundhog"]["lie_rate"] = None
    results["group_size_curve"] = None
    text = report.render_markdown(results)
    lie_row = next(line for line in text.splitlines() if line.startswith("| world lied"))
    assert lie_row.endswith("| not measured |")
    assert "## Live calls against group size\n\nnot measured" in text


def test_figures_are_png_files(small_config, constructed_raw, tmp_path) -> None:
    written = figures.draw_all(_results(small_config, constructed_raw), tmp_path)
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
