"""The README's benchmark block is generated from the committed benchmark.json."""

from __future__ import annotations

import pytest

from bench import readme


def test_the_readme_block_equals_the_committed_run() -> None:
    text = readme.README.read_text()
    assert readme.current_block(text) == readme.block(), "run: python -m bench.readme"


def test_replace_block_rewrites_only_between_the_markers() -> None:
    text = f"intro\n{readme.BEGIN}\nold\n{readme.END}\noutro\n"
    assert (
        readme.replace_block(text, "new\n") == f"intro\n{readme.BEGIN}\nnew\n{readme.END}\noutro\n"
    )


def test_missing_markers_are_named() -> None:
    with pytest.raises(readme.MarkerError, match="bench:begin"):
        readme.replace_block("no markers", "x")


def test_the_full_tables_equal_what_the_committed_run_renders() -> None:
    import json

    from bench import report

    results_path = readme.RESULTS
    rendered = report.render_markdown(report.clean(json.loads(results_path.read_text())))
    committed = (results_path.parent / "benchmark.md").read_text()
    assert committed == rendered, "run: python -m bench.readme (it also rewrites benchmark.md)"


def test_the_command_rewrites_both_and_check_names_the_stale_one(tmp_path, capsys) -> None:
    results = tmp_path / "benchmark.json"
    results.write_text(readme.RESULTS.read_text())
    (tmp_path / "benchmark.md").write_text("stale\n")
    page = tmp_path / "README.md"
    page.write_text(f"intro\n{readme.BEGIN}\nold\n{readme.END}\n")
    arguments = ["--results", str(results), "--readme", str(page)]
    assert readme.main([*arguments, "--check"]) == 1
    assert "benchmark.md is out of date" in capsys.readouterr().err
    assert readme.main(arguments) == 0
    assert readme.main([*arguments, "--check"]) == 0
    assert readme.current_block(page.read_text()) == readme.block(results)
