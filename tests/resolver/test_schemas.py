"""The resolver's request models are held to the internal protocol's declared shapes, and the
tape config's operation rules, protocol pins, tool overrides and sandbox identity validate.

`groundhog/protocol/wire.py` declares the proxy↔resolver JSON once (the proxy builds its bodies
from it); `resolver/schemas.py` validates them. A field added to one and not the other would be
dropped silently (pydantic ignores unknown fields) or refused: this test fails first.
"""

from __future__ import annotations

from typing import get_type_hints

import pytest
from pydantic import ValidationError

from groundhog.protocol.wire import ResolveAsk
from resolver.schemas import ResolveRequest, TapeConfig


def test_resolve_request_has_exactly_the_wire_fields() -> None:
    assert set(ResolveRequest.model_fields) == set(get_type_hints(ResolveAsk))


def wire_ask() -> ResolveAsk:
    """A `/v1/resolve` body as the proxy sends it, every field set."""
    return {
        "tape": "t",
        "branch": "root/b0",
        "method": "GET",
        "scheme": "https",
        "host": "api.example.com",
        "port": 443,
        "path": "/search",
        "query": [["q", "solar"]],
        "headers": [["Accept", "application/json"]],
        "body": "",
        "body_too_large": False,
        "attempt": "Zq3-x_9",
        "lease_holder": "h0lder-1",
    }


def test_a_wire_resolve_body_validates_field_for_field() -> None:
    sent = wire_ask()
    parsed = ResolveRequest.model_validate(sent).model_dump()
    assert parsed == {
        **sent,
        "query": [("q", "solar")],
        "headers": [("Accept", "application/json")],
    }


@pytest.mark.parametrize("attempt", ["", "a b", "x" * 65, "ü"])
def test_an_unusable_attempt_id_is_refused(attempt: str) -> None:
    with pytest.raises(ValidationError, match="attempt"):
        ResolveRequest.model_validate(
            {
                "tape": "t",
                "branch": "root",
                "method": "GET",
                "host": "h",
                "port": 80,
                "attempt": attempt,
            }
        )


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
