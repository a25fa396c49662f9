"""Structured text bodies: INI/.env/properties/YAML lines, XML, YAML documents, URL userinfo,
name/value pairs and compressed bodies are redacted with the same keyed placeholders."""

from __future__ import annotations

import base64
import gzip
import json
import zlib

import brotli
import pytest

from engine.content_coding import encode_content
from engine.redaction import policy_from_config, redact_request
from engine.request import RequestParts
from engine.tape_settings import TapeSettings
from resolver.echoes import scrub_response

KEY = b"s" * 32
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
PASSWORD = "Hunter2-Pass"
DEFAULT = policy_from_config(TapeSettings())


def _post(body: bytes, content_type: str, encoding: str | None = None) -> RequestParts:
    headers = [("Content-Type", content_type)]
    if encoding:
        headers.append(("Content-Encoding", encoding))
    return RequestParts("POST", "https", "api.example.com", 443, "/c", (), tuple(headers), body)


def _redacted_body(body: bytes, content_type: str, encoding: str | None = None) -> str:
    return redact_request(_post(body, content_type, encoding), DEFAULT, KEY).request.body.decode()


INI = (
    "[default]\nregion = eu-west-1\naws_access_key_id = AKIAIOSFODNN7EXAMPL3\n"
    f"aws_secret_access_key = {AWS_SECRET}\n"
)
ENV = f'# app\nDEBUG=true\nexport DB_PASSWORD="{PASSWORD}"\nKEYWORDS=a,b\n'
PROPERTIES = f"spring.datasource.url=jdbc:x\nspring.datasource.password: {PASSWORD}\n"


@pytest.mark.parametrize(
    ("body", "kept"),
    [
        (INI, ["region = eu-west-1", "[default]"]),
        (ENV, ["DEBUG=true", "KEYWORDS=a,b", 'export DB_PASSWORD="[redacted:']),
        (PROPERTIES, ["spring.datasource.url=jdbc:x"]),
    ],
)
def test_assignment_lines_lose_their_credential_values(body: str, kept: list[str]) -> None:
    redacted = _redacted_body(body.encode(), "text/plain")
    assert AWS_SECRET not in redacted and PASSWORD not in redacted
    assert "[redacted:" in redacted
    for readable in kept:
        assert readable in redacted


def test_xml_elements_and_attributes_named_like_credentials() -> None:
    xml = (
        '<?xml version="1.0"?><login xmlns:w="urn:w"><user>ann</user>'
        f'<w:Password Type="text">{PASSWORD}</w:Password>'
        f'<conn api_key="{PASSWORD}-2" title="x"/></login>'
    )
    redacted = _redacted_body(xml.encode(), "application/xml")
    assert PASSWORD not in redacted
    assert "<user>ann</user>" in redacted and 'title="x"' in redacted
    assert "[redacted:name-password:" in redacted and "[redacted:name-key:" in redacted


def test_xml_that_does_not_parse_or_declares_entities_falls_back_to_lines() -> None:
    broken = f"<a><password>{PASSWORD}</password>\npassword={PASSWORD}\n"
    assert PASSWORD not in _redacted_body(broken.encode(), "application/xml")
    bomb = (
        '<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa">'
        '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">]>'
        f"<l>&b;</l>\nsecret: {PASSWORD}\n"
    )
    redacted = _redacted_body(bomb.encode(), "text/xml")
    assert PASSWORD not in redacted and "aaaaaaaaaaaaaaaaaaaa" not in redacted


def test_yaml_documents_are_walked_like_json() -> None:
    yaml_text = f"service: api\ncredentials:\n  user: ann\n  pass: {PASSWORD}\nmax_tokens: 5\n"
    redacted = _redacted_body(yaml_text.encode(), "application/yaml")
    assert PASSWORD not in redacted and "ann" not in redacted
    assert "service: api" in redacted and "max_tokens: 5" in redacted


def test_url_userinfo_inside_a_json_value() -> None:
    body = json.dumps({"dsn": f"postgresql://app:{PASSWORD}@db.internal:5432/app"}).encode()
    redacted = _redacted_body(body, "application/json")
    assert PASSWORD not in redacted
    assert "postgresql://app:[redacted:format-url-password:" in redacted
    assert "@db.internal:5432/app" in redacted


@pytest.mark.parametrize(
    "pair",
    [
        {"name": "password", "value": PASSWORD},
        {"key": "API_KEY", "value": PASSWORD},
        {"Name": "db_password", "Value": PASSWORD},
        {"ParameterKey": "DbSecret", "ParameterValue": PASSWORD},
    ],
)
def test_name_value_pairs_whose_name_is_a_credential(pair: dict[str, str]) -> None:
    body = json.dumps({"fields": [{"name": "user", "value": "ann"}, pair]}).encode()
    redacted = _redacted_body(body, "application/json")
    assert PASSWORD not in redacted
    assert '{"name":"user","value":"ann"}' in redacted


def test_siblings_sending_the_same_structured_secret_share_a_placeholder() -> None:
    first = _redacted_body(ENV.encode(), "text/plain")
    again = _redacted_body(ENV.encode(), "text/plain")
    other = _redacted_body(ENV.replace(PASSWORD, "Other-Pass-9").encode(), "text/plain")
    assert first == again and first != other


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "br", "zstd"])
def test_compressed_bodies_are_redacted_and_their_echo_scrubbed(encoding: str) -> None:
    compressed = encode_content(ENV.encode(), encoding)
    redacted = redact_request(_post(compressed, "text/plain", encoding), DEFAULT, KEY)
    assert PASSWORD not in redacted.request.body.decode()
    assert not any(name.lower() == "content-encoding" for name, _v in redacted.request.headers)
    # A world echoing the compressed bytes it received, raw or as base64.
    for echoed in (compressed, base64.b64encode(compressed)):
        _headers, stored, _hits = scrub_response(
            [["Content-Type", "application/octet-stream"]], echoed, redacted.secrets
        )
        opened = stored
        for undo in (gzip.decompress, zlib.decompress, brotli.decompress):
            try:
                opened = undo(stored)
                break
            except Exception:  # not this coding
                continue
        assert PASSWORD.encode() not in opened and compressed not in stored


def test_ordinary_text_stays_as_sent() -> None:
    text = b"title: solar\nkeywords = wind, grid\nmax_tokens: 64\nsee https://example.com:8443/a\n"
    request = _post(text, "text/plain")
    assert redact_request(request, DEFAULT, KEY).request.body == text
