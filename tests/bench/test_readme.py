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
