"""Unit tests of the redaction bench's pieces (the timed run itself is `python -m bench`)."""

from __future__ import annotations

import base64

from bench import redaction_perf, speed


def test_the_measured_requests_hold_secrets_that_get_redacted() -> None:
    for kind in redaction_perf.BODIES:
        cold, warm, key_only = redaction_perf.keying_functions(kind)
        assert cold() == warm()  # the cache returns what a cold redaction computes
        assert "[redacted:" in cold().readable  # the credentials join the key as placeholders
        assert key_only().hash == cold().hash


def test_asks_are_reads_of_one_recorded_request() -> None:
    body = redaction_perf.resolve_body("root/b0")
    assert body["method"] == "GET" and body["branch"] == "root/b0"
    assert b"hunter2" in base64.b64decode(body["body"])


def test_the_benchmark_runs_it() -> None:
    assert speed.SCRIPTS["redaction"] == "bench.redaction_perf"


def test_the_text_body_is_set_against_the_json_body_round_by_round() -> None:
    samples = {
        redaction_perf.TEXT_KIND: {"redaction_us": [120.0, 300.0, 90.0]},
        redaction_perf.JSON_KIND: {"redaction_us": [100.0, 100.0, 100.0]},
    }
    against = redaction_perf.text_against_json(samples)
    assert against["per_round"] == [1.2, 3.0, 0.9]
    assert against["text_over_json"] == 1.2 and against["within_budget"] is True
    samples[redaction_perf.TEXT_KIND]["redaction_us"] = [200.0, 300.0, 90.0]
    assert redaction_perf.text_against_json(samples)["within_budget"] is False
    row = redaction_perf.text_row(against)
    assert "text/JSON 1.20x" in row["summary"] and "budget 1.5x" in row["summary"]
