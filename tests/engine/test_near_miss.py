"""Cell-by-cell tests of the near-miss explanations: each part of a key that can differ."""

from __future__ import annotations

from engine.near_miss import (
    Difference,
    Recording,
    differences,
    explain,
    other_key_versions,
    parse_key,
)

BASE = "v1 GET https://api.test/docs/1/view?lang=en&q=solar"


def diff(asked: str, recorded: str) -> list[Difference]:
    return differences(parse_key(asked), parse_key(recorded))


def test_parse_key_takes_every_part_apart() -> None:
    key = (
        'v1 POST http://h.test:8080/a/b?x=1&x=2 headers:[["accept","a b"]] '
        'body:{"a":{"b":[1,"two words"]}}'
    )
    parts = parse_key(key)
    assert (parts.method, parts.scheme, parts.authority) == ("POST", "http", "h.test:8080")
    assert parts.segments == ("a", "b")
    assert parts.query == (("x", "1"), ("x", "2"))
    assert parts.headers == (("accept", "a b"),)
    assert parts.body == '{"a":{"b":[1,"two words"]}}'


def test_identical_keys_have_no_differences() -> None:
    assert diff(BASE, BASE) == []


def test_method_scheme_and_host_are_named() -> None:
    assert diff(BASE, BASE.replace("GET", "HEAD")) == [Difference("method", "", "GET", "HEAD")]
    assert diff(BASE, BASE.replace("https", "http")) == [Difference("scheme", "", "https", "http")]
    assert diff(BASE, BASE.replace("api.test", "api.test:8443")) == [
        Difference("host", "", "api.test", "api.test:8443")
    ]


def test_path_segments_are_named_by_position() -> None:
    assert diff(BASE, BASE.replace("/docs/1/", "/docs/2/")) == [Difference("path", "2", "1", "2")]
    assert diff(BASE, BASE.replace("/view", "")) == [Difference("path", "3", "view", None)]


def test_query_parameters_differing_extra_and_missing() -> None:
    assert diff(BASE, BASE.replace("q=solar", "q=wind")) == [
        Difference("query", "q", "solar", "wind")
    ]
    assert diff(BASE, BASE.replace("lang=en&", "")) == [Difference("query", "lang", "en", None)]
    assert diff(BASE, BASE + "&page=2") == [Difference("query", "page", None, "2")]


def test_headers_are_named() -> None:
    asked = BASE + ' headers:[["accept-language","en"]]'
    recorded = BASE + ' headers:[["accept-language","de"]]'
    assert diff(asked, recorded) == [Difference("header", "accept-language", "en", "de")]
    assert diff(BASE, recorded) == [Difference("header", "accept-language", None, "de")]


def test_json_body_fields_are_named_by_path() -> None:
    asked = 'v1 POST https://h/x body:{"a":{"b":1},"items":[{"id":1}],"same":true}'
    recorded = 'v1 POST https://h/x body:{"a":{"b":2},"items":[{"id":1},{"id":2}],"same":true}'
    assert diff(asked, recorded) == [
        Difference("body", "a.b", "1", "2"),
        Difference("body", "items[1].id", None, "2"),
    ]


def test_form_and_opaque_bodies() -> None:
    assert diff(
        "v1 POST https://h/x body:form:a=1&b=2", "v1 POST https://h/x body:form:a=1&b=3"
    ) == [Difference("body", "b", "2", "3")]
    assert diff("v1 POST https://h/x body:sha256:aa", "v1 POST https://h/x body:sha256:bb") == [
        Difference("body", "", "sha256:aa", "sha256:bb")
    ]
    assert diff("v1 POST https://h/x", "v1 POST https://h/x body:sha256:bb") == [
        Difference("body", "", None, "sha256:bb")
    ]


def test_explain_ranks_fewest_differences_first_and_says_what_differs() -> None:
    recorded = {
        BASE.replace("q=solar", "q=wind"): [Recording(0, "")],
        BASE.replace("GET", "POST"): [Recording(0, "")],
        BASE.replace("q=solar", "q=solarx"): [Recording(1, ""), Recording(0, "")],
        "v1 GET https://api.test/other": [Recording(0, "")],
    }
    near = explain(BASE, recorded, occurrence=0, fingerprint="")
    assert [miss.key for miss in near] == [
        BASE.replace("q=solar", "q=solarx"),
        BASE.replace("q=solar", "q=wind"),
        BASE.replace("GET", "POST"),
    ]
    assert near[0].summary == "query parameter 'q': asked 'solar', recorded 'solarx'"
    assert [r.occurrence for r in near[0].recordings] == [0, 1]
    assert near[0].as_json()["recorded"] == [
        {"occurrence": 0, "fingerprint": ""},
        {"occurrence": 1, "fingerprint": ""},
    ]
    assert explain(BASE, {}, occurrence=0, fingerprint="") == []


def test_the_same_key_explains_occurrence_or_fingerprint() -> None:
    recorded = {BASE: [Recording(0, ""), Recording(1, "")]}
    (beyond,) = explain(BASE, recorded, occurrence=2, fingerprint="")
    assert beyond.differences == ()
    assert "occurrence 2 is not recorded (recorded: 0, 1)" in beyond.summary
    (written,) = explain(BASE, recorded, occurrence=1, fingerprint="abc")
    assert "fingerprint ''" in written.summary and "asked 'abc'" in written.summary


def test_the_operation_label_is_taken_apart_from_headers_and_body() -> None:
    key = (
        'v3 POST http://t.example/mcp op:mcp tools/call search headers:[["accept","a"]] '
        'body:{"method":"tools/call"}'
    )
    parts = parse_key(key)
    assert parts.version == "v3" and parts.operation == "mcp tools/call search"
    assert parts.headers == (("accept", "a"),) and parts.body == '{"method":"tools/call"}'
    other = key.replace("tools/call search", "tools/call write_note")
    assert diff(key, other) == [
        Difference("operation", "", "mcp tools/call search", "mcp tools/call write_note")
    ]


def test_a_key_of_another_version_says_the_tape_must_be_re_recorded() -> None:
    older = BASE
    current = BASE.replace("v1 ", "v3 ", 1)
    found = diff(current, older)
    assert found == [Difference("version", "", "v3", "v1")]
    assert "re-record it" in found[0].describe()
    assert other_key_versions(current, [older, current, "v2 GET https://x/"]) == ["v1", "v2"]
    assert other_key_versions(current, [current]) == []
