"""Undoing and redoing a body's `Content-Encoding`: gzip, deflate, brotli and zstd.

Redaction, the echo scrubber and the audit must read a body as its bytes mean, not as they were
compressed: a key echoed in a brotli answer is as much a leak as one in a gzip answer, and
before this module brotli and zstd bodies were stored unscanned. Decoding is capped, so a small
compressed body cannot expand without bound (a decompression bomb); a body over the cap, in an
unknown encoding, or corrupt is "cannot decode" (None) and its caller keeps it as received.
Encoding is deterministic (no timestamps), so a scrubbed tape records identically twice.
"""

from __future__ import annotations

import gzip
import importlib
import sys
import zlib

import brotli

if sys.version_info >= (3, 14):  # the standard library's (mitmproxy picks the same)
    zstd = importlib.import_module("compression.zstd")
else:
    from backports import zstd

MAX_DECODED_BODY_BYTES = 8 * 1024 * 1024
ENCODINGS = frozenset({"gzip", "x-gzip", "deflate", "br", "zstd"})


def _zlib(body: bytes, name: str, cap: int) -> bytes | None:
    window = 16 + zlib.MAX_WBITS if name in ("gzip", "x-gzip") else zlib.MAX_WBITS
    for wbits in (window, -zlib.MAX_WBITS) if name == "deflate" else (window,):
        try:
            decoder = zlib.decompressobj(wbits)
            decoded = decoder.decompress(body, cap)
            if decoder.unconsumed_tail:
                return None
            return decoded + decoder.flush()
        except zlib.error:
            continue
    return None


def _brotli(body: bytes, cap: int) -> bytes | None:
    decoder = brotli.Decompressor()
    try:
        decoded: bytes = decoder.process(body, output_buffer_limit=cap + 1)  # brotli is untyped
    except brotli.error:
        return None
    if len(decoded) > cap or not decoder.is_finished():
        return None
    return decoded


def _zstd(body: bytes, cap: int) -> bytes | None:
    decoder = zstd.ZstdDecompressor()
    try:
        decoded = decoder.decompress(body, max_length=cap + 1)
    except zstd.ZstdError:
        return None
    if len(decoded) > cap or not decoder.eof:
        return None
    return decoded


def decode_content(
    body: bytes, encoding: str | None, cap: int = MAX_DECODED_BODY_BYTES
) -> bytes | None:
    """The body without its content encoding, or None if it cannot be decoded within `cap`."""
    name = (encoding or "").strip().lower()
    if name in ("", "identity"):
        return body
    if name == "br":
        return _brotli(body, cap)
    if name == "zstd":
        return _zstd(body, cap)
    if name in ENCODINGS:
        return _zlib(body, name, cap)
    return None


# Compressed payloads that arrive without a `Content-Encoding` (an echo service answering with the
# gzip bytes a client sent, an upload of a `.gz` file) still hold what they compress: their
# magic numbers say which coding to undo.
_MAGIC = ((b"\x1f\x8b", "gzip"), (b"\x28\xb5\x2f\xfd", "zstd"))


def sniffed_coding(body: bytes) -> str | None:
    """The content coding a body's own first bytes announce (gzip, zstd, zlib), or None."""
    for magic, name in _MAGIC:
        if body.startswith(magic):
            return name
    if len(body) > 2 and body[0] == 0x78 and (body[0] * 256 + body[1]) % 31 == 0:
        return "deflate"
    return None


def decode_sniffed(body: bytes, cap: int = MAX_DECODED_BODY_BYTES) -> tuple[bytes, str] | None:
    """(the decoded payload, its coding) when `body` is itself compressed, else None."""
    coding = sniffed_coding(body)
    if coding is None:
        return None
    decoded = decode_content(body, coding, cap)
    return None if decoded is None else (decoded, coding)


def encode_content(data: bytes, encoding: str) -> bytes:
    """`data` in `encoding` again (one `decode_content` undid); identity for any other."""
    name = encoding.strip().lower()
    if name in ("gzip", "x-gzip"):
        return gzip.compress(data, mtime=0)  # no timestamp: the tape stays deterministic
    if name == "deflate":
        return zlib.compress(data)
    if name == "br":
        compressed: bytes = brotli.compress(data)  # brotli is untyped
        return compressed
    if name == "zstd":
        return zstd.compress(data)
    return data
