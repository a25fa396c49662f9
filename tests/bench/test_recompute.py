"""bench.recompute: the committed numbers follow from the raw files, and a tampered file is caught.

The constructed run (tests/bench/conftest.py) is written the way `python -m bench` writes a run
(bench.run.write_outputs), so these run without servers; tests/bench/test_end_to_end.py holds
the same on a real quick run. The committed docs/benchmark is checked once it has raw files.
"""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from bench import rawfiles, readme, recompute
from bench.run import write_outputs


@pytest.fixture
def written(raw_run, tmp_path) -> Path:
    out = tmp_path / "run"
    out.mkdir()
    write_outputs(raw_run, out)
    return out


def _tamper(path: Path, old: str, new: str) -> None:
    text = gzip.decompress(path.read_bytes()).decode()
    assert old in text
    path.write_bytes(gzip.compress(text.replace(old, new, 1).encode()))


def test_a_written_run_recomputes_to_its_committed_numbers(written, capsys) -> None:
    assert recompute.check(written) == []
    assert recompute.main([str(written)]) == 0
    assert "matches" in capsys.readouterr().out


def test_a_tampered_reward_fails_with_a_diff(written, capsys) -> None:
    rewards = written / rawfiles.RAW_DIR / rawfiles.REWARDS
    text = gzip.decompress(rewards.read_bytes()).decode()
    row = text.splitlines()[1].split(",")
    row[5] = repr(float(row[5]) + 0.5)  # one rollout's reward
    _tamper(rewards, text.splitlines()[1], ",".join(row))
    assert recompute.main([str(written)]) == 1
    out = capsys.readouterr().out
    assert "benchmark.json cells.research/uncooperative" in out
    assert "benchmark.md differs" in out


def test_a_tampered_attention_draw_of_the_reference_moves_the_bias_claims(written) -> None:
    reference = written / rawfiles.RAW_DIR / rawfiles.REFERENCE
    text = gzip.decompress(reference.read_bytes()).decode()
    row = text.splitlines()[1].split(",")
    row[6] = repr(float(row[6]) + 3.0)  # the first pair's attention draw
    _tamper(reference, text.splitlines()[1], ",".join(row))
    problems = recompute.check(written)
    assert any(".reference.contrast.value" in line for line in problems)
    assert any(line.startswith("benchmark.json claims[") for line in problems)


def test_an_edited_committed_number_is_caught(written) -> None:
    path = written / "benchmark.json"
    path.write_text(path.read_text().replace('"run_id": "abc123"', '"run_id": "abc124"'))
    assert recompute.check(written) == [
        "benchmark.json meta.run_id: committed 'abc124' != recomputed 'abc123'"
    ]


def test_a_readme_block_is_checked_when_named(written, tmp_path) -> None:
    results = recompute.recompute(written)
    text = f"intro\n{readme.BEGIN}\nold\n{readme.END}\n"
    stale = tmp_path / "README.md"
    stale.write_text(text)
    assert any("generated block" in line for line in recompute.check(written, stale))
    from bench import headline

    stale.write_text(readme.replace_block(text, headline.block(results).rstrip() + "\n"))
    assert recompute.check(written, stale) == []


def test_a_directory_without_raw_files_cannot_be_recomputed(tmp_path, written, capsys) -> None:
    shutil.copy(written / "benchmark.json", tmp_path / "benchmark.json")
    assert recompute.main([str(tmp_path)]) == 2
    assert "holds no raw files" in capsys.readouterr().err


COMMITTED = readme.RESULTS.parent


@pytest.mark.skipif(
    not (COMMITTED / rawfiles.RAW_DIR / rawfiles.MANIFEST).exists(),
    reason="docs/benchmark holds protocol version 8's run, which predates raw files "
    "(bench/rawfiles.py); the next committed run (version 9) brings docs/benchmark/raw/ and this "
    "test then holds every committed number to it",
)
def test_the_committed_run_recomputes_from_its_raw_files() -> None:
    assert recompute.check(COMMITTED, readme.README) == []
