"""What counts as a credential, and what replaces it (DESIGN §4, default-deny).

Names: a header, query parameter, form field, multipart part or JSON field is a credential when
one of the words of its name (split at `-`, `_`, `.`, spaces and camelCase) belongs to a
credential family (password: `pass`/`passwd`/`pwd`/`pw`/`passcode`/`passphrase`; secret; token(s);
key; auth; cookie; credential(s); signature/`sig`; session), or a word ends in a strong one
(`authtoken`, `jsessionid`, `userpassword`). Words, not substrings: `keywords`, `author`,
`passenger`, `compass` are ordinary fields, and `token` next to a counting word (`max_tokens`,
`token_count`) is a number; `api_key`, `X-Goog-Api-Key`, `accessToken`, `X-Api-Pass` and
`Ocp-Apim-Subscription-Key` are credentials. OAuth's `code` and `state` are credentials on a
callback-shaped request only (`oauth_callback`).

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
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from urllib.parse import unquote

from groundhog.protocol.surrogates import ISSUED_PREFIX, shape_of, surrogate_digest

# Word families (DESIGN §4): each set holds the spellings of one family, so a rule fires on
# `pwd` as it does on `password`, on `tokens` as on `token`, on `sig` as on `signature`.
# Short spellings (`pw`, `pass`, `sig`, `key`) match as whole words only: `compass`,
# `passenger`, `keyboard` and `signal` are words of their own.
CREDENTIAL_FAMILIES: dict[str, frozenset[str]] = {
    "password": frozenset(
        {"password", "passwords", "passwd", "pwd", "pw", "pass", "passcode", "passphrase"}
    ),
    "secret": frozenset({"secret", "secrets"}),
    "token": frozenset({"token", "tokens"}),
    "key": frozenset({"key", "apikey", "privatekey", "accesskey", "secretkey"}),
    "auth": frozenset({"auth", "authorization", "authentication", "oauth"}),
    "cookie": frozenset({"cookie", "cookies"}),
    "credential": frozenset({"credential", "credentials", "creds"}),
    "signature": frozenset({"signature", "signatures", "sig"}),
    "session": frozenset({"session", "sessid", "sessionid"}),
}
CREDENTIAL_WORDS = frozenset(word for family in CREDENTIAL_FAMILIES.values() for word in family)
# A word ending in one of these is a credential too (`authtoken`, `phpsessid`, `xapikey`,
# `userpassword`). `pass` and `key` are not suffixes: `compass` and `monkey` are not secrets.
CREDENTIAL_SUFFIXES = (
    "token",
    "tokens",
    "secret",
    "password",
    "passwd",
    "passcode",
    "passphrase",
    "apikey",
    "privatekey",
    "accesskey",
    "secretkey",
    "sessid",
    "sessionid",
    "signature",
)
# `token` counts things in model APIs (`max_tokens`, `prompt_tokens`, `token_count`,
# `tokens_per_second`, `token_ids`): next to one of these words it is a number, not a secret.
TOKEN_COUNT_WORDS = frozenset(
    {
        "max",
        "min",
        "total",
        "prompt",
        "completion",
        "input",
        "output",
        "cached",
        "reasoning",
        "audio",
        "text",
        "image",
        "num",
        "n",
        "count",
        "counts",
        "usage",
        "limit",
        "limits",
        "budget",
        "used",
        "remaining",
        "per",
        "ids",
        "details",
        "accepted",
        "rejected",
        "thinking",
        "context",
    }
)
_COUNTED = frozenset({"token", "tokens"})
# OAuth's authorization `code` and `state` are ordinary words elsewhere (`?code=python`,
# `"state": "open"`): they are credentials on a callback-shaped request only, one whose path
# says callback/oauth/redirect/authorize, or that carries both, or a token exchange's form.
OAUTH_CALLBACK_NAMES = frozenset({"code", "state", "code_verifier"})
_CALLBACK_PATH = re.compile(r"callback|oauth|redirect|authori[sz]e|/auth(?:/|$)|signin", re.I)
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
    words = name_words(name)
    for index, word in enumerate(words):
        if word in _COUNTED and TOKEN_COUNT_WORDS.intersection(words[:index] + words[index + 1 :]):
            continue
        if word in CREDENTIAL_WORDS:
            return word
        for suffix in CREDENTIAL_SUFFIXES:
            if word.endswith(suffix):
                return suffix
    return None


def oauth_callback(path: str, names: Iterable[str]) -> bool:
    """Whether a request is shaped like an OAuth callback or token exchange, so its `code`
    and `state` are credentials (an authorization code is a bearer credential until used)."""
    present = set(names)
    if "code" not in present and "state" not in present and "code_verifier" not in present:
        return False
    if "code_verifier" in present or {"code", "state"} <= present:
        return True
    return "grant_type" in present or bool(_CALLBACK_PATH.search(path))


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
            return f"[redacted:{slug}]"
        carried = surrogate_digest(value)
        if carried is not None:
            # A surrogate the tape served for a token the world issued: keyed as that token.
            return f"[redacted:{slug}:{carried}]"
        placeholder = f"[redacted:{slug}:{self.digest(value)}]"
        self.echoed_as(value, placeholder)
        return placeholder

    def digest(self, value: str) -> str:
        mac = hmac.new(self.key, value.encode("utf-8", "surrogatepass"), hashlib.sha256)
        return mac.hexdigest()[:DIGEST_HEX]

    def issued(self, value: str, where: str, *, named_format: bool) -> str:
        """The stored form of a credential the world issued: keyed like the same value in a
        request, with its shape, so a replaying branch is served a surrogate of it
        (groundhog/protocol/surrogates.py)."""
        if not value or PLACEHOLDER.fullmatch(value) or surrogate_digest(value) is not None:
            return value
        self.findings.append(Finding(where, "issued"))
        shape = shape_of(value, named_format=named_format)
        return f"[redacted:{ISSUED_PREFIX}{shape}:{self.digest(value)}]"

    def echoed_as(self, value: str, placeholder: str) -> None:
        """Scrub echoes of `value` by `placeholder` (a part of a value replaced whole, too)."""
        if len(value) >= MIN_ECHO and not PLACEHOLDER.fullmatch(value):
            self.secrets.append((value, placeholder))


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
            rule = "issued" if match.group(1).startswith(ISSUED_PREFIX) else match.group(1)
            counts[rule] = counts.get(rule, 0) + 1
    return dict(sorted(counts.items()))
