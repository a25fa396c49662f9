"""Surrogates of issued credentials: the same shape, deterministic per tape and branch, keyed as
the original when presented back."""

from __future__ import annotations

import gzip
import json
import re

from engine.redaction_rules import PLACEHOLDER, Placeholders
from groundhog.protocol.surrogates import served_with_surrogates, surrogate_digest
from resolver.issued_tokens import redact_issued

KEY = b"i" * 32
ACCESS = "ghu_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
OPAQUE = "Zx8Yw7Vu6Ts5Rq4Po3Nm2Lk1Ji0HgFeDcBa98"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbm4ifQ.c2lnbmF0dXJlLXBhcnQtaGVyZS1sb25nZXItb25l"


def _stored(value: str, field: str = "access_token") -> str:
    headers = [["Content-Type", "application/json"]]
    _headers, body = redact_issued(headers, json.dumps({field: value}).encode(), KEY)
    stored = json.loads(body)[field]
    assert PLACEHOLDER.fullmatch(stored), stored
    return str(json.dumps({field: stored}))


def test_a_surrogate_has_the_shape_and_is_deterministic_per_tape_and_branch() -> None:
    stored = _stored(ACCESS)
    first = json.loads(served_with_surrogates(stored, "t", "root/a"))["access_token"]
    again = json.loads(served_with_surrogates(stored, "t", "root/a"))["access_token"]
    other = json.loads(served_with_surrogates(stored, "t", "root/b"))["access_token"]
    assert first == again and first != other and ACCESS not in (first, other)
    for surrogate in (first, other):
        assert len(surrogate) == len(ACCESS) and surrogate.startswith("ghu_")
        assert re.fullmatch(r"[A-Za-z0-9]+", surrogate[4:])


def test_an_opaque_token_keeps_no_prefix_and_a_jwt_stays_a_jwt() -> None:
    opaque = json.loads(served_with_surrogates(_stored(OPAQUE), "t", "b"))["access_token"]
    assert len(opaque) == len(OPAQUE) and opaque[:4] != OPAQUE[:4]
    jwt = json.loads(served_with_surrogates(_stored(JWT, "id_token"), "t", "b"))["id_token"]
    assert jwt.count(".") == 2 and jwt.startswith("eyJ") and jwt != JWT


def test_a_presented_surrogate_keys_as_the_original() -> None:
    stored = _stored(ACCESS)
    surrogate = json.loads(served_with_surrogates(stored, "t", "root/b"))["access_token"]
    original = Placeholders(KEY, False).replace(ACCESS, "header", "name-auth")
    presented = Placeholders(KEY, False).replace(surrogate, "header", "name-auth")
    assert presented == original
    assert surrogate_digest(ACCESS) is None and surrogate_digest(OPAQUE) is None


def test_token_answers_in_json_form_and_gzip_are_kept_as_placeholders() -> None:
    answer = {"access_token": ACCESS, "token_type": "bearer", "user": {"api_key": OPAQUE}}
    body = gzip.compress(json.dumps(answer).encode(), mtime=0)
    headers = [["Content-Type", "application/json"], ["Content-Encoding", "gzip"]]
    kept, stored = redact_issued(headers, body, KEY)
    assert ACCESS.encode() not in stored and OPAQUE.encode() not in stored
    assert json.loads(stored)["token_type"] == "bearer"
    assert not any(name.lower() == "content-encoding" for name, _v in kept)
    form = f"access_token={ACCESS}&scope=repo&token_type=bearer".encode()
    _kept, stored_form = redact_issued(
        [["Content-Type", "application/x-www-form-urlencoded"]], form, KEY
    )
    assert ACCESS.encode() not in stored_form and b"scope=repo" in stored_form


def test_answers_without_issued_credentials_stay_byte_for_byte() -> None:
    body = b'{ "items": [1, 2],  "title": "solar", "max_tokens": 5 }'
    headers = [["Content-Type", "application/json"]]
    assert redact_issued(headers, body, KEY) == (headers, body)
