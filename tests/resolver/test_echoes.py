"""Unit tests of echo scrubbing: a response never keeps a secret its request carried."""

from __future__ import annotations

import base64
import gzip
import json
from urllib.parse import quote

from resolver.echoes import EchoBook, scrub_response

SECRET = "hdr-api-key/77c2+x"
PLACEHOLDER = "[redacted:name-key:0123456789abcdef]"
SECRETS = ((SECRET, PLACEHOLDER),)


def test_every_spelling_of_an_echo_is_replaced() -> None:
    body = json.dumps(
        {
            "raw": SECRET,
            "quoted": quote(SECRET, safe=""),
            "b64": base64.b64encode(SECRET.encode()).decode(),
        }
    ).encode()
    headers, scrubbed, hits = scrub_response([["X-Echo", f"key={SECRET}"]], body, SECRETS)
    assert SECRET.encode() not in scrubbed and b"77c2" not in scrubbed
    assert headers == [["X-Echo", f"key={PLACEHOLDER}"]] and hits == 2
    assert json.loads(scrubbed)["raw"] == PLACEHOLDER


def test_gzip_bodies_are_scrubbed_and_stay_gzip_with_their_length() -> None:
    body = gzip.compress(f"echo {SECRET}".encode(), mtime=0)
    headers = [["Content-Encoding", "gzip"], ["Content-Length", str(len(body))]]
    kept, scrubbed, _hits = scrub_response(headers, body, SECRETS)
    assert gzip.decompress(scrubbed) == f"echo {PLACEHOLDER}".encode()
    assert kept[1] == ["Content-Length", str(len(scrubbed))]


def test_nothing_to_scrub_keeps_the_bytes() -> None:
    body = b"\x00\xff binary"
    assert scrub_response([["A", "1"]], body, SECRETS) == ([["A", "1"]], body, 0)
    assert scrub_response([["A", "1"]], body, ())[1] is body


def test_the_book_is_bounded_and_hands_out_once() -> None:
    book = EchoBook(capacity=2)
    for ticket in ("t1", "t2", "t3"):
        book.remember(ticket, SECRETS)
    assert book.take("t1") == () and book.take("t3") == SECRETS and book.take("t3") == ()


def test_brotli_and_zstd_answers_are_scrubbed_and_encoded_again() -> None:
    from engine.content_coding import decode_content, encode_content

    body = json.dumps({"echo": SECRET, "other": "kept"}).encode()
    for encoding in ("br", "zstd"):
        headers = [["Content-Encoding", encoding], ["Content-Length", "1"]]
        kept, scrubbed, hits = scrub_response(headers, encode_content(body, encoding), SECRETS)
        decoded = decode_content(scrubbed, encoding)
        assert decoded is not None and SECRET.encode() not in decoded and b"kept" in decoded
        assert PLACEHOLDER.encode() in decoded and hits == 1
        assert ["Content-Length", str(len(scrubbed))] in kept


def test_a_multi_line_secret_echoed_re_escaped_or_line_by_line_is_scrubbed() -> None:
    line = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun"
    pem = f"-----BEGIN RSA PRIVATE KEY-----\n{line}\n-----END RSA PRIVATE KEY-----"
    secrets = ((pem, PLACEHOLDER),)
    request_text = json.dumps({"pem": pem})  # the request's JSON, echoed inside the answer's
    for body in (json.dumps({"body": request_text}), f"key line: {line}"):
        _headers, scrubbed, hits = scrub_response([], body.encode(), secrets)
        assert line.encode() not in scrubbed and hits == 1
