"""Unit tests of default-deny redaction: every kind of secret is replaced by a keyed
placeholder before keying, the same secret keys the same way, and another one does not."""

from __future__ import annotations

import gzip
import json
import re
import sys

from engine.keys import request_key
from engine.redaction import Policy, policy_from_config, redact_request, redact_response_headers
from engine.redaction_rules import PLACEHOLDER, credential_word, without_identity
from engine.request import RequestParts
from engine.tape_settings import TapeSettings

KEY = b"k" * 32
OPENAI = "sk-proj-Zq3xT9vLmN2pQ8rS4tU6wY1aB5cD7eF0"
GITHUB = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
AWS = "AKIAIOSFODNN7EXAMPLE"
SLACK = "xoxb-123456789012-abcdefghijkl"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbm4ifQ.c2lnbmF0dXJlLXBhcnQtaGVyZQ"
DEFAULT = policy_from_config(TapeSettings())


def _request(**changes: object) -> RequestParts:
    base = RequestParts("GET", "https", "api.example.com", 443, "/search", (("q", "wind"),))
    return base.with_changes(**changes)


def _flat(request: RequestParts) -> str:
    return json.dumps(
        [request.path, request.query, request.headers, request.body.decode("latin-1")]
    )


def test_credential_names_are_words_not_substrings() -> None:
    for name in (
        "Authorization",
        "X-Auth-Token",
        "Api-Key",
        "X-Goog-Api-Key",
        "Ocp-Apim-Subscription-Key",
        "api_key",
        "key",
        "accessToken",
        "client_secret",
        "JSESSIONID",
        "password",
        "X-Amz-Signature",
    ):
        assert credential_word(name) is not None, name
    for name in ("keywords", "author", "max_tokens", "monkey", "q", "Content-Type", "Accept"):
        assert credential_word(name) is None, name


def test_headers_query_form_and_json_at_depth_are_replaced() -> None:
    request = _request(
        method="POST",
        query=(("api_key", "QK1"), ("token", "QT1"), ("key", "QK2"), ("q", "wind")),
        headers=(
            ("X-Auth-Token", "H1"),
            ("Api-Key", "H2"),
            ("X-Goog-Api-Key", "H3"),
            ("Ocp-Apim-Subscription-Key", "H4"),
            ("Authorization", "Bearer H5"),
            ("Content-Type", "application/json"),
        ),
        body=json.dumps({"user": {"profile": {"password": "hunter22", "name": "ann"}}}).encode(),
    )
    redacted = redact_request(request, DEFAULT, KEY)
    text = _flat(redacted.request)
    for secret in ("QK1", "QT1", "QK2", "H1", "H2", "H3", "H4", "H5", "hunter22"):
        assert secret not in text
    assert ("q", "wind") in redacted.request.query
    assert redacted.request.header(
        "Authorization",
    ).startswith("Bearer [redacted:")
    assert json.loads(redacted.request.body)["user"]["profile"]["name"] == "ann"
    assert {f.where for f in redacted.findings} == {"header", "query", "json"}


def test_form_password_is_replaced() -> None:
    request = _request(
        method="POST",
        headers=(("Content-Type", "application/x-www-form-urlencoded"),),
        body=b"user=ann&password=hunter22",
    )
    body = redact_request(request, DEFAULT, KEY).request.body
    assert b"hunter22" not in body and b"user=ann" in body


def test_secret_formats_in_path_body_and_any_header() -> None:
    request = _request(
        method="POST",
        path=f"/v1/keys/{OPENAI}/repos/{GITHUB}",
        headers=(("X-Note", f"aws {AWS}"), ("Content-Type", "text/plain")),
        body=f"slack {SLACK} and jwt {JWT}".encode(),
    )
    redacted = redact_request(request, DEFAULT, KEY)
    text = _flat(redacted.request)
    for secret in (OPENAI, GITHUB, AWS, SLACK, JWT, JWT.split(".")[2]):
        assert secret not in text
    assert redacted.request.path.startswith("/v1/keys/[redacted:format-model-api-key:")
    rules = {f.rule for f in redacted.findings}
    assert {"format-github-token", "format-aws-access-key", "format-slack-token"} <= rules
    assert "format-jwt" in rules


def test_gzip_bodies_are_redacted_and_stored_decoded() -> None:
    request = _request(
        method="POST",
        headers=(("Content-Type", "application/json"), ("Content-Encoding", "gzip")),
        body=gzip.compress(json.dumps({"password": "hunter22"}).encode()),
    )
    redacted = redact_request(request, DEFAULT, KEY).request
    assert redacted.header("content-encoding") is None
    assert b"hunter22" not in redacted.body


def test_same_secret_same_placeholder_other_secret_other_key() -> None:
    def key_of(token: str, key: bytes = KEY) -> str:
        request = _request(headers=(("X-Api-Key", token),))
        return request_key(redact_request(request, DEFAULT, key).request).hash

    assert key_of("alpha-123") == key_of("alpha-123")
    assert key_of("alpha-123") != key_of("beta-456")
    assert key_of("alpha-123") != key_of("alpha-123", b"other-deployment-key-0123456789")


def test_interchangeable_hosts_share_credentials_but_not_ids() -> None:
    policy = policy_from_config(
        TapeSettings.model_validate({"interchangeable_credentials": ["api.example.com"]})
    )
    a = redact_request(_request(headers=(("X-Api-Key", "alpha-123"),)), policy, KEY)
    b = redact_request(_request(headers=(("X-Api-Key", "beta-456"),)), policy, KEY)
    assert request_key(a.request).hash == request_key(b.request).hash
    other = _request(host="other.example.com", headers=(("X-Api-Key", "alpha-123"),))
    assert PLACEHOLDER.search(redact_request(other, policy, KEY).request.headers[0][1]).group(2)
    everywhere = policy_from_config(
        TapeSettings.model_validate({"interchangeable_credentials": "*"})
    )
    assert redact_request(other, everywhere, KEY).request.headers[0][1] == "[redacted:name-key]"


def test_without_identity_tells_credential_only_differences() -> None:
    a = redact_request(_request(headers=(("X-Api-Key", "alpha-123"),)), DEFAULT, KEY).request
    b = redact_request(_request(headers=(("X-Api-Key", "beta-456"),)), DEFAULT, KEY).request
    ka, kb = request_key(a).readable, request_key(b).readable
    assert ka != kb and without_identity(ka) == without_identity(kb)


def test_placeholders_are_left_alone() -> None:
    first = redact_request(_request(headers=(("X-Api-Key", "alpha-123"),)), DEFAULT, KEY).request
    again = redact_request(first, DEFAULT, KEY).request
    assert again == first


def test_tape_widens_and_narrows() -> None:
    policy = policy_from_config(
        TapeSettings(
            **{
                "redact_headers": ["X-Customer"],
                "redact_params": ["account"],
                "redact_json_paths": ["items.*.card"],
                "redact_patterns": [r"ACME-\d{6}"],
                "redact_keep": ["session"],
                "redact_disable": ["high-entropy"],
            }
        )
    )
    request = _request(
        method="POST",
        query=(("account", "A1"), ("session", "S1"), ("q", "ACME-123456")),
        headers=(("X-Customer", "C1"), ("Content-Type", "application/json")),
        body=json.dumps(
            {"items": [{"card": "4111"}], "id": "Zq3xT9vLmN2pQ8rS4tU6wY1aB5cD7eF0"}
        ).encode(),
    )
    redacted = redact_request(request, policy, KEY).request
    text = _flat(redacted)
    assert "A1" not in text and "C1" not in text and "4111" not in text and "ACME-1" not in text
    assert ("session", "S1") in redacted.query
    assert "Zq3xT9vLmN2pQ8rS4tU6wY1aB5cD7eF0" in text  # entropy rule switched off


def test_ordinary_requests_are_untouched() -> None:
    request = _request(
        query=(("keywords", "solar"), ("author", "ann"), ("max_tokens", "10")),
        headers=(("Accept", "application/json"), ("User-Agent", "python-httpx/0.27")),
        path="/docs/d41d8cd98f00b204e9800998ecf8427e/550e8400-e29b-41d4-a716-446655440000",
    )
    redacted = redact_request(request, DEFAULT, KEY)
    assert redacted.request == request and not redacted.findings


def test_response_set_cookie_values_are_keyed_placeholders_with_order_and_duplicates_kept() -> None:
    headers = [
        ("A", "1"),
        ("Set-Cookie", "sid=abc123; Path=/; HttpOnly"),
        ("B", "2"),
        ("B", "3"),
        ("set-cookie", "bare-value"),
        ("X-Private", "p"),
    ]
    kept = redact_response_headers(headers, ["x-private"], key=KEY)
    placeholder = re.compile(r"\[redacted:set-cookie:[0-9a-f]+\]")
    assert [name for name, _value in kept] == ["A", "Set-Cookie", "B", "B", "set-cookie"]
    cookie, bare = kept[1][1], kept[4][1]
    assert "abc123" not in cookie and "bare-value" not in bare
    name, rest = cookie.split("=", 1)
    value, attributes = rest.split(";", 1)
    assert name == "sid" and placeholder.fullmatch(value) and attributes == " Path=/; HttpOnly"
    assert placeholder.fullmatch(bare)
    # Keyed: the same cookie the same placeholder, another cookie or another key not.
    assert redact_response_headers(headers, key=KEY)[1][1] == cookie
    other = redact_response_headers([("Set-Cookie", "sid=zzz; Path=/")], key=KEY)[0][1]
    assert other.split(";")[0] != cookie.split(";")[0]
    assert redact_response_headers(headers, key=b"x" * 32)[1][1] != cookie


def _cookie_key(cookie: str, policy: Policy = DEFAULT) -> str:
    redacted = redact_request(_request(headers=(("Cookie", cookie),)), policy, KEY).request
    return redacted.headers[0][1]


def test_a_cookie_keys_per_pair_and_its_replayed_placeholder_keys_as_the_cookie_did() -> None:
    recorded = _cookie_key("sid=abc123; theme=dark")
    assert "abc123" not in recorded and "dark" not in recorded
    sid, theme = recorded.split("; ")
    assert sid.startswith("sid=[redacted:name-cookie:") and theme.startswith("theme=[redacted:")
    # A sealed replay serves the stored Set-Cookie; the client sends its placeholder back.
    stored = redact_response_headers([("Set-Cookie", "sid=abc123; Path=/")], key=KEY)[0][1]
    served = stored.split(";")[0]
    assert _cookie_key(f"{served}; theme=dark") == recorded
    # Another cookie, or a placeholder of another one, keys apart.
    assert _cookie_key("sid=zzz999; theme=dark") != recorded
    other = redact_response_headers([("Set-Cookie", "sid=zzz999")], key=KEY)[0][1]
    assert _cookie_key(f"{other}; theme=dark") != recorded
    # Interchangeable credentials: the digest leaves both forms alike.
    shared = policy_from_config(TapeSettings.model_validate({"interchangeable_credentials": "*"}))
    assert _cookie_key(f"{served}; theme=dark", shared) == _cookie_key("sid=x; theme=y", shared)


def test_json_nested_past_the_recursion_limit_is_scanned_as_text() -> None:
    depth = sys.getrecursionlimit() + 10
    body = ("[" * depth + json.dumps(OPENAI) + "]" * depth).encode()
    request = _request(method="POST", headers=(("Content-Type", "application/json"),), body=body)
    redacted = redact_request(request, Policy(), KEY).request
    assert OPENAI.encode() not in redacted.body


def _json_request(document: object) -> RequestParts:
    return _request(
        method="POST",
        headers=(("Content-Type", "application/json"),),
        body=json.dumps(document).encode(),
    )


def test_every_family_is_redacted_in_json_at_depth() -> None:
    document = {
        "a": {"b": [{"pwd": "Pw-Value-1", "pw": "Pw-Value-2", "passcode": "Pw-Value-3"}]},
        "tokens": ["Token-Value-1", "Token-Value-2"],
        "credentials": {"pass": "Cred-Value-1", "user": "Cred-Value-2"},
        "sig": "Sig-Value-1",
        "session": {"id": "Session-Value-1"},
    }
    redacted = redact_request(_json_request(document), DEFAULT, KEY).request
    stored = json.loads(redacted.body)
    assert "Value" not in redacted.body.decode()
    # an object or array under a credential name is one placeholder
    assert PLACEHOLDER.fullmatch(stored["tokens"]) and PLACEHOLDER.fullmatch(stored["credentials"])
    assert stored["credentials"].startswith("[redacted:name-credentials:")


def test_ordinary_json_fields_stay_readable() -> None:
    document = {
        "keywords": ["solar wind"],
        "author": "ann",
        "max_tokens": 256,
        "usage": {"prompt_tokens": 12, "completion_tokens": 30},
        "passenger": "bob",
        "compass": "north",
        "keyboard": "dvorak",
        "code": "print(1)",
        "state": "open",
    }
    request = _json_request(document)
    redacted = redact_request(request, DEFAULT, KEY)
    assert redacted.request == request and not redacted.findings


def test_form_pass_and_vendor_headers_are_redacted() -> None:
    request = _request(
        method="POST",
        headers=(
            ("X-Pass", "Header-Value-1"),
            ("X-Api-Pass", "Header-Value-2"),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ),
        body=b"user=ann&pass=Form-Value-1&passenger=bob",
    )
    redacted = redact_request(request, DEFAULT, KEY).request
    text = _flat(redacted)
    assert "Header-Value" not in text and "Form-Value" not in text
    assert b"passenger=bob" in redacted.body and b"user=ann" in redacted.body


def test_query_sig_and_pw_are_redacted() -> None:
    request = _request(query=(("sv", "2022-11-02"), ("sig", "Sas-Sig-Value"), ("pw", "Pw-Value")))
    redacted = redact_request(request, DEFAULT, KEY).request
    assert "Value" not in _flat(redacted) and ("sv", "2022-11-02") in redacted.query


def test_oauth_code_and_state_only_on_callbacks() -> None:
    callback = _request(path="/oauth/callback", query=(("code", "Oauth-Code-1"), ("state", "xyz")))
    redacted = redact_request(callback, DEFAULT, KEY)
    assert "Oauth-Code-1" not in _flat(redacted.request) and "xyz" not in _flat(redacted.request)
    assert {f.rule for f in redacted.findings} == {"name-oauth-code", "name-oauth-state"}
    exchange = _request(
        method="POST",
        path="/oauth/token",
        headers=(("Content-Type", "application/x-www-form-urlencoded"),),
        body=b"grant_type=authorization_code&code=Oauth-Code-2&redirect_uri=https%3A%2F%2Fa.b%2Fcb",
    )
    assert b"Oauth-Code-2" not in redact_request(exchange, DEFAULT, KEY).request.body
    for query in ((("code", "python"),), (("state", "open"), ("labels", "bug"))):
        search = _request(path="/search", query=query)
        assert redact_request(search, DEFAULT, KEY).request == search


def _multipart(fields: list[tuple[str, str]], boundary: str = "XyZ123") -> bytes:
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'
        for name, value in fields
    ]
    return ("".join(parts) + f"--{boundary}--\r\n").encode()


def test_multipart_fields_are_redacted_by_name() -> None:
    request = _request(
        method="POST",
        headers=(("Content-Type", 'multipart/form-data; boundary="XyZ123"'),),
        body=_multipart([("api_key", "Multi-Key-1"), ("title", "report"), ("pass", "Multi-2")]),
    )
    redacted = redact_request(request, DEFAULT, KEY)
    body = redacted.request.body
    assert b"Multi-Key-1" not in body and b"Multi-2" not in body
    assert b'name="title"\r\n\r\nreport\r\n' in body and body.endswith(b"--XyZ123--\r\n")
    assert {f.where for f in redacted.findings} == {"multipart"}


def test_brotli_and_zstd_bodies_are_redacted_and_stored_decoded() -> None:
    from engine.content_coding import encode_content

    for encoding in ("br", "zstd"):
        request = _request(
            method="POST",
            headers=(("Content-Type", "application/json"), ("Content-Encoding", encoding)),
            body=encode_content(json.dumps({"pwd": "hunter22", "q": "x"}).encode(), encoding),
        )
        redacted = redact_request(request, DEFAULT, KEY).request
        assert redacted.header("content-encoding") is None
        assert b"hunter22" not in redacted.body and json.loads(redacted.body)["q"] == "x"


def test_pem_keys_and_webhook_secrets_leave_requests() -> None:
    pem = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----"
    hook = "T0A1B2C3D/B0E4F5G6H/Xy9zAbCdEfGhIjKlMnOpQrSt"
    request = _json_request(
        {"config": {"pem": pem, "notify": f"https://hooks.slack.com/services/{hook}"}}
    )
    redacted = redact_request(request.with_changes(path=f"/services/{hook}"), DEFAULT, KEY)
    text = _flat(redacted.request)
    assert "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" not in text and "Xy9zAbCdEfGhIjKlMnOpQrSt" not in text
    assert redacted.request.path.startswith("/services/T0A1B2C3D/B0E4F5G6H/[redacted:")
    assert {"format-private-key", "format-slack-webhook"} <= {f.rule for f in redacted.findings}


def test_strings_inside_an_object_replaced_whole_are_scrubbed_from_echoes_but_words_are_not() -> (
    None
):
    document = {
        "auth": {"type": "bearer", "value": "xoxb-1234-abcd-5678", "kind": "service_account"}
    }
    secrets = dict(redact_request(_json_request(document), DEFAULT, KEY).secrets)
    assert "xoxb-1234-abcd-5678" in secrets
    assert "bearer" not in secrets and "service_account" not in secrets
