"""Unit tests of resolver/issued_tokens.py: credentials the world issues, kept as placeholders."""

from __future__ import annotations

import json
from urllib.parse import parse_qsl

from groundhog.protocol.surrogates import served_with_surrogates, surrogate_digest
from resolver.issued_tokens import redact_issued

KEY = b"k" * 32
FORM = [["Content-Type", "application/x-www-form-urlencoded"]]
JSON = [["Content-Type", "application/json"]]
TOKEN = "abcdefABCDEF0123456789xyzXYZ"


def test_a_form_encoded_token_answer_keeps_a_placeholder_the_proxy_serves_as_a_surrogate() -> None:
    body = f"access_token={TOKEN}&token_type=bearer&scope=a%20b".encode()
    _headers, stored = redact_issued(FORM, body, KEY)
    assert TOKEN.encode() not in stored and b"[redacted:issued.28.alnum.:" in stored
    served = dict(parse_qsl(served_with_surrogates(stored.decode(), "t", "root/b")))
    assert served["token_type"] == "bearer" and served["scope"] == "a b"
    surrogate = served["access_token"]
    assert len(surrogate) == len(TOKEN) and surrogate.isalnum() and surrogate != TOKEN
    assert surrogate_digest(surrogate) is not None


def test_a_json_token_answer_keeps_placeholders_and_leaves_other_fields() -> None:
    body = json.dumps({"access_token": TOKEN, "expires_in": 60, "user": {"name": "ann"}}).encode()
    headers, stored = redact_issued([*JSON, ["Content-Length", str(len(body))]], body, KEY)
    document = json.loads(stored)
    assert document["access_token"].startswith("[redacted:issued.28.alnum.:")
    assert document["expires_in"] == 60 and document["user"] == {"name": "ann"}
    assert ["Content-Length", str(len(stored))] in headers


def test_an_answer_without_credentials_is_handed_back_unchanged() -> None:
    body = b'{"user": "ann", "tokens_left": 3}'
    assert redact_issued(JSON, body, KEY) == (JSON, body)
