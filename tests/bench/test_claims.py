"""The predeclared protocol and its gates: every claim can fail, none has an escape hatch."""

from __future__ import annotations

from bench import claims

INTERVAL = {"value": 5.0, "low": 3.0, "high": 8.0}


def _claim(**gate: object) -> dict:
    return {"id": "X", "cell": "c", "text": "t", "metric": "m", "gate": gate}


def test_the_protocol_loads_and_every_gate_is_a_single_comparison() -> None:
    protocol = claims.load()
    assert protocol["version"] >= 1 and protocol["constants"]["bias_margin"] > 0
    for claim in protocol["claim"]:
        assert set(claim["gate"]) <= {"bound", "op", "value", "ref", "ref_bound"}
        assert claim["gate"]["op"] in {"==", *claims.OPERATORS}
        assert " or " not in claim["text"]


def test_a_gate_on_the_lower_bound() -> None:
    assert claims.evaluate(_claim(bound="low", op=">", value=2.0), {"m": INTERVAL})["supported"]
    failed = claims.evaluate(_claim(bound="low", op=">", value=4.0), {"m": INTERVAL})
    assert failed["verdict"] == claims.NOT_SUPPORTED


def test_a_gate_against_another_metric() -> None:
    gate = _claim(bound="low", op="<=", ref="ceiling", ref_bound="high")
    assert claims.evaluate(gate, {"m": INTERVAL, "ceiling": {"high": 3.5}})["supported"]
    assert not claims.evaluate(gate, {"m": INTERVAL, "ceiling": {"high": 2.0}})["supported"]
    assert claims.evaluate(gate, {"m": INTERVAL})["verdict"] == claims.NOT_MEASURED


def test_a_missing_metric_is_not_measured_and_not_support() -> None:
    verdict = claims.evaluate(_claim(bound="k", op="==", value=0), {})
    assert verdict["verdict"] == claims.NOT_MEASURED and not verdict["supported"]
