"""What counts as a credential, and what replaces it (DESIGN §4, default-deny).

Names: a header, query parameter, form field or JSON field is a credential when one of the
words of its name (split at `-`, `_`, `.`, spaces and camelCase) is a credential word, or a word
ends in a strong one (`authtoken`, `jsessionid`). Words, not substrings: `keywords`, `author`
and `max_tokens` are ordinary fields, `api_key`, `X-Goog-Api-Key`, `accessToken` and
`Ocp-Apim-Subscription-Key` are credentials.

Placeholders: `[redacted:RULE:HMAC]`, the HMAC-SHA256 of the value under the deployment's key,
cut to 16 hex digits. The same secret always yields the same placeholder, so requests still key
(and replay) the same way, different secrets never share one, and nobody without the data
directory's key can test a guess. Hosts whose credentials the tape declares interchangeable get
`[redacted:RULE]`, so every identity keys the same. A value that already is a placeholder is
left alone, so scrubbed bytes a worker sends back key as the original did.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from dataclasses import dataclass, field
from functools import lru_cache
from urllib.parse import unquote

CREDENTIAL_WORDS = frozenset(
    {
        "authorization",
        "auth",
        "cookie",
        "key",
        "apikey",
        "token",
        "secret",
        "password",
        "passwd",
        "passphrase",
        "session",
        "signature",
        "credential",
        "credentials",
    }
)
# A word ending in one of these is a credential too (`authtoken`, `phpsessid`, `xapikey`).
CREDENTIAL_SUFFIXES = ("token", "secret", "password", "passwd", "apikey", "sessid", "sessionid")
_WORD_BREAK = re.compile(r"[-_.\s]+|(?<=[a-z0-9])(?=[A-Z])")

PLACEHOLDER = re.compile(r"\[redacted:([A-Za-z0-9._-]+)(?::([0-9a-f]{16}))?\]")
PLACEHOLDER_MARK = "[redacted:"
DIGEST_HEX = 16
# Echoes shorter than this are not scrubbed from responses: replacing every "1234" in a body
# would corrupt answers, and a secret that short is no secret.
MIN_ECHO = 6


def name_words(name: str) -> list[str]:
    return [word.lower() for word in _WORD_BREAK.split(name) if word]


@lru_cache(maxsize=8192)
def credential_word(name: str) -> str | None:
    """The credential word in `name` (the rule that fires), or None (cached: names repeat)."""
    for word in name_words(name):
        if word in CREDENTIAL_WORDS:
            return word
        for suffix in CREDENTIAL_SUFFIXES:
            if word.endswith(suffix):
                return suffix
    return None


@dataclass(frozen=True)
class Finding:
    """One redaction: where (header, query, form, json, path, body) and which rule."""

    where: str
    rule: str


@dataclass
class Placeholders:
    """Makes placeholders for one request and remembers what it replaced (never persisted)."""

    key: bytes
    interchangeable: bool
    findings: list[Finding] = field(default_factory=list)
    # (secret, placeholder): the response scrubber replaces echoes of these.
    secrets: list[tuple[str, str]] = field(default_factory=list)

    def restamp(self, value: str, where: str, rule: str, *, served_rule: str) -> str:
        """`replace`, where `value` may be a keyed placeholder the tape served (`served_rule`'s:
        a cookie a sealed replay served as the stored `Set-Cookie`): it keys as the value it
        stands for did. A placeholder of any other rule is a value like any other."""
        stored = PLACEHOLDER.fullmatch(value)
        if stored is None or stored.group(1) != served_rule or stored.group(2) is None:
            return self.replace(value, where, rule) if stored is None else value
        self.findings.append(Finding(where, rule))
        slug = rule.replace(":", "-")
        return f"[redacted:{slug}]" if self.interchangeable else f"[redacted:{slug}:{stored[2]}]"

    def replace(self, value: str, where: str, rule: str, *, identity: bool = True) -> str:
        """The placeholder for `value` found by `rule`; `identity` False keeps it keyed even on
        interchangeable hosts (an entropy match may be a document id, not a credential)."""
        if not value or PLACEHOLDER.fullmatch(value):
            return value
        self.findings.append(Finding(where, rule))
        slug = rule.replace(":", "-")
        if self.interchangeable and identity:
            placeholder = f"[redacted:{slug}]"
        else:
            digest = hmac.new(self.key, value.encode("utf-8", "surrogatepass"), hashlib.sha256)
            placeholder = f"[redacted:{slug}:{digest.hexdigest()[:DIGEST_HEX]}]"
        if len(value) >= MIN_ECHO:
            self.secrets.append((value, placeholder))
        return placeholder


def without_identity(key_text: str) -> str:
    """`key_text` with every placeholder's digest dropped: two keys equal after this differ
    only in their credentials."""
    return PLACEHOLDER.sub(lambda m: f"[redacted:{m.group(1)}]", key_text)


def fired_rules(texts: list[str]) -> dict[str, int]:
    """How often each rule's placeholder appears in stored `texts` (for reports and exports)."""
    counts: dict[str, int] = {}
    for text in texts:
        if "%5Bredacted%3A" in text:  # a query value in a readable key is URL-quoted
            text = unquote(text)
        if PLACEHOLDER_MARK not in text:
            continue
        for match in PLACEHOLDER.finditer(text):
            counts[match.group(1)] = counts.get(match.group(1), 0) + 1
    return dict(sorted(counts.items()))
