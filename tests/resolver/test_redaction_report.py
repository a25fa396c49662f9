"""The rules a tape's report and export state: defaults, less what it disabled, plus its own."""

from __future__ import annotations

from engine.redaction_rules import CREDENTIAL_WORDS
from engine.secret_formats import builtin_rule_names
from engine.tape_settings import TapeSettings
from resolver.redaction_report import TAPE_FIELDS, rules_applied


def test_defaults_are_stated_in_full() -> None:
    applied = rules_applied(TapeSettings())
    assert applied["names"] == sorted(CREDENTIAL_WORDS)
    assert applied["formats"] == builtin_rule_names()
    assert applied["high_entropy"] is True
    assert "set-cookie" in applied["response_headers_dropped"]
    assert applied["tape"] == {name: [] for name in TAPE_FIELDS}


def test_disabled_rules_are_left_out_and_the_tapes_own_rules_are_listed() -> None:
    config = {
        "redact_disable": ["names", "jwt", "high-entropy"],
        "redact_headers": ["X-Internal"],
        "redact_patterns": ["PIN-\\d{4}"],
    }
    applied = rules_applied(TapeSettings.model_validate(config))
    assert applied["names"] == [] and applied["name_suffixes"] == []
    assert "jwt" not in applied["formats"]
    assert set(applied["formats"]) == set(builtin_rule_names()) - {"jwt"}
    assert applied["high_entropy"] is False
    assert applied["tape"]["redact_headers"] == ["X-Internal"]
    assert applied["tape"]["redact_patterns"] == config["redact_patterns"]
