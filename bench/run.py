"""One benchmark run from start to finish: collect, analyse, write, with progress bars.

This is the sequence behind `python -m bench`: the live reference first (it fixes the true
sign), then the three conditions, exact equivalence, the group-size curve, the dependency
models, reproducibility and speed; then the analysis and the files. Phases run one after
another so the world's call counter can be read as a per-phase difference.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import secrets
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from bench import claims as protocol_claims
from bench import (
    collect,
    faults,
    figures,
    grpo_fresh,
    noise_curve,
    provenance,
    rawfiles,
    report,
    speed,
)
from bench.assemble import measured_sizes
from bench.config import BenchConfig, for_cell
from bench.config import cells as config_cells
from bench.groups import RunContext, cell_context
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
        console=Console(stderr=True),
    )


def collect_all(
    context: RunContext, config: BenchConfig, progress: Progress | None
) -> dict[str, Any]:
    """Every raw measurement of one cell (a world in one mode), phase by phase."""
    raw: dict[str, Any] = {"timings": {}}
    tag = f" [{context.world_kind}{'' if context.cooperative else ', uncoop'}]"

    def timed(name: str, started: float) -> None:
        raw["timings"][name] = time.perf_counter() - started
        logger.info("phase %s took %.1f s", name, raw["timings"][name])

    started = time.perf_counter()
    with _phase(progress, f"live reference{tag}", 2 * config.reference_pairs) as advance:
        raw["reference"] = collect.collect_reference(context, config, advance)
    timed("reference", started)
    raw["conditions"], raw["groups"] = {}, {}
    for mode in config.conditions:
        started = time.perf_counter()
        with _phase(progress, f"condition {mode}{tag}", config.worlds) as advance:
            data, groups = collect.collect_condition(context, config, mode, advance)
        raw["conditions"][mode], raw["groups"][mode] = data, groups
        timed(mode, started)
    raw["equivalence"] = {}
    # An uncooperative world draws fresh noise per call: no rollout can equal a live one.
    for mode in ("replay", "groundhog") if context.cooperative else ():
        started = time.perf_counter()
        label = f"exact equivalence {mode}"
        with _phase(progress, label, config.equivalence_worlds) as advance:
            groups = raw["groups"][mode]
            raw["equivalence"][mode] = collect.check_equivalence(context, config, groups, advance)
        timed(f"equivalence_{mode}", started)
    started = time.perf_counter()
    curve_total = len(config.conditions) * len(config.group_sizes) * config.curve_worlds
    with _phase(progress, f"live calls vs group size{tag}", curve_total) as advance:
        raw["curve"] = collect.collect_group_size_curve(context, config, advance)
    timed("curve", started)
    started = time.perf_counter()
    models_total = len(config.dependency_models) * config.dependency_worlds
    with _phase(progress, f"dependency models vs oracle{tag}", models_total) as advance:
        raw["dependency_models"] = collect.collect_dependency_models(context, config, advance)
    timed("dependency_models", started)
    started = time.perf_counter()
    runs = config.reproducibility_runs if context.cooperative else 0
    with _phase(progress, f"reproducibility{tag}", runs) as advance:
        raw["reproducibility"] = (
            collect.collect_reproducibility(context, config, advance) if runs else []
        )
    timed("reproducibility", started)
    if not context.cooperative:
        started = time.perf_counter()
        with _phase(progress, f"GRPO on fresh rollouts{tag}", 1) as advance:
            raw["grpo"] = grpo_fresh.collect(context, config, advance)
        timed("grpo", started)
    return raw


def run_benchmark(
    config: BenchConfig, services: Services, out_dir: Path, *, show_progress: bool = True
) -> dict[str, Any]:
    """Run everything against ``services`` and write the results into ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    run_id = secrets.token_hex(3)
    started = time.perf_counter()
    cpu_at_start = provenance.cpu_seconds()
    admin = Groundhog(services.resolver_url, proxy_url=services.proxy_url)
    raws: dict[str, dict[str, Any]] = {}
    progress = progress_bars(show_progress)
    with admin, progress or contextlib.nullcontext():

        def run_cell(kind: str, mode: str) -> dict[str, Any]:
            world_url = services.world(mode, kind)
            with WorldControl(world_url) as world:
                context = cell_context(
                    admin,
                    world,
                    world_url=world_url,
                    resolver_url=services.resolver_url,
                    proxy_url=services.proxy_url,
                    run_id=f"{run_id}{kind[0]}{mode[0]}",
                    kind=kind,
                    cooperative=mode == "cooperative",
                )
                cell_started = time.perf_counter()
                sizes = protocol_claims.load().get("sizes", {})
                raw = collect_all(context, for_cell(config, kind, mode, sizes), progress)
                raw["timings"]["total"] = time.perf_counter() - cell_started
                return raw

        def run_noise_curve() -> list[tuple[float, dict[str, Any]]]:
            with _phase(progress, "noise-share curve", len(config.noise_curve)) as advance:
                return noise_curve.collect(
                    config,
                    resolver_url=services.resolver_url,
                    proxy_url=services.proxy_url,
                    run_id=run_id,
                    advance=advance,
                    weights=config.noise_curve,
                )

        # Each cell has its own world process (whose call counter its phases read) and its own
        # tapes, so cells may overlap (BenchConfig.cell_workers: the protocol's [run] or --quick's).
        # The noise-share curve starts its own worlds too, so it takes a slot like a cell
        # (protocol version 7): run after the cells it left a core idle at the run's tail.
        cells = config_cells(config)
        with ThreadPoolExecutor(max_workers=max(1, config.cell_workers)) as pool:
            futures = [pool.submit(run_cell, kind, mode) for kind, mode in cells]
            curve = pool.submit(run_noise_curve) if config.noise_curve else None
            for (kind, mode), future in zip(cells, futures, strict=True):
                raws[f"{kind}/{mode}"] = future.result()
            noise_raw = None if curve is None else curve.result()
        # Row 9: faults shared vs independent, once per run on the research world's /context.
        with _phase(progress, "faults: shared vs independent", 1) as advance:
            fault_raw = faults.collect(
                services.proxy_url,
                services.world_url,
                admin,
                groups=2 if config.quick else 24,
                run_id=run_id,
            )
            advance(1)
        if config.measure_speed:
            with _phase(
                progress, "speed (resolver, proxy, redaction)", len(speed.SCRIPTS)
            ) as advance:
                speed_rows = speed.measure(config, advance)
        else:
            speed_rows = {"skipped": "not measured (run with --speed)"}
    total = time.perf_counter() - started
    run = rawfiles.RawRun(
        config=config,
        protocol_text=protocol_claims.PROTOCOL.read_text(),
        cells=raws,
        recorded={
            "run_id": run_id,
            "services": dataclasses.asdict(services),
            "total_seconds": total,
            "provenance": provenance.record(
                {name: {"sizes": measured_sizes(raw)} for name, raw in raws.items()},
                wall_seconds=total,
                cpu_at_start=cpu_at_start,
            ),
        },
        noise_curve=noise_raw,
        faults=fault_raw,
        speed=speed_rows,
    )
    return write_outputs(run, out_dir)


def write_outputs(run: rawfiles.RawRun, out_dir: Path) -> dict[str, Any]:
    """Derive the results from ``run``'s raw measurements and write every file of the run:
    the figures, ``raw/``, benchmark.json and benchmark.md (what `bench.recompute` checks)."""
    results = rawfiles.derive(run)
    # Figures first: benchmark.md links the ones drawn, and recompute reads their names back.
    run.recorded["figures"] = [path.name for path in figures.draw_all(results, out_dir)]
    results["meta"]["figures"] = run.recorded["figures"]
    rawfiles.write(run, out_dir / rawfiles.RAW_DIR)
    report.write_json(results, out_dir / "benchmark.json")
    report.write_markdown(results, out_dir / "benchmark.md")
    return results
