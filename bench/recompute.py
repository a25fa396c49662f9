"""`python -m bench.recompute DIR`: every committed number, derived again from the raw files.

A reader who did not watch a run can check it only if the numbers follow from data they can
read. This reads ``DIR/raw/`` (bench/rawfiles.py), derives the results with the code the run
used (`rawfiles.derive`: cells, intervals, claims and controls, the GRPO rows, the curves, the
faults row), and compares them with ``DIR/benchmark.json`` field by field; then it renders
benchmark.md from the recomputed results and compares it with ``DIR/benchmark.md`` (the
figures' data are fields of the JSON, so they are compared there), and, for the repository's
docs/benchmark (or with ``--readme``), the README's generated block. Exit 0 when everything
matches; 1 with a diff of every differing field or file otherwise; 2 when there are no raw
files to recompute from.

What is recorded rather than derived is said so: the run id, the services' addresses, the
wall and CPU times, the provenance and the speed rows (their scripts keep only their summary
rows, not every request's latency) are read from ``raw/manifest.json``, not recomputed.
"""

from __future__ import annotations

import argparse
import difflib
import json
import math
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from bench import headline, rawfiles, readme, report

RECORDED = (
    "meta.run_id",
    "meta.services",
    "meta.timings_seconds",
    "meta.provenance",
    "meta.figures",
    "speed",
)
RELATIVE_TOLERANCE = 1e-9  # a different BLAS may round a variance's last bits differently


class NoRawFiles(FileNotFoundError):
    """The directory holds no raw files: its run predates them or they were not committed."""


def _close(first: Any, second: Any) -> bool:
    if isinstance(first, bool) or isinstance(second, bool):
        return first == second
    if isinstance(first, int | float) and isinstance(second, int | float):
        return math.isclose(first, second, rel_tol=RELATIVE_TOLERANCE, abs_tol=1e-12)
    return bool(first == second)


def differences(committed: Any, recomputed: Any, path: str = "") -> Iterator[str]:
    """Every field where the two JSON values differ, as ``path: committed != recomputed``."""
    if isinstance(committed, dict) and isinstance(recomputed, dict):
        for key in dict.fromkeys([*committed, *recomputed]):
            where = f"{path}.{key}" if path else str(key)
            if key not in recomputed:
                yield f"{where}: committed, not recomputed"
            elif key not in committed:
                yield f"{where}: recomputed, not committed"
            else:
                yield from differences(committed[key], recomputed[key], where)
    elif isinstance(committed, list) and isinstance(recomputed, list):
        if len(committed) != len(recomputed):
            yield f"{path}: {len(committed)} items committed, {len(recomputed)} recomputed"
            return
        for index, (first, second) in enumerate(zip(committed, recomputed, strict=True)):
            yield from differences(first, second, f"{path}[{index}]")
    elif not _close(committed, recomputed):
        yield f"{path}: committed {committed!r} != recomputed {recomputed!r}"


def _text_diff(name: str, committed: str, recomputed: str) -> list[str]:
    """One problem (a unified diff) when the committed text is not what the raw files render."""
    if committed == recomputed:
        return []
    lines = difflib.unified_diff(
        committed.splitlines(),
        recomputed.splitlines(),
        f"{name} (committed)",
        f"{name} (recomputed)",
        lineterm="",
    )
    return ["\n".join([f"{name} differs from what the raw files render:", *lines])]


def recompute(directory: Path) -> dict[str, Any]:
    """The results derived from ``directory``'s raw files, as benchmark.json would hold them."""
    raw_dir = directory / rawfiles.RAW_DIR
    if not (raw_dir / rawfiles.MANIFEST).exists():
        raise NoRawFiles(f"{raw_dir} holds no raw files ({rawfiles.MANIFEST} is missing)")
    results = rawfiles.derive(rawfiles.read(raw_dir))
    # What benchmark.json holds: cleaned (no NaN) and through JSON (tuples become lists).
    return json.loads(json.dumps(report.clean(results)))


def check(directory: Path, readme_path: Path | None = None) -> list[str]:
    """Every mismatch between ``directory``'s committed files and its raw files (none: [])."""
    recomputed = recompute(directory)
    committed = json.loads((directory / "benchmark.json").read_text())
    problems = [f"benchmark.json {line}" for line in differences(committed, recomputed)]
    markdown = directory / "benchmark.md"
    if markdown.exists():
        wanted = report.render_markdown(recomputed)
        problems += _text_diff("benchmark.md", markdown.read_text(), wanted)
    else:
        problems.append("benchmark.md is missing")
    if readme_path is not None:
        block = headline.block(recomputed).rstrip() + "\n"
        problems += _text_diff(
            f"{readme_path.name}'s generated block",
            readme.current_block(readme_path.read_text()),
            block,
        )
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.recompute", description=__doc__)
    parser.add_argument("directory", type=Path, help="a run's directory (docs/benchmark)")
    parser.add_argument(
        "--readme",
        type=Path,
        help="also check this README's generated block (default: the repository's README "
        "when DIRECTORY is docs/benchmark)",
    )
    args = parser.parse_args(argv)
    readme_path = args.readme
    if readme_path is None and args.directory.resolve() == readme.RESULTS.parent.resolve():
        readme_path = readme.README
    try:
        problems = check(args.directory, readme_path)
    except NoRawFiles as error:
        sys.stderr.write(f"cannot recompute: {error}\n")
        return 2
    if problems:
        sys.stdout.write("\n".join(problems) + "\n")
        sys.stderr.write(f"{len(problems)} mismatch(es) between the committed files and raw/\n")
        return 1
    sys.stdout.write(
        f"{args.directory}: every number recomputed from raw/ matches; recorded, not "
        f"recomputed: {', '.join(RECORDED)}\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
