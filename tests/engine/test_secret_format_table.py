"""Cases generated from the format table: every row's example is found and replaced under its
rule (keyed, and digest-free on an interchangeable host), and its near miss is left alone.
Adding a format is adding a row to engine/secret_format_table.py; these cases follow."""

from __future__ import annotations

import json
import re

import pytest

from engine.redaction import policy_from_config, redact_request
from engine.request import RequestParts
from engine.secret_format_table import FORMAT_TABLE, FormatRow
from engine.secret_formats import FormatScanner, builtin_formats
from engine.tape_settings import TapeSettings

KEY = b"t" * 32
ROWS = {row.name: row for row in FORMAT_TABLE}


@pytest.fixture(scope="module")
def quiet() -> FormatScanner:
    return FormatScanner(builtin_formats(), entropy=False)


def _secret_of(row: FormatRow) -> str:
    match = re.search(row.pattern, row.example)
    assert match is not None, f"{row.name}: its pattern does not match its example"
    return match.group("secret") if "secret" in match.re.groupindex else match.group()


def _json_request(value: str, host: str = "api.example.com") -> RequestParts:
    body = json.dumps({"note": f"use {value} now"}).encode()
    return RequestParts(
        "POST",
        "https",
        host,
        443,
        "/notes",
        (),
        (("Content-Type", "application/json"),),
        body,
    )


def test_row_names_are_unique_and_rules_are_slugs() -> None:
    assert len(ROWS) == len(FORMAT_TABLE)
    for row in FORMAT_TABLE:
        assert re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", row.rule), row.rule
        assert row.scope in ("token", "text"), row.name
        assert row.scope == "token" or row.literals, f"{row.name}: a text row needs a literal"


@pytest.mark.parametrize("name", sorted(ROWS))
def test_the_example_is_found_under_its_rule(quiet: FormatScanner, name: str) -> None:
    row = ROWS[name]
    secret = _secret_of(row)
    if row.scope == "token":
        assert secret == row.example, f"{name}: a token row's example is the whole token"
    text = f"please use {row.example} for the call"
    found = [(text[start:end], rule) for start, end, rule in quiet.find(text)]
    assert (secret, row.rule) in found, found


@pytest.mark.parametrize("name", sorted(ROWS))
def test_the_counter_example_is_left_alone(quiet: FormatScanner, name: str) -> None:
    text = f"see {ROWS[name].counter_example} here"
    assert quiet.find(text) == [], name


@pytest.mark.parametrize("name", sorted(ROWS))
def test_the_example_is_replaced_by_a_keyed_placeholder(name: str) -> None:
    row = ROWS[name]
    secret = _secret_of(row)
    redacted = redact_request(_json_request(row.example), policy_from_config(TapeSettings()), KEY)
    body = redacted.request.body.decode()
    assert secret not in body
    assert re.search(rf"\[redacted:format-{row.rule}:[0-9a-f]{{16}}\]", body), body


@pytest.mark.parametrize("name", sorted(ROWS))
def test_interchangeable_credentials_of_a_format_key_alike(name: str) -> None:
    row = ROWS[name]
    policy = policy_from_config(
        TapeSettings.model_validate({"interchangeable_credentials": ["api.example.com"]})
    )
    body = redact_request(_json_request(row.example), policy, KEY).request.body.decode()
    assert f"[redacted:format-{row.rule}]" in body, body


def test_two_fine_grained_github_tokens_share_on_an_interchangeable_host() -> None:
    """`github_pat_` once fell to the entropy rule, whose placeholder stays keyed everywhere."""
    example = ROWS["github-fine-grained-token"].example
    other = example[:11] + example[11:].swapcase()
    policy = policy_from_config(
        TapeSettings.model_validate({"interchangeable_credentials": ["api.example.com"]})
    )
    bodies = {
        redact_request(_json_request(value), policy, KEY).request.body for value in (example, other)
    }
    assert len(bodies) == 1
    assert b"[redacted:format-github-token]" in bodies.pop()
