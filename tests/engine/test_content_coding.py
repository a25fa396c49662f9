"""Content codings undone and redone: gzip, deflate, brotli, zstd, each capped."""

from __future__ import annotations

import gzip
import zlib

import brotli
import pytest
from backports import zstd

from engine.content_coding import decode_content, encode_content

DATA = b'{"note": "hello world"}' * 50


@pytest.mark.parametrize("encoding", ["gzip", "x-gzip", "deflate", "br", "zstd", "BR", " zstd "])
def test_every_coding_round_trips(encoding: str) -> None:
    encoded = encode_content(DATA, encoding)
    assert encoded != DATA
    assert decode_content(encoded, encoding) == DATA


def test_foreign_encoders_are_read() -> None:
    assert decode_content(gzip.compress(DATA), "gzip") == DATA
    assert decode_content(zlib.compress(DATA)[2:-4], "deflate") == DATA  # raw deflate
    assert decode_content(brotli.compress(DATA), "br") == DATA
    assert decode_content(zstd.compress(DATA), "zstd") == DATA


@pytest.mark.parametrize("encoding", ["gzip", "br", "zstd"])
def test_bombs_and_corrupt_bodies_are_not_decoded(encoding: str) -> None:
    bomb = encode_content(b"0" * 100_000, encoding)
    assert decode_content(bomb, encoding, cap=1000) is None
    assert decode_content(bomb, encoding) == b"0" * 100_000
    assert decode_content(b"not compressed at all", encoding) is None
    if encoding != "gzip":  # zlib yields what a truncated gzip stream holds, as it always did
        assert decode_content(bomb[: len(bomb) // 2], encoding) is None


def test_unknown_codings_are_not_decoded_and_identity_is_the_body() -> None:
    assert decode_content(DATA, "compress") is None
    assert decode_content(DATA, "") == DATA and decode_content(DATA, "identity") == DATA
    assert encode_content(DATA, "identity") == DATA


def test_encoding_is_deterministic() -> None:
    for encoding in ("gzip", "br", "zstd"):
        assert encode_content(DATA, encoding) == encode_content(DATA, encoding)
