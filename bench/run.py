"""One benchmark run from start to finish: collect, analyse, write, with progress bars.

This is the sequence behind `python -m bench`: the live reference first (it fixes the true
sign), then the three conditions, exact equivalence, the group-size curve, the dependency
models, reproducibility and speed; then the analysis and the files. Phases run one after
another so the world's call counter can be read as a per-phase difference.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from bench import collect, figures, report, speed
from bench.assemble import assemble
from bench.config import BenchConfig
from bench.groups import RunContext
from bench.harness import Services
from bench.world_client import WorldControl
from groundhog.client import Groundhog

logger = logging.getLogger(__name__)


@contextmanager
def _phase(progress: Progress | None, label: str, total: int) -> Iterator[Callable[[int], None]]:
    if progress is None:
        yield lambda _step: None
        return
    task = progress.add_task(label, total=total)
    yield lambda step: progress.advance(task, step)
    progress.update(task, completed=total)


def progress_bars(enabled: bool) -> Progress | None:
    if not enabled:
        return None
    return Progress(
        TextColumn("{task.description:<34}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )


def collect_all(
    context: RunContext, config: BenchConfig, progress: Progress | None
) -> dict[str, Any]:
    """Every raw measurement of the run, phase by phase."""
    raw: dict[str, Any] = {"timings": {}}

    def timed(name: str, started: float) -> None:
        raw["timings"][name] = time.perf_counter() - started
        logger.info("phase %s took %.1f s", name, raw["timings"][name])

    started = time.perf_counter()
    with _phase(progress, "live reference (no proxy)", 2 * config.reference_pairs) as advance:
        raw["reference"] = collect.collect_reference(context, config, advance)
    timed("reference", started)
    raw["conditions"], raw["groups"] = {}, {}
    for mode in config.conditions:
        started = time.perf_counter()
        with _phase(progress, f"condition {mode}", config.worlds) as advance:
            data, groups = collect.collect_condition(context, config, mode, advance)
        raw["conditions"][mode], raw["groups"][mode] = data, groups
        timed(mode, started)
    raw["equivalence"] = {}
    for mode in ("replay", "groundhog"):
        started = time.perf_counter()
        label = f"exact equivalence {mode}"
        with _phase(progress, label, config.equivalence_worlds) as advance:
            groups = raw["groups"][mode]
            raw["equivalence"][mode] = collect.check_equivalence(context, config, groups, advance)
        timed(f"equivalence_{mode}", started)
    started = time.perf_counter()
    curve_total = len(config.conditions) * len(config.group_sizes) * config.curve_worlds
    with _phase(progress, "live calls vs group size", curve_total) as advance:
        raw["curve"] = collect.collect_group_size_curve(context, config, advance)
    timed("curve", started)
    started = time.perf_counter()
    models_total = len(config.dependency_models) * config.dependency_worlds
    with _phase(progress, "dependency models vs oracle", models_total) as advance:
        raw["dependency_models"] = collect.collect_dependency_models(context, config, advance)
    timed("dependency_models", started)
    started = time.perf_counter()
    with _phase(progress, "reproducibility", config.reproducibility_runs) as advance:
        raw["reproducibility"] = collect.collect_reproducibility(context, config, advance)
    timed("reproducibility", started)
    started = time.perf_counter()
    with _phase(progress, "speed (resolver, proxy, redaction)", len(speed.SCRIPTS)) as advance:
        raw["speed"] = speed.measure(config, advance)
    timed("speed", started)
    return raw


def run_benchmark(
    config: BenchConfig, services: Services, out_dir: Path, *, show_progress: bool = True
) -> dict[str, Any]:
    """Run everything against ``services`` and write the results into ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    run_id = secrets.token_hex(3)
    started = time.perf_counter()
    admin = Groundhog(services.resolver_url, proxy_url=services.proxy_url)
    with admin, WorldControl(services.world_url) as world:
        context = RunContext(
            admin=admin,
            world=world,
            world_url=services.world_url,
            proxy_url=services.proxy_url,
            run_id=run_id,
        )
        progress = progress_bars(show_progress)
        if progress is None:
            raw = collect_all(context, config, None)
        else:
            with progress:
                raw = collect_all(context, config, progress)
    raw["timings"]["total"] = time.perf_counter() - started
    results = assemble(config, raw, run_id=run_id, services=services)
    report.write_json(results, out_dir / "benchmark.json")
    report.write_markdown(results, out_dir / "benchmark.md")
    results["meta"]["figures"] = [path.name for path in figures.draw_all(results, out_dir)]
    report.write_json(results, out_dir / "benchmark.json")
    return results
