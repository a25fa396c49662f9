"""Surrogates for credentials the world issued, agreed by the proxy and the resolver (issue 55).

A token the world hands out (an OAuth `access_token`, a key a create-key call answers with) is
stored as a keyed placeholder that also says its shape: `[redacted:issued.LENGTH.CHARSET.PREFIX:
DIGEST]`, the digest being the HMAC the request side gives the same value. A branch served that
answer from the tape gets a *surrogate*: the same prefix and length, characters of the same set,
deterministic per tape and branch, carrying the digest and a check so that when the branch later
presents it (`Authorization: Bearer …`) the resolver keys it as the original
(engine/redaction_rules.py `Placeholders.replace`). So a replayed login is followed by reads
keyed as the recording's, siblings share them, and no tape holds the live token.

A JWT's surrogate is a JWT (an unsigned header, a payload naming it a surrogate, the digest in the
signature segment), so a client that splits or decodes it still can. A token too short (or of
digits only) to carry the digest gets the placeholder itself, as a `Set-Cookie` value does.
Standard library only: the proxy and the resolver both import it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re

ISSUED_PREFIX = "issued."
CHARSETS = {
    "hex": "0123456789abcdef",
    "alnum": "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
    "b64url": "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
    "b64": "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
}
DIGEST_HEX = 16
CHECK_HEX = 8
_ISSUED = re.compile(
    r"\[redacted:issued\.(?P<length>\d{1,5})\.(?P<charset>[a-z0-9]{1,8})\.(?P<prefix>[A-Za-z0-9._-]{0,12}):"
    r"(?P<digest>[0-9a-f]{16})\]"
)
_CARRIED = re.compile(r"[0-9a-f]{24,}")
_PREFIX = re.compile(r"^(?:eyJ|[A-Za-z0-9]{1,8}[._-](?:[A-Za-z0-9]{1,8}[._-])?)")
_JWT_HEADER = "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0"
_JWT = re.compile(r"^eyJ[A-Za-z0-9_=-]+\.[A-Za-z0-9_=-]+\.[A-Za-z0-9_+/=-]*$")


def _check(digest: str) -> str:
    return hashlib.sha256(f"groundhog-surrogate:{digest}".encode()).hexdigest()[:CHECK_HEX]


def shape_of(value: str, *, named_format: bool) -> str:
    """`LENGTH.CHARSET.PREFIX` of an issued value; the prefix is kept only when a named format
    matched (a vendor's `ghu_`, `ya29.`), never the first characters of an opaque token."""
    if _JWT.match(value):
        return f"{len(value)}.jwt."
    prefix = ""
    if named_format:
        found = _PREFIX.match(value)
        prefix = found.group() if found else ""
    rest = value[len(prefix) :]
    charset = next(
        (name for name, chars in CHARSETS.items() if rest and all(c in chars for c in rest)),
        "b64",
    )
    return f"{len(value)}.{charset}.{prefix}"


def _filler(seed: str, size: int, alphabet: str) -> str:
    out: list[str] = []
    counter = 0
    while len(out) < size:
        block = hashlib.sha256(f"{seed}\0{counter}".encode()).digest()
        out += [alphabet[byte % len(alphabet)] for byte in block]
        counter += 1
    return "".join(out[:size])


def surrogate(placeholder: re.Match[str], tape: str, branch: str) -> str:
    """The value a branch is served in place of an issued placeholder (deterministic)."""
    digest, length = placeholder["digest"], int(placeholder["length"])
    charset, prefix = placeholder["charset"], placeholder["prefix"]
    carried = digest + _check(digest)
    seed = f"{tape}\0{branch}\0{digest}"
    if charset == "jwt":
        payload = (
            base64.urlsafe_b64encode(
                json.dumps(
                    {"sub": "groundhog-surrogate", "jti": _filler(seed, 12, CHARSETS["hex"])}
                ).encode()
            )
            .decode()
            .rstrip("=")
        )
        head = f"{_JWT_HEADER}.{payload}."
        return (
            head
            + carried
            + _filler(seed, max(0, length - len(head) - len(carried)), CHARSETS["b64url"])
        )
    room = length - len(prefix) - len(carried)
    if room < 0 or charset not in CHARSETS:
        return placeholder.group()
    return prefix + carried + _filler(seed, room, CHARSETS[charset])


def served_with_surrogates(text: str, tape: str, branch: str) -> str:
    """`text` with every issued placeholder replaced by this branch's surrogate."""
    if "[redacted:issued." not in text:
        return text
    return _ISSUED.sub(lambda match: surrogate(match, tape, branch), text)


def surrogate_digest(value: str) -> str | None:
    """The digest a surrogate carries (so it keys as the original), or None for any other value."""
    if len(value) < DIGEST_HEX + CHECK_HEX:
        return None
    size = DIGEST_HEX + CHECK_HEX
    for found in _CARRIED.finditer(value):
        run = found.group()
        for start in range(len(run) - size + 1):  # filler may be hex too: every alignment
            digest = run[start : start + DIGEST_HEX]
            if _check(digest) == run[start + DIGEST_HEX : start + size]:
                return digest
    return None
