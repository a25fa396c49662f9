"""The resolver's request models are held to the internal protocol's declared shapes, and the
tape config's operation rules, protocol pins, tool overrides and sandbox identity validate.

`groundhog/protocol/wire.py` declares the proxy↔resolver JSON once (the proxy builds its bodies
from it); `resolver/schemas.py` validates them. A field added to one and not the other would be
dropped silently (pydantic ignores unknown fields) or refused, and a field the resolver requires
that the proxy may leave out would be refused at run time: these tests fail first.
"""

from __future__ import annotations

from typing import Any, NotRequired, Required, get_args, get_origin, get_type_hints

import pytest
from pydantic import BaseModel, ValidationError

from engine.resolve_request import ResolveRequest
from engine.tape_settings import TapeSettings
from groundhog.protocol.wire import (
    HeldLeaseRef,
    LeaseAheadAsk,
    LeaseEventsAsk,
    LeaseHitEvent,
    LeaseRenewAsk,
    LeaseTakeAsk,
    ResolveAsk,
)
from resolver.schemas import (
    HeldLease,
    LeaseAheadRequest,
    LeaseEvent,
    LeaseEventsRequest,
    LeaseRenewRequest,
    LeaseTakeRequest,
    TapeConfig,
    TapeIdentity,
)

# Each request model and the wire shape the proxy builds its body as.
WIRE_SHAPES: dict[type[BaseModel], Any] = {
    ResolveRequest: ResolveAsk,
    LeaseTakeRequest: LeaseTakeAsk,
    LeaseAheadRequest: LeaseAheadAsk,
    LeaseEventsRequest: LeaseEventsAsk,
    LeaseEvent: LeaseHitEvent,
    LeaseRenewRequest: LeaseRenewAsk,
    HeldLease: HeldLeaseRef,
}


def required_keys(shape: Any) -> set[str]:
    """The keys a TypedDict requires. Not `__required_keys__`: under `from __future__ import
    annotations` (wire.py's) Python 3.12 cannot see a `NotRequired` there and calls every key
    required."""
    hints = get_type_hints(shape, include_extras=True)
    marked = {name: get_origin(hint) for name, hint in hints.items()}
    return {
        name
        for name, mark in marked.items()
        if mark is Required or (mark is not NotRequired and shape.__total__)
    }


def test_required_keys_sees_not_required() -> None:
    assert "attempt" not in required_keys(ResolveAsk) and "tape" in required_keys(ResolveAsk)


@pytest.mark.parametrize("model", list(WIRE_SHAPES), ids=lambda model: model.__name__)
def test_each_request_model_has_exactly_its_wire_fields(model: type[BaseModel]) -> None:
    shape = WIRE_SHAPES[model]
    assert set(model.model_fields) == set(get_type_hints(shape))
    # The proxy always sends what the resolver requires (it may send more than that: a field
    # with a default at the resolver, for callers that leave it out).
    required = {name for name, field in model.model_fields.items() if field.is_required()}
    assert required <= required_keys(shape), required - required_keys(shape)


@pytest.mark.parametrize("model", list(WIRE_SHAPES), ids=lambda model: model.__name__)
def test_a_nested_body_is_the_wire_shape_of_its_nested_model(model: type[BaseModel]) -> None:
    """`events` is a list of LeaseEvent on one side and of LeaseHitEvent on the other, and so
    on: a nested model is paired with the nested shape, each held by the test above."""
    hints = get_type_hints(WIRE_SHAPES[model])
    for name, field in model.model_fields.items():
        if get_origin(field.annotation) is list:
            (item,) = get_args(field.annotation)
            if isinstance(item, type) and issubclass(item, BaseModel):
                assert get_origin(hints[name]) is list, name
                assert get_args(hints[name]) == (WIRE_SHAPES[item],), name


def wire_events() -> LeaseEventsAsk:
    """A `/v1/leases/events` body as the proxy sends it (proxy/lease_shipping.py)."""
    hit: LeaseHitEvent = {
        "method": "GET",
        "url": "https://api.example.com/search?q=solar",
        "key_hash": "ab" * 32,
        "occurrence": 2,
        "fingerprint": "",
        "exchange_id": 7,
        "true_fingerprint_nonempty": False,
        "attempt": None,
        "serial": 3,
    }
    return {"branch_id": 5, "holder": "h0lder-1", "epoch": 2, "events": [hit], "release": True}


def test_a_wire_lease_events_body_validates_field_for_field() -> None:
    sent = wire_events()
    assert LeaseEventsRequest.model_validate(sent).model_dump() == sent
    renew: LeaseRenewAsk = {
        "holder": "h0lder-1",
        "leases": [{"branch_id": 5, "epoch": 2}],
        "release_unlisted": True,
    }
    assert LeaseRenewRequest.model_validate(renew).model_dump() == renew
    take: LeaseTakeAsk = {
        "tape": "t",
        "branch": "root/b0",
        "holder": "h0lder-1",
        "capability": "0f" * 16,
    }
    assert LeaseTakeRequest.model_validate(take).model_dump() == take
    ahead: LeaseAheadAsk = {"tape": "t", "branch": "root/b0", "held": [9, 4]}
    assert LeaseAheadRequest.model_validate(ahead).model_dump() == ahead


def test_a_read_ahead_naming_too_many_held_exchanges_is_refused_with_the_bound() -> None:
    ahead = {"tape": "t", "branch": "root/b0", "held": [1] * 1025}
    with pytest.raises(ValidationError, match="at most 1024"):
        LeaseAheadRequest.model_validate(ahead)
    with pytest.raises(ValidationError, match="greater than or equal to 1"):
        LeaseAheadRequest.model_validate({**ahead, "held": [0]})


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
        "capability": "0f" * 16,
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


def test_the_open_body_is_the_identity_and_the_settings_and_nothing_else() -> None:
    """A setting declared on `TapeConfig` itself would be accepted but never stored or shown:
    settings are fields of `TapeSettings` (engine/tape_settings.py) only."""
    identity, settings = set(TapeIdentity.model_fields), set(TapeSettings.model_fields)
    assert not identity & settings
    assert set(TapeConfig.model_fields) == identity | settings
    assert set(TapeConfig(name="t").stored_config()) == settings
