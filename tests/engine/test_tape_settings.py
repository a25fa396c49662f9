"""A stored config is parsed once into typed settings; unknown keys aside, missing ones default."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from engine.refs import TapeRef
from engine.tape_settings import STORED_BEFORE_IT_EXISTED, TapeSettings, stored_settings


def test_a_stored_config_is_parsed_once_per_distinct_config() -> None:
    stored = {"cooperative_hosts": ["Coop.Example"], "rules": [{"path": "/n", "writes": ["n"]}]}
    settings = stored_settings(stored)
    assert settings is stored_settings(dict(reversed(stored.items())))
    assert settings.cooperative_host_set == frozenset({"coop.example"})
    assert settings.rule_mappings == (
        {
            "method": "*",
            "host": None,
            "path": "/n",
            "operation": None,
            "reads": [],
            "writes": ["n"],
        },
    )
    assert stored_settings({"ignore_params": ["x"]}) is not settings


def test_unknown_keys_are_left_aside_and_missing_settings_take_their_defaults() -> None:
    settings = stored_settings({"redaction": {"applied": {}}, "ignore_params": ["ts"]})
    # A setting whose behaviour for tapes stored before it existed differs from its default
    # for new ones takes that older behaviour (engine/tape_settings.STORED_BEFORE_IT_EXISTED).
    assert settings == TapeSettings(ignore_params=["ts"], **STORED_BEFORE_IT_EXISTED)
    assert settings.stored_config() == {
        **TapeSettings().stored_config(),
        **STORED_BEFORE_IT_EXISTED,
        "ignore_params": ["ts"],
    }


def test_a_tape_stored_before_toolchain_passthrough_keeps_its_recorded_downloads() -> None:
    assert stored_settings({}).toolchain_passthrough is False
    assert stored_settings({"toolchain_passthrough": True}).toolchain_passthrough is True
    assert TapeSettings().toolchain_passthrough is True  # what a tape opened now stores


def test_the_settings_are_frozen_and_validated() -> None:
    settings = TapeSettings()
    with pytest.raises(ValidationError):
        settings.simulate_writes = True  # type: ignore[misc]
    with pytest.raises(ValidationError):
        TapeSettings.model_validate({"prices": {"API.example": 1}})


def test_a_tape_ref_reads_its_settings_from_its_config_text_when_it_has_it() -> None:
    text = '{"passthrough_hosts":["Pass.Example"]}'
    tape = TapeRef(1, "t", 0, "groundhog", True, "closure", {"passthrough_hosts": []}, text)
    assert tape.settings.passthrough_host_set == frozenset({"pass.example"})
    assert tape.settings is tape.settings
