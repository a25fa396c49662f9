"""Turn a stored body into text a person can read: decoded, pretty-printed JSON, or a hex dump.

Bodies are stored as received, content encoding included (DESIGN §4), so a gzip answer is
opaque bytes until decoded; JSON is stored compact. Without this step the viewer would show
binary noise or one enormous line where a person needs to compare two answers.
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

DISPLAY_LIMIT = 256 * 1024
HEX_LIMIT = 4096


@dataclass(frozen=True)
class ShownBody:
    text: str
    kind: str  # "empty", "json", "text" or "binary"
    notes: tuple[str, ...] = ()


def header_value(headers: Sequence[Sequence[str]], name: str) -> str:
    lowered = name.lower()
    for pair in headers:
        if len(pair) == 2 and str(pair[0]).lower() == lowered:
            return str(pair[1])
    return ""


def _decode(body: bytes, encoding: str) -> tuple[bytes, list[str]]:
    codings = [part.strip().lower() for part in encoding.split(",") if part.strip()]
    if not codings or codings == ["identity"]:
        return body, []
    data = body
    for coding in reversed(codings):
        try:
            if coding in ("gzip", "x-gzip"):
                data = gzip.decompress(data)
            elif coding == "deflate":
                data = zlib.decompress(data)
            elif coding != "identity":
                return body, [f"stored {coding}-encoded; shown as stored"]
        except (OSError, EOFError, zlib.error):
            return body, [f"declared {coding} but does not decode; shown as stored"]
    return data, [f"stored {encoding}-encoded ({len(body)} bytes); shown decoded"]


def _hex_dump(data: bytes) -> str:
    lines = []
    for offset in range(0, min(len(data), HEX_LIMIT), 16):
        chunk = data[offset : offset + 16]
        printable = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"{offset:08x}  {chunk.hex(' '):<47}  {printable}")
    return "\n".join(lines)


def show_body(body: bytes, headers: Sequence[Sequence[str]]) -> ShownBody:
    """The body as display text, with notes on what was done to it."""
    if not body:
        return ShownBody("", "empty")
    data, notes = _decode(body, header_value(headers, "content-encoding"))
    if len(data) > DISPLAY_LIMIT:
        notes.append(f"{len(data)} bytes; showing the first {DISPLAY_LIMIT}")
        data = data[:DISPLAY_LIMIT]
    content_type = header_value(headers, "content-type").lower()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        notes.append(f"{len(data)} bytes of binary; showing a hex dump of the start")
        return ShownBody(_hex_dump(data), "binary", tuple(notes))
    if "json" in content_type or text.lstrip()[:1] in ("{", "["):
        try:
            document = json.loads(text)
        except ValueError:
            pass
        else:
            return ShownBody(
                json.dumps(document, indent=2, ensure_ascii=False), "json", tuple(notes)
            )
    return ShownBody(text, "text", tuple(notes))
