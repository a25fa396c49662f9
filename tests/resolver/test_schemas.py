"""The resolver's request models are held to the internal protocol's declared shapes.

`groundhog/protocol/wire.py` declares the proxy↔resolver JSON once (the proxy builds its bodies
from it); `resolver/schemas.py` validates them. A field added to one and not the other would be
dropped silently (pydantic ignores unknown fields) or refused: this test fails first.
"""

from __future__ import annotations

from typing import get_type_hints

from groundhog.protocol.wire import ResolveAsk
from resolver.schemas import ResolveRequest


def test_resolve_request_has_exactly_the_wire_fields() -> None:
    assert set(ResolveRequest.model_fields) == set(get_type_hints(ResolveAsk))


def test_a_wire_resolve_body_validates_field_for_field() -> None:
    sent: ResolveAsk = {
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
    }
    parsed = ResolveRequest.model_validate(sent).model_dump()
    assert parsed == {
        **sent,
        "query": [("q", "solar")],
        "headers": [("Accept", "application/json")],
    }
