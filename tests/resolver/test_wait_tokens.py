"""Unit tests of resolver/wait_tokens.py: an ask survives the round trip; bad tokens are 422."""

from __future__ import annotations

import base64
import json
import zlib
from dataclasses import MISSING, fields, replace

import pytest

from engine.asks import Ask
from engine.dependencies import Classification
from engine.faults import FaultRule
from engine.keys import RequestKey
from engine.policy import Decision, DependencyModel, Mode
from engine.redaction_rules import Finding
from engine.request import RequestParts
from engine.tape_settings import FaultKind
from resolver.errors import InvalidInput
from resolver.wait_tokens import MEMORY_ONLY, WaitToken, decode, decode_wait, encode
from resolver.wakeups import Mark


def _ask() -> Ask:
    return Ask(
        tape_id=3,
        tape_name="t",
        mode=Mode.GROUNDHOG,
        online=True,
        model=DependencyModel.RULES,
        world_seed=-(2**63),
        cooperative=True,
        branch_id=9,
        branch="root/b1",
        request=RequestParts(
            "POST",
            "https",
            "api.example.com",
            443,
            "/q",
            (("a", "1"), ("a", "2")),
            (("X-Dup", "1"), ("X-Dup", "2")),
            b"\x00\xffbody",
        ),
        key=RequestKey("v1 POST https://api.example.com/q", "ab" * 32),
        body_sha="cd" * 32,
        classification=Classification(False, frozenset({"doc:1", "index:x"}), frozenset()),
        occurrence=4,
        true_fingerprint="fp",
        fingerprint="fp",
        findings=(Finding("header:authorization", "name"),),
        fault_rules=(FaultRule(FaultKind.TIMEOUT, 0.5, host="h", methods=("GET",), hold_ms=7),),
        simulator_url="http://127.0.0.1:9/simulate",
        simulate_writes=True,
        versions=(("doc:1", "ab" * 32),),
        attempt="Zq3-x_9",
        replay_client_messages=True,
        session_hash="5e55",
    )


def test_an_ask_survives_the_round_trip_exactly() -> None:
    ask = _ask()
    assert decode(encode(ask, Decision.RECORDED)) == ask


def test_every_field_of_ask_survives_the_round_trip() -> None:
    # A field added to Ask must travel in the token (or be declared memory-only): a waiter
    # that lost one decides differently from the ask it continues (issue 29, defect 4).
    ask = replace(_ask(), secrets=(("sk-raw", "<redacted:1>"),))
    decoded = decode(encode(ask, Decision.RECORDED))
    for spec in fields(Ask):
        default = spec.default if spec.default is not MISSING else None
        if spec.name in MEMORY_ONLY:
            assert getattr(decoded, spec.name) == spec.default, spec.name
            continue
        assert getattr(ask, spec.name) != default, f"give Ask.{spec.name} a non-default in _ask()"
        assert getattr(decoded, spec.name) == getattr(ask, spec.name), spec.name


def test_the_holders_lease_and_the_settle_mark_travel_with_the_ask() -> None:
    ask, mark = _ask(), Mark("0f1e2d3c4b5a6978", 41)
    token = encode(ask, Decision.REFETCHED, claim_expires=1_800_000_000.25, mark=mark)
    assert decode_wait(token) == WaitToken(ask, Decision.REFETCHED, 1_800_000_000.25, mark)


def test_a_token_without_lease_or_mark_is_read_as_unknown() -> None:
    # What an older replica wrote: the wait then looks at the store first, as it always did.
    document = json.loads(
        zlib.decompress(base64.urlsafe_b64decode(encode(_ask(), Decision.RECORDED)))
    )
    del document["claim_expires"], document["mark"]
    older = base64.urlsafe_b64encode(zlib.compress(json.dumps(document).encode())).decode()
    assert decode_wait(older) == WaitToken(_ask(), Decision.RECORDED, None, None)


def test_raw_secrets_never_travel_in_a_token() -> None:
    ask = replace(_ask(), secrets=(("sk-live-very-secret", "<redacted:1>"),))
    token = encode(ask, Decision.RECORDED)
    assert decode(token).secrets == ()
    assert b"sk-live-very-secret" not in zlib.decompress(base64.urlsafe_b64decode(token))


@pytest.mark.parametrize(
    "token",
    [
        "%%%",
        base64.urlsafe_b64encode(b"not zlib").decode(),
        base64.urlsafe_b64encode(zlib.compress(b"[1, 2]")).decode(),
        base64.urlsafe_b64encode(zlib.compress(b'{"v": 1}')).decode(),
        encode(_ask(), Decision.RECORDED)[:-8],
        "é",
    ],
)
def test_a_malformed_token_is_invalid_input_naming_wait(token: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        decode(token)
    assert raised.value.extras["field"] == "wait"
