"""The report: headline figures, failed promises first, JSON beside the markdown."""

from __future__ import annotations

import json
from pathlib import Path

from bench.reliability.report import headline, write_report

RESULTS = {
    "load": {
        "workers": 64, "branches": 16, "requests": 1000, "errors": 0, "silent_live_calls": 0,
        "memory_flat": True, "p50_ms": 5.0, "p99_ms": 40.0, "throughput_rps": 300.0,
        "throughput_vs_direct": 0.1, "memory": [],
    },
    "world_faults": {"cases": [
        {"case": "reset", "held": False}, {"case": "timeout", "held": True},
    ]},
    "key_properties": {"examples": {"stability": 10, "no_crash": 10}, "held": True},
    "errors": {"crash": "RuntimeError: boom"},
}  # fmt: skip


def test_headline_counts(tmp_path: Path) -> None:
    top = headline(RESULTS)
    assert top["load_held"] and top["records_lost"] == 0
    assert (top["faults_survived"], top["faults_tried"]) == (1, 2)
    assert top["bad_inputs_tried"] == 20
    assert top["promises_failed"] == 2  # the reset case and the scenario that could not run


def test_report_lists_failures_first_and_writes_json(tmp_path: Path) -> None:
    markdown, json_path = write_report(RESULTS, tmp_path)
    text = markdown.read_text()
    table = text.split("## Promises")[1]
    assert table.index("**FAILED**") < table.index("| held |")
    assert "scenario crash could not run" in text
    assert json.loads(json_path.read_text())["headline"]["records_lost"] == 0
