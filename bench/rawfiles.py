"""A run's raw measurements as files beside benchmark.json, and the one path from them to it.

An audit could recompute the headline from benchmark.json but not the bias claims or the
controls: the live reference's pairs and the attention draws were never written (issue 58).
So a run writes everything `assemble` reads into ``raw/`` beside benchmark.json, compactly, and
`derive` is the only way results are made from it — by the run itself and by
`python -m bench.recompute`, so the two cannot drift apart:

- ``rewards.csv.gz``: every rollout of every condition (and of the noise-share curve's points):
  cell, condition, world seed, branch, action, reward, attention draw, saw its own write;
- ``reference.csv.gz``: the live reference's rollouts by role (the better action, the worse
  one in another world, the worse one in the same world) and the ranking worlds' rewards;
- ``cells.json.gz``: per cell what is not a rollout: the attention coefficient, the resolver's
  and oracle's counts, exact-equivalence checks, the group-size curve, the dependency models'
  verdicts, the reproducibility digests, the GRPO runs' probabilities, the phase timings; and
  the faults row's groups;
- ``manifest.json``: what is recorded, not derived (run id, services, configuration, wall
  time, provenance, figure names, the speed rows as their scripts summarized them);
- ``protocol.toml``: the protocol the run applied, byte for byte.

Floats are written with ``repr`` (exact round trip) and the gzip headers carry no time, so the
same run writes the same bytes.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import tomllib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from bench import faults, noise_curve
from bench.assemble import assemble
from bench.config import BenchConfig
from bench.harness import Services
from bench.measurements import (
    ConditionData,
    EquivalenceCheck,
    OracleCounts,
    ReferenceData,
    ReportTotals,
    Rollout,
)

FORMAT = 1
RAW_DIR = "raw"
MANIFEST = "manifest.json"
REWARDS = "rewards.csv.gz"
REFERENCE = "reference.csv.gz"
CELLS = "cells.json.gz"
PROTOCOL = "protocol.toml"
ROLLOUT_COLUMNS = ("world_seed", "branch", "action", "reward", "attention", "saw_own_write")
REFERENCE_ROLES = ("better", "worse_independent", "worse_coupled")
NOISE_PREFIX = "noise_curve/"


@dataclass
class RawRun:
    """Everything `derive` needs: the measurements and what was recorded beside them."""

    config: BenchConfig
    protocol_text: str
    cells: dict[str, dict[str, Any]]
    recorded: dict[str, Any]
    noise_curve: list[tuple[float, dict[str, ConditionData]]] | None = None
    faults: dict[str, Any] | None = None
    speed: Any = None


def derive(run: RawRun) -> dict[str, Any]:
    """benchmark.json's content from the raw measurements: the run's and recompute's path."""
    recorded = run.recorded
    results = assemble(
        run.config,
        run.cells,
        run_id=recorded["run_id"],
        services=Services(**recorded["services"]),
        speed=run.speed,
        faults=None if run.faults is None else faults.summarize(run.faults),
        protocol=tomllib.loads(run.protocol_text),
    )
    results["noise_curve"] = (
        None if run.noise_curve is None else noise_curve.points(run.config, run.noise_curve)
    )
    meta = results["meta"]
    meta["timings_seconds"]["total"] = recorded.get("total_seconds")
    if recorded.get("provenance") is not None:
        meta["provenance"] = recorded["provenance"]
    if recorded.get("figures") is not None:
        meta["figures"] = recorded["figures"]
    return results


def config_from_json(data: Mapping[str, Any]) -> BenchConfig:
    """The BenchConfig `BenchConfig.to_json` wrote (its derived fields dropped)."""
    known = {item.name for item in fields(BenchConfig)}
    values: dict[str, Any] = {}
    for name, value in data.items():
        if name in known:
            values[name] = tuple(value) if isinstance(value, list) else value
    return BenchConfig(**values)


def _number(value: float | None) -> str:
    return "" if value is None else repr(float(value))


def _flag(value: bool | None) -> str:
    return "" if value is None else str(int(value))


def _rollout_row(rollout: Rollout) -> list[str]:
    return [
        str(rollout.world_seed),
        rollout.branch,
        rollout.action,
        _number(rollout.reward),
        _number(rollout.attention),
        _flag(rollout.saw_own_write),
    ]


def _rollout(row: Mapping[str, str]) -> Rollout:
    return Rollout(
        world_seed=int(row["world_seed"]),
        branch=row["branch"],
        action=row["action"],
        reward=float(row["reward"]),
        attention=None if row["attention"] == "" else float(row["attention"]),
        saw_own_write=None if row["saw_own_write"] == "" else row["saw_own_write"] == "1",
    )


def _write_gzip(path: Path, text: str) -> None:
    with path.open("wb") as handle, gzip.GzipFile("", "wb", 9, handle, mtime=0) as packed:
        packed.write(text.encode())


def _read_gzip(path: Path) -> str:
    return gzip.decompress(path.read_bytes()).decode()


def _csv_text(header: Iterable[str], rows: Iterable[Iterable[str]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue()


def _condition_sets(run: RawRun) -> Iterator[tuple[str, str, ConditionData]]:
    for cell, raw in run.cells.items():
        for name, data in raw["conditions"].items():
            yield cell, name, data
    for weight, conditions in run.noise_curve or []:
        for name, data in conditions.items():
            yield f"{NOISE_PREFIX}{weight!r}", name, data


def _condition_meta(data: ConditionData) -> dict[str, Any]:
    return {
        "actions": list(data.actions),
        "totals": asdict(data.totals),
        "oracle": asdict(data.oracle),
        "world_calls": data.world_calls,
        "groups": data.groups,
        "wall_seconds": data.wall_seconds,
    }


def _cell_meta(raw: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "attention_coefficient": raw["reference"].attention_coefficient,
        "per_action": raw["reference"].per_action,
        "conditions": {name: _condition_meta(d) for name, d in raw["conditions"].items()},
        "equivalence": {
            name: [asdict(check) for check in checks]
            for name, checks in (raw.get("equivalence") or {}).items()
        },
        "curve": raw.get("curve"),
        "dependency_models": raw.get("dependency_models"),
        "reproducibility": raw.get("reproducibility") or [],
        "grpo": raw.get("grpo"),
        "timings": raw.get("timings", {}),
    }


def write(run: RawRun, directory: Path) -> list[Path]:
    """Write ``run`` into ``directory`` (created); returns the files written."""
    directory.mkdir(parents=True, exist_ok=True)
    rewards = [
        [cell, name, *_rollout_row(rollout)]
        for cell, name, data in _condition_sets(run)
        for rollout in data.rollouts
    ]
    references = [
        [cell, role, *_rollout_row(rollout)]
        for cell, raw in run.cells.items()
        for role in REFERENCE_ROLES
        for rollout in getattr(raw["reference"], role)
    ]
    cells = {
        "cells": {cell: _cell_meta(raw) for cell, raw in run.cells.items()},
        "noise_curve": None
        if run.noise_curve is None
        else [
            {"weight": weight, "conditions": {n: _condition_meta(d) for n, d in c.items()}}
            for weight, c in run.noise_curve
        ],
        "faults": run.faults,
    }
    manifest = {
        "format": FORMAT,
        "config": run.config.to_json(),
        "recorded": run.recorded,
        "speed": run.speed,
        "cells": list(run.cells),
    }
    paths = {name: directory / name for name in (REWARDS, REFERENCE, CELLS, MANIFEST, PROTOCOL)}
    _write_gzip(paths[REWARDS], _csv_text(("cell", "condition", *ROLLOUT_COLUMNS), rewards))
    _write_gzip(paths[REFERENCE], _csv_text(("cell", "role", *ROLLOUT_COLUMNS), references))
    # Key order is kept: the dependency models and cells print in the order the run made them.
    _write_gzip(paths[CELLS], json.dumps(cells) + "\n")
    paths[MANIFEST].write_text(json.dumps(manifest, indent=1) + "\n")
    paths[PROTOCOL].write_text(run.protocol_text)
    return list(paths.values())


def _condition(name: str, meta: Mapping[str, Any], rollouts: list[Rollout]) -> ConditionData:
    return ConditionData(
        name=name,
        actions=tuple(meta["actions"]),
        rollouts=rollouts,
        totals=ReportTotals(**meta["totals"]),
        world_calls=meta["world_calls"],
        groups=meta["groups"],
        wall_seconds=meta["wall_seconds"],
        oracle=OracleCounts(**meta["oracle"]),
    )


def _grouped(text: str, key: str) -> dict[tuple[str, str], list[Rollout]]:
    grouped: dict[tuple[str, str], list[Rollout]] = {}
    for row in csv.DictReader(io.StringIO(text)):
        grouped.setdefault((row["cell"], row[key]), []).append(_rollout(row))
    return grouped


def read(directory: Path) -> RawRun:
    """The RawRun ``write`` put into ``directory``."""
    manifest = json.loads((directory / MANIFEST).read_text())
    if manifest.get("format") != FORMAT:
        raise ValueError(f"{directory}: raw format {manifest.get('format')}, expected {FORMAT}")
    extras = json.loads(_read_gzip(directory / CELLS))
    rewards = _grouped(_read_gzip(directory / REWARDS), "condition")
    references = _grouped(_read_gzip(directory / REFERENCE), "role")
    cells: dict[str, dict[str, Any]] = {}
    for cell in manifest["cells"]:
        meta = extras["cells"][cell]
        reference = ReferenceData(
            per_action=meta["per_action"], attention_coefficient=meta["attention_coefficient"]
        )
        for role in REFERENCE_ROLES:
            setattr(reference, role, references.get((cell, role), []))
        cells[cell] = {
            "reference": reference,
            "conditions": {
                name: _condition(name, condition, rewards.get((cell, name), []))
                for name, condition in meta["conditions"].items()
            },
            "equivalence": {
                name: [EquivalenceCheck(**check) for check in checks]
                for name, checks in meta["equivalence"].items()
            },
            "curve": meta["curve"],
            "dependency_models": meta["dependency_models"],
            "reproducibility": meta["reproducibility"],
            "timings": meta["timings"],
        }
        if meta["grpo"] is not None:
            cells[cell]["grpo"] = meta["grpo"]
    curve = None
    if extras["noise_curve"] is not None:
        curve = []
        for entry in extras["noise_curve"]:
            label = f"{NOISE_PREFIX}{entry['weight']!r}"
            curve.append(
                (
                    entry["weight"],
                    {
                        name: _condition(name, meta, rewards.get((label, name), []))
                        for name, meta in entry["conditions"].items()
                    },
                )
            )
    return RawRun(
        config=config_from_json(manifest["config"]),
        protocol_text=(directory / PROTOCOL).read_text(),
        cells=cells,
        recorded=manifest["recorded"],
        noise_curve=curve,
        faults=extras["faults"],
        speed=manifest["speed"],
    )
