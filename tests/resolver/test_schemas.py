"""Tape config: operation rules, protocol pins, tool overrides and sandbox identity validate."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from resolver.schemas import TapeConfig


def test_a_rule_names_a_path_an_operation_or_both() -> None:
    config = TapeConfig(name="t", rules=[{"operation": "tools/call write_*", "writes": ["n"]}])
    assert config.rules[0].method == "*" and config.rules[0].path is None
    with pytest.raises(ValidationError, match="a path, an operation, or both"):
        TapeConfig(name="t", rules=[{"method": "POST", "reads": ["x"]}])


def test_protocol_pins_and_tool_kinds_take_known_words_only() -> None:
    config = TapeConfig(
        name="t",
        protocols={"api.example": "graphql", "*": "off"},
        mcp_tools={"search": "read"},
        sandbox_cookies=["sid"],
    )
    assert config.protocols["*"] == "off"
    with pytest.raises(ValidationError):
        TapeConfig(name="t", protocols={"api.example": "soap"})
    with pytest.raises(ValidationError):
        TapeConfig(name="t", mcp_tools={"search": "maybe"})
