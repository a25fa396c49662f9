"""Scrubbing a response of the secrets its request carried (DESIGN §4: "echoed secrets").

Echo services, error pages ("invalid key abc…") and debug endpoints send a request's
credentials back; recorded as they are, the credential would sit on the tape in the response
blob. Between `/v1/resolve` (which knows the request's raw secrets) and `/v1/record` (which
stores the response) the secrets wait here, in memory only, keyed by the forward's ticket; the
record replaces each echo — raw, URL-encoded, base64, JSON-escaped once or twice, and each
long line of a multi-line secret — by the request's own placeholder. A `Set-Cookie` value
becomes a keyed placeholder in `engine.redaction.redact_response_headers`.

Memory only means a record that reaches another replica (or a restarted one) is stored without
this pass; the request side is unaffected. Bodies in gzip, deflate, brotli and zstd are
scrubbed and encoded again (engine/content_coding.py); any other encoding is stored as
received, and `tape audit` reads what it can.
"""

from __future__ import annotations

import base64
import json
import threading
from collections import OrderedDict
from collections.abc import Sequence
from urllib.parse import quote, quote_plus

from engine.content_coding import decode_content, decode_sniffed, encode_content

Secrets = tuple[tuple[str, str], ...]
MAX_PENDING = 4096
MIN_ECHO_LINE = 16
# A compressed payload inside a compressed answer is opened this deep, no deeper.
MAX_NESTED_CODINGS = 2


class EchoBook:
    """Tickets of forwards in flight -> the raw secrets of their requests (bounded, LRU)."""

    def __init__(self, capacity: int = MAX_PENDING) -> None:
        self.capacity = capacity
        self._entries: OrderedDict[str, Secrets] = OrderedDict()
        self._lock = threading.Lock()

    def remember(self, ticket: str, secrets: Secrets) -> None:
        if not secrets:
            return
        with self._lock:
            self._entries[ticket] = secrets
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)

    def take(self, ticket: str) -> Secrets:
        with self._lock:
            return self._entries.pop(ticket, ())

    def peek(self, ticket: str) -> Secrets:
        """The secrets of a ticket still in flight (a stream's head), kept for its record."""
        with self._lock:
            return self._entries.get(ticket, ())


def echo_forms(secret: str) -> list[str]:
    """The spellings in which a secret is echoed back."""
    raw = secret.encode("utf-8", "surrogatepass")
    escaped = json.dumps(secret)[1:-1]
    forms = {
        secret,
        quote(secret, safe=""),
        quote_plus(secret),
        base64.b64encode(raw).decode("ascii"),
        base64.urlsafe_b64encode(raw).decode("ascii").rstrip("="),
        escaped,
        json.dumps(escaped)[1:-1],  # a world echoing the request's JSON text inside its own
    }
    # A multi-line secret (a PEM key) may come back re-wrapped or re-escaped: each of its long
    # lines is a secret of its own.
    forms.update(line for line in secret.splitlines() if len(line) >= MIN_ECHO_LINE)
    return sorted(forms, key=len, reverse=True)


def _replacements(secrets: Secrets) -> list[tuple[str, str]]:
    pairs = [(form, placeholder) for secret, placeholder in secrets for form in echo_forms(secret)]
    return sorted(pairs, key=lambda pair: len(pair[0]), reverse=True)


def _scrub_text(text: str, pairs: list[tuple[str, str]]) -> str:
    for form, placeholder in pairs:
        if form in text:
            text = text.replace(form, placeholder)
    return text


def _scrub_bytes(decoded: bytes, pairs: list[tuple[str, str]], depth: int = 0) -> bytes | None:
    """The scrubbed bytes, None if unchanged; a payload that is itself compressed (an echo of a
    gzip request body) is scrubbed inside and compressed again the same way."""
    inner = decode_sniffed(decoded) if depth < MAX_NESTED_CODINGS else None
    if inner is not None:
        scrubbed_inner = _scrub_bytes(inner[0], pairs, depth + 1)
        return None if scrubbed_inner is None else encode_content(scrubbed_inner, inner[1])
    text = decoded.decode("latin-1")  # one character per byte: offsets and bytes survive
    scrubbed = _scrub_text(text, pairs)
    return None if scrubbed == text else scrubbed.encode("latin-1")


def scrub_response(
    headers: Sequence[Sequence[str]], body: bytes, secrets: Secrets
) -> tuple[list[list[str]], bytes, int]:
    """Headers and body with every echo replaced; the number of spellings replaced."""
    if not secrets:
        return [list(pair) for pair in headers], body, 0
    pairs = _replacements(secrets)
    hits = 0
    kept = []
    for name, value in headers:
        scrubbed = _scrub_text(value, pairs)
        hits += scrubbed != value
        kept.append([name, scrubbed])
    encoding = next((v for k, v in kept if k.lower() == "content-encoding"), "") or ""
    decoded = decode_content(body, encoding)
    if decoded is None:
        return kept, body, hits
    scrubbed_pairs = [(form.encode().decode("latin-1"), placeholder) for form, placeholder in pairs]
    new_decoded = _scrub_bytes(decoded, scrubbed_pairs)
    if new_decoded is None:
        return kept, body, hits
    new_body = encode_content(new_decoded, encoding)
    kept = [[k, str(len(new_body))] if k.lower() == "content-length" else [k, v] for k, v in kept]
    return kept, new_body, hits + 1
