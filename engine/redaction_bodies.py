"""Redaction inside request bodies: JSON at any depth (name/value pairs included), form fields,
multipart parts, XML, YAML, INI/`.env`/properties lines (engine/redaction_structured.py), and
text of any other kind.

Bodies are where agents put passwords and keys most often (a login form, a JSON `password`
three levels down, a multipart `api_key` field, a key pasted into a prompt), and they are
stored as blobs that outlive the request. A JSON object or array under a credential name is
replaced whole: everything inside `"credentials": {...}` is the credential. A changed body is
stored decoded, so its `Content-Encoding` and `Content-Length` go; a body that cannot be
decoded (an unknown encoding) is left as sent and keys by its hash. A compressed body that was
redacted leaves a placeholder for its compressed bytes too (base64 included), so a world that
echoes the bytes it received is scrubbed of them (resolver/echoes.py opens compressed echoes).
"""

from __future__ import annotations

import base64
import json
import re
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import parse_qsl, quote, urlencode

from engine.content_coding import decode_content, decode_sniffed
from engine.redaction_rules import Placeholders, oauth_callback
from engine.redaction_structured import (
    dump_yaml,
    load_yaml,
    pair_rule,
    redact_elements,
    redact_lines,
    redact_xml,
)
from engine.secret_formats import MIN_TOKEN

if TYPE_CHECKING:
    from engine.redaction import Policy


def _header(headers: list[tuple[str, str]], name: str) -> str | None:
    return next((value for key, value in headers if key.lower() == name), None)


def _scalar_text(value: Any) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str | int | float):
        return str(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


_MIN_LEAF_ECHO = 8
_PLAIN_WORDS = re.compile(r"[A-Za-z_ ]+")


def _string_leaves(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return [leaf for item in items for leaf in _string_leaves(item)]


class _JsonWalker:
    def __init__(self, policy: Policy, marks: Placeholders) -> None:
        self.policy = policy
        self.marks = marks
        self.changed = False

    def walk(self, value: Any, path: tuple[str, ...]) -> Any:
        if isinstance(value, str):
            if len(value) < MIN_TOKEN and not self.policy.scanner.extra:
                return value
            scanned = self.policy.scan(value, "json", self.marks)
            self.changed = self.changed or scanned != value
            return scanned
        # Paths are only tracked when the tape names JSON paths; most tapes do not.
        tracked = bool(self.policy.json_paths)
        if isinstance(value, dict):
            paired = pair_rule(value, self.policy)
            return {
                name: (
                    self.replaced(item, paired[1])
                    if paired is not None and name == paired[0]
                    else self.field(name, item, (*path, name) if tracked else path)
                    if isinstance(name, str)
                    else self.walk(item, path)
                )
                for name, item in value.items()
            }
        if isinstance(value, list):
            if not tracked:
                return [self.walk(item, path) for item in value]
            return [self.walk(item, (*path, str(i))) for i, item in enumerate(value)]
        return value

    def field(self, name: str, value: Any, path: tuple[str, ...]) -> Any:
        rule = self.policy.name_rule(name, frozenset(), "json")
        if rule is None and self.policy.json_paths and self._configured(path):
            rule = "tape-json_path"
        if rule is None:
            return self.walk(value, path)
        return self.replaced(value, rule)

    def replaced(self, value: Any, rule: str) -> Any:
        """`value` (a scalar, or an object or list replaced whole) as its placeholder."""
        text = _scalar_text(value)
        if text is None or text == "":
            return value
        replaced = self.marks.replace(text, "json", rule)
        self.changed = self.changed or replaced != text
        if isinstance(value, dict | list):
            # Replaced whole, yet a world may echo one string from inside it; plain words
            # (`"type": "bearer"`) are left out, or every answer saying them would change.
            for leaf in _string_leaves(value):
                if len(leaf) >= _MIN_LEAF_ECHO and not _PLAIN_WORDS.fullmatch(leaf):
                    self.marks.echoed_as(leaf, replaced)
        return replaced

    def _configured(self, path: tuple[str, ...]) -> bool:
        for wanted in self.policy.json_paths:
            if len(wanted) == len(path) and all(
                w == p or (w == "*" and p.isdigit()) for w, p in zip(wanted, path, strict=True)
            ):
                return True
        return False


_NOT_JSON = object()
COMPRESSED_BODY_RULE = "compressed-body"
_PAIR_VALUES = frozenset({"value", "parametervalue"})
_NONE: frozenset[str] = frozenset()
_JSON_NAME = re.compile(r'"([^"\\]*)"\s*:')


def _json_may_hold_secrets(text: str, policy: Policy) -> bool:
    """A cheap look before the walk: a credential-looking field name or a secret format
    anywhere in the text. Most bodies hold neither and are never parsed here."""
    if policy.json_paths or policy.scanner.extra or "\\" in text:
        return True  # escapes could hide a name from the quick look: walk it
    names = set(_JSON_NAME.findall(text))
    if any(name.lower() in _PAIR_VALUES for name in names):
        return True  # a name/value pair: its name is in a value
    if any(policy.name_rule(name, _NONE, "json") for name in names):
        return True
    return bool(policy.scanner.find(text))


def _redact_json(text: str, policy: Policy, marks: Placeholders) -> Any:
    """The redacted JSON bytes, None if nothing changed, `_NOT_JSON` if it does not parse."""
    if not _json_may_hold_secrets(text, policy):
        return None
    try:
        document = json.loads(text)
    except (ValueError, RecursionError):
        return _NOT_JSON
    walker = _JsonWalker(policy, marks)
    try:
        redacted = walker.walk(document, ())
        if not walker.changed:
            return None
        return json.dumps(redacted, separators=(",", ":"), ensure_ascii=False).encode()
    except RecursionError:  # nested past the interpreter's limit: scanned as text instead
        return _NOT_JSON


def _redact_form(text: str, policy: Policy, marks: Placeholders, path: str) -> bytes | None:
    pairs = parse_qsl(text, keep_blank_values=True)
    changed = False
    kept = []
    oauth = oauth_callback(path, (name for name, _value in pairs))
    for name, value in pairs:
        rule = policy.name_rule(name, policy.params, "param", oauth=oauth)
        new = (
            marks.replace(value, "form", rule)
            if rule is not None
            else policy.scan(value, "form", marks)
        )
        changed = changed or new != value
        kept.append((name, new))
    return urlencode(kept, quote_via=quote).encode() if changed else None


_BOUNDARY = re.compile(r'boundary="?([^";]+)"?', re.I)
_PART_NAME = re.compile(r'(?:^|;)\s*name="([^"]*)"', re.I)


def _redact_multipart(
    raw: str, content_type: str, policy: Policy, marks: Placeholders
) -> str | None:
    """A multipart body (as latin-1 text) with each part under a credential name replaced whole
    and the other parts scanned by format; None if it is not multipart as declared."""
    found = _BOUNDARY.search(content_type)
    if found is None:
        return None
    delimiter = "--" + found.group(1)
    pieces = raw.split(delimiter)
    if len(pieces) < 3:
        return None
    out = [pieces[0]]
    for piece in pieces[1:-1]:
        head, separator, content = piece.partition("\r\n\r\n")
        if not separator:
            out.append(policy.scan(piece, "multipart", marks))
            continue
        trailer = "\r\n" if content.endswith("\r\n") else ""
        value = content[: len(content) - len(trailer)]
        disposition = next(
            (line for line in head.split("\r\n") if line.lower().startswith("content-disposition")),
            "",
        )
        named = _PART_NAME.search(disposition)
        rule = policy.name_rule(named.group(1), policy.params, "param") if named else None
        if rule is not None:
            value = marks.replace(value, "multipart", rule)
        else:
            value = policy.scan(value, "multipart", marks)
        out.append(f"{policy.scan(head, 'multipart', marks)}{separator}{value}{trailer}")
    out.append(pieces[-1])
    return delimiter.join(out)


def _is_xml(media: str, text: str) -> bool:
    if media.endswith(("/xml", "+xml")):
        return True
    return media in ("", "text/plain") and text.lstrip()[:1] == "<"


def _redact_text(text: str, media: str, policy: Policy, marks: Placeholders) -> bytes | None:
    """A text body other than JSON, a form or multipart: XML and YAML by their parsers, anything
    else (or what does not parse) by its assignment lines and the format scan."""
    if _is_xml(media, text):
        document = redact_xml(text, policy, marks)
        if document is not None:
            return None if document == text else document.encode()
    if "yaml" in media:
        loaded = load_yaml(text)
        if loaded is not None:
            walker = _JsonWalker(policy, marks)
            redacted = walker.walk(loaded, ())
            return dump_yaml(redacted).encode() if walker.changed else None
    loose = redact_elements(redact_lines(text, policy, marks), policy, marks)
    scanned = policy.scan(loose, "body", marks)
    return None if scanned == text else scanned.encode()


def _redact_decoded(
    decoded: bytes, content_type: str, policy: Policy, marks: Placeholders, path: str
) -> bytes | None:
    """The redacted bytes of a decoded body, None if nothing changed."""
    media = content_type.split(";")[0].strip().lower()
    redacted: Any = _NOT_JSON
    try:
        text = decoded.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None and ("json" in media or (not media and text.lstrip()[:1] in ("{", "["))):
        redacted = _redact_json(text, policy, marks)
    elif text is not None and media == "application/x-www-form-urlencoded":
        redacted = _redact_form(text, policy, marks, path)
    if redacted is not _NOT_JSON:
        return cast(bytes | None, redacted)
    if media.startswith("multipart/"):
        # latin-1 maps bytes to characters one to one, so any body scans with ASCII patterns.
        raw = decoded.decode("latin-1")
        multipart = _redact_multipart(raw, content_type, policy, marks)
        if multipart is not None:
            return multipart.encode("latin-1") if multipart != raw else None
    if text is not None:
        return _redact_text(text, media, policy, marks)
    sniffed = decode_sniffed(decoded)
    if sniffed is not None:  # compressed without saying so: what it holds is redacted
        return _redact_decoded(sniffed[0], "", policy, marks, path)
    raw = decoded.decode("latin-1")
    scanned = policy.scan(raw, "body", marks)
    return scanned.encode("latin-1") if scanned != raw else None


def redact_body(
    body: bytes,
    headers: list[tuple[str, str]],
    policy: Policy,
    marks: Placeholders,
    *,
    path: str = "",
) -> tuple[bytes, list[tuple[str, str]]]:
    """The body with its secrets replaced, and the headers that still describe it (`path`
    tells an OAuth token exchange's form)."""
    if not body:
        return body, headers
    decoded = decode_content(body, _header(headers, "content-encoding"))
    if decoded is None:
        return body, headers
    content_type = _header(headers, "content-type") or ""
    redacted = _redact_decoded(decoded, content_type, policy, marks, path)
    if redacted is None:
        return body, headers
    if decoded is not body:
        # The compressed bytes held the secret too: an echo of them must be scrubbed.
        placeholder = marks.replace(
            base64.b64encode(body).decode("ascii"), "body", COMPRESSED_BODY_RULE
        )
        # Its bytes as text, for the spelling a JSON echo gives them (`"\u001f\u008b…"`).
        marks.echoed_as(body.decode("latin-1"), placeholder)
    kept = [(k, v) for k, v in headers if k.lower() not in ("content-encoding", "content-length")]
    return redacted, kept
