"""Unit tests of the request key: what makes two asks the same request."""

from __future__ import annotations

import gzip
import json
import random
import zlib

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.content_coding import decode_content
from engine.keys import canonical_body, request_key
from engine.protocol_profiles import detect_operation
from engine.request import RequestParts


def parts(**changes: object) -> RequestParts:
    base = RequestParts("GET", "https", "API.Example.com", 443, "/s", (("b", "2"), ("a", "1")))
    return base.with_changes(**changes)


def test_readable_form_is_versioned_and_normalised() -> None:
    key = request_key(parts())
    assert key.readable == "v4 GET https://api.example.com/s?a=1&b=2"
    assert len(key.hash) == 64


def test_query_order_and_host_case_do_not_matter_but_values_do() -> None:
    assert request_key(parts()) == request_key(
        parts(query=(("a", "1"), ("b", "2")), host="api.example.com")
    )
    assert request_key(parts()) != request_key(parts(query=(("a", "1"), ("b", "3"))))


def test_ports_shown_only_when_not_default() -> None:
    assert "api.example.com:8443/" in request_key(parts(port=8443)).readable
    assert "http://api.example.com:443/" in request_key(parts(scheme="http")).readable


def test_ignore_params_and_match_headers() -> None:
    noisy = parts(query=(("a", "1"), ("b", "2"), ("ts", "99")))
    assert request_key(noisy, ignore_params=["ts"]) == request_key(parts())
    with_header = parts(headers=(("X-Region", "de"), ("User-Agent", "x")))
    key = request_key(with_header, match_headers=["x-region"])
    assert 'headers:[["x-region","de"]]' in key.readable and "User-Agent" not in key.readable
    assert request_key(with_header) == request_key(parts())


def test_negotiation_headers_and_credentials_join_the_key_by_default() -> None:
    for name, value in (("Range", "bytes=0-9"), ("If-None-Match", '"e1"'), ("Accept", "a/b")):
        assert request_key(parts(headers=((name, value),))) != request_key(parts())
    accept = parts(headers=(("Accept-Language", "de"),))
    assert request_key(accept, ignore_headers=["Accept-Language"]) == request_key(parts())
    credential = parts(headers=(("X-Api-Key", "[redacted:name-key:0123456789abcdef]"),))
    assert "x-api-key" in request_key(credential).readable


def test_repeated_query_names_keep_their_relative_order() -> None:
    first = parts(query=(("k", "2"), ("a", "x"), ("k", "1")))
    same = parts(query=(("a", "x"), ("k", "2"), ("k", "1")))
    swapped = parts(query=(("k", "1"), ("a", "x"), ("k", "2")))
    assert request_key(first) == request_key(same) != request_key(swapped)


def test_json_bodies_are_canonical() -> None:
    json_type = (("Content-Type", "application/json; charset=utf-8"),)
    one = request_key(parts(method="POST", headers=json_type, body=b'{"b": 1, "a": [1, 2]}'))
    two = request_key(parts(method="POST", headers=json_type, body=b'{"a":[1,2],"b":1}'))
    assert one == two and one.readable.endswith('body:{"a":[1,2],"b":1}')


def test_form_bodies_sort_pairs() -> None:
    form = (("Content-Type", "application/x-www-form-urlencoded"),)
    one = request_key(parts(method="POST", headers=form, body=b"z=1&a=hello+world"))
    two = request_key(parts(method="POST", headers=form, body=b"a=hello%20world&z=1"))
    assert one == two and "body:form:a=hello%20world&z=1" in one.readable


def test_invalid_json_and_non_utf8_are_keyed_by_hash() -> None:
    assert canonical_body(b"{nope", "application/json", None).startswith("sha256:")
    assert canonical_body(b"\xff\xfe", "application/json", None).startswith("sha256:")
    assert canonical_body(b"\xff\xfe", None, None) != canonical_body(b"\xff\xfd", None, None)
    assert canonical_body(b"", "application/json", None) == ""


def test_encoded_bodies_are_decoded_before_canonicalisation() -> None:
    raw = b'{"b":1,"a":2}'
    assert canonical_body(gzip.compress(raw), "application/json", "gzip") == '{"a":2,"b":1}'
    assert canonical_body(zlib.compress(raw), "application/json", "deflate") == '{"a":2,"b":1}'
    assert canonical_body(b"not gzip", "application/json", "gzip").startswith("sha256:")


def test_decoding_is_capped() -> None:
    bomb = gzip.compress(b"0" * 100_000)
    assert decode_content(bomb, "gzip", cap=1000) is None
    assert decode_content(bomb, "gzip") == b"0" * 100_000
    assert decode_content(b"x", "br") is None


_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8)
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=12,
)


def _reorder(value: object, rng: random.Random) -> object:
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {key: _reorder(item, rng) for key, item in items}
    if isinstance(value, list):
        return [_reorder(item, rng) for item in value]
    return value


@settings(max_examples=150, deadline=None)
@given(
    query=st.lists(st.tuples(_text, _text), max_size=5),
    document=_json,
    seed=st.integers(0, 2**32),
    body=st.binary(max_size=64),
)
def test_key_ignores_order_and_never_crashes(query, document, seed, body) -> None:
    rng = random.Random(seed)
    json_type = (("Content-Type", "application/json"),)
    base = parts(
        method="POST", query=tuple(query), headers=json_type, body=json.dumps(document).encode()
    )
    # Names in any order; a repeated name keeps its values' relative order (key v2).
    names = list(dict.fromkeys(name for name, _ in query))
    rng.shuffle(names)
    shuffled = [pair for name in names for pair in query if pair[0] == name]
    other_body = json.dumps(_reorder(document, rng), indent=rng.choice([None, 2])).encode()
    other = base.with_changes(query=tuple(shuffled), body=other_body)
    assert request_key(base) == request_key(other)
    raw = request_key(base.with_changes(body=body))  # arbitrary bytes: keyed, not a crash
    assert raw.readable.startswith("v4 POST ")


def test_the_jsonrpc_id_leaves_the_key_and_the_operation_is_named() -> None:
    def key_of(call_id: object) -> str:
        body = {"jsonrpc": "2.0", "id": call_id, "method": "tools/list"}
        parts = RequestParts(
            "POST",
            "http",
            "t.example",
            80,
            "/mcp",
            headers=(("content-type", "application/json"),),
            body=json.dumps(body).encode(),
        )
        return request_key(parts, operation=detect_operation(parts)).readable

    assert key_of(1) == key_of("abc")
    assert " op:mcp tools/list " in key_of(1)
    assert '"id"' not in key_of(1)
