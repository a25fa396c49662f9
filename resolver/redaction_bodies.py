"""Redaction inside request bodies: JSON at any depth, form fields, multipart parts, and text
of any other kind.

Bodies are where agents put passwords and keys most often (a login form, a JSON `password`
three levels down, a multipart `api_key` field, a key pasted into a prompt), and they are
stored as blobs that outlive the request. A JSON object or array under a credential name is
replaced whole: everything inside `"credentials": {...}` is the credential. A changed body is
stored decoded, so its `Content-Encoding` and `Content-Length` go; a body that cannot be
decoded (an unknown encoding) is left as sent and keys by its hash.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, quote, urlencode

from resolver.content_coding import decode_content
from resolver.redaction_rules import Placeholders, oauth_callback
from resolver.secret_formats import MIN_TOKEN

if TYPE_CHECKING:
    from resolver.redaction import Policy


def _header(headers: list[tuple[str, str]], name: str) -> str | None:
    return next((value for key, value in headers if key.lower() == name), None)


def _scalar_text(value: Any) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str | int | float):
        return str(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


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
            return {
                name: self.field(name, item, (*path, name) if tracked else path)
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
_NONE: frozenset[str] = frozenset()
_JSON_NAME = re.compile(r'"([^"\\]*)"\s*:')


def _json_may_hold_secrets(text: str, policy: Policy) -> bool:
    """A cheap look before the walk: a credential-looking field name or a secret format
    anywhere in the text. Most bodies hold neither and are never parsed here."""
    if policy.json_paths or policy.scanner.extra or "\\" in text:
        return True  # escapes could hide a name from the quick look: walk it
    names = set(_JSON_NAME.findall(text))
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
    if redacted is _NOT_JSON:
        # latin-1 maps bytes to characters one to one, so any body scans with ASCII patterns.
        raw = decoded.decode("latin-1")
        multipart = (
            _redact_multipart(raw, content_type, policy, marks)
            if media.startswith("multipart/")
            else None
        )
        scanned = multipart if multipart is not None else policy.scan(raw, "body", marks)
        redacted = scanned.encode("latin-1") if scanned != raw else None
    if redacted is None:
        return body, headers
    kept = [(k, v) for k, v in headers if k.lower() not in ("content-encoding", "content-length")]
    return redacted, kept
