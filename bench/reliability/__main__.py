"""`python -m bench.reliability [--quick] [--out DIR]`: run every reliability scenario and write
reliability.md and reliability.json.

Exits 0 when every promise held, 1 otherwise (the report says which did not). `--quick` keeps
the whole run to a few minutes on two cores; without it the soak runs a minute and the fuzzers
try more examples.
"""

from __future__ import annotations

import argparse
import logging
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.reliability.crash import run_crash
from bench.reliability.fail_closed import run_fail_closed
from bench.reliability.faults import run_claim_takeover, run_world_faults
from bench.reliability.hostile import run_hostile
from bench.reliability.hostile_fields import run_hostile_fields
from bench.reliability.report import headline, write_report
from bench.reliability.security import run_security
from bench.reliability.store_faults import run_store_faults
from bench.reliability.streams import run_big_download
from bench.reliability.tunnels import run_tunnels
from bench.soak import run_soak

logger = logging.getLogger("bench.reliability")


def _fuzzer(name: str) -> Callable[..., dict[str, Any]]:
    """A fuzz entry point, imported on use: hypothesis and schemathesis come with the
    `reliability` extra, and every other scenario runs without them."""
    try:
        from bench.reliability import fuzz
    except ImportError as error:
        raise RuntimeError(
            f"{error.name} is not installed: pip install 'groundhog-rl[reliability]'"
        ) from error
    return getattr(fuzz, name)


def scenarios(quick: bool) -> list[tuple[str, Callable[[Path], dict[str, Any]]]]:
    seconds = 15.0 if quick else 60.0
    return [
        (
            "load",
            lambda root: run_soak(
                workers=64,
                branches=16,
                seconds=seconds,
                max_requests=50_000 if quick else 500_000,
                root=root,
            ),
        ),
        ("crash", lambda root: run_crash(root, quick=quick)),
        ("world_faults", run_world_faults),
        ("claim_takeover", run_claim_takeover),
        ("big_download", run_big_download),
        ("store_faults", run_store_faults),
        ("fail_closed", run_fail_closed),
        ("hostile", run_hostile),
        ("hostile_fields", run_hostile_fields),
        ("schema_fuzz", lambda _root: _fuzzer("fuzz_admin_api")(10 if quick else 50)),
        ("key_properties", lambda _root: _fuzzer("check_key_properties")(100 if quick else 1000)),
        ("security", run_security),
        ("tunnels", run_tunnels),
    ]


def run_all(quick: bool, only: Sequence[str] = ()) -> dict[str, Any]:
    results: dict[str, Any] = {"quick": quick, "seconds": {}}
    with tempfile.TemporaryDirectory(prefix="gh-reliability-") as scratch:
        for name, scenario in scenarios(quick):
            if only and name not in only:
                continue
            root = Path(scratch) / name
            root.mkdir()
            started = time.perf_counter()
            logger.info("running %s", name)
            try:
                results[name] = scenario(root)
            except Exception as error:  # one broken scenario must not hide the others' figures
                logger.exception("%s failed to run", name)
                results.setdefault("errors", {})[name] = f"{type(error).__name__}: {error}"
            results["seconds"][name] = round(time.perf_counter() - started, 1)
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.reliability", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a few minutes instead of ~10")
    parser.add_argument("--out", type=Path, default=Path("reliability-report"))
    parser.add_argument("--only", nargs="*", default=(), help="run only these scenarios")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    results = run_all(args.quick, args.only)
    markdown, _json = write_report(results, args.out)
    top = headline(results)
    logger.info("report written to %s", markdown)
    logger.info(
        "load held: %s; faults survived %d/%d; bad inputs tried %d; records lost %d; "
        "%d promises failed",
        top["load_held"],
        top["faults_survived"],
        top["faults_tried"],
        top["bad_inputs_tried"],
        top["records_lost"],
        top["promises_failed"],
    )
    return 0 if top["promises_failed"] == 0 and "errors" not in results else 1


if __name__ == "__main__":
    raise SystemExit(main())
