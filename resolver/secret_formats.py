"""Secret values recognised by their format, wherever they appear in a request (DESIGN §4).

A credential does not always sit under a name that says so: a key can be a path segment, part
of a free-text body, or a header nobody thought to list. The provider formats come from
detect-secrets (Yelp's maintained scanner; its plugins' `denylist` regexes), so new formats
arrive with its releases instead of from a list written from memory. Only its context-free
plugins are taken: the keyword, contextual (`aws ... key = "..."`) and file-format plugins need
a source file around the value, and are covered here by the name rules of `resolver/redaction`.
detect-secrets lacks a few formats that matter for agent traffic (today's `sk-proj-` /
`sk-ant-` model keys, Google `AIza` keys) and has no entropy rule for bare values, so those
few are added below, each with its reason.

Every pattern is ASCII, so it runs unchanged over header values, query values, path segments,
JSON strings and raw bodies (decoded as latin-1, which keeps byte offsets).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from resolver.admin_regex import compile_admin_regex

# detect-secrets plugin module -> (rule name, plugin class). Context-free plugins only.
_DETECT_SECRETS_PLUGINS = (
    ("aws", "AWSKeyDetector", "aws-access-key"),
    ("github_token", "GitHubTokenDetector", "github-token"),
    ("gitlab_token", "GitLabTokenDetector", "gitlab-token"),
    ("jwt", "JwtTokenDetector", "jwt"),
    ("openai", "OpenAIDetector", "openai-legacy-key"),
    ("slack", "SlackDetector", "slack-token"),
    ("stripe", "StripeDetector", "stripe-key"),
    ("sendgrid", "SendGridDetector", "sendgrid-key"),
    ("discord", "DiscordBotTokenDetector", "discord-token"),
    ("telegram_token", "TelegramBotTokenDetector", "telegram-token"),
    ("pypi_token", "PypiTokenDetector", "pypi-token"),
    ("square_oauth", "SquareOAuthDetector", "square-oauth"),
    ("mailchimp", "MailchimpDetector", "mailchimp-key"),
    ("azure_storage_key", "AzureStorageKeyDetector", "azure-storage-key"),
    ("private_key", "PrivateKeyDetector", "private-key"),
)

# Formats detect-secrets 1.5 does not know. Its OpenAI rule only matches the retired
# `T3BlbkFJ` keys; project, service-account and Anthropic keys look like these.
SUPPLEMENT = (
    ("model-api-key", r"sk-(?:proj-|svcacct-|admin-|ant-(?:api|admin)\d\d-)?[A-Za-z0-9_-]{20,}"),
    ("google-api-key", r"AIza[0-9A-Za-z_-]{35}"),
    ("slack-token", r"xox[abposre]-[A-Za-z0-9-]{10,}"),
    ("huggingface-token", r"hf_[A-Za-z0-9]{30,}"),
)

# PEM private keys whole, header to footer (detect-secrets' rule names only the header line, so
# the key's body would stay): raw newlines, or `\n` escapes inside a JSON string. A block cut
# short ends at the first character that cannot be in one.
PEM_PRIVATE_KEY = (
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[A-Za-z0-9+/=\s\\:,.()-]*?"
    r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|(?=[^A-Za-z0-9+/=\s\\:,.()-])|\Z)"
)
# Webhook and bot URLs of chat and CI services carry their secret in a path segment; only that
# segment (group `secret`) is replaced, so the host and the ids before it stay readable. Each
# runs only on text holding its literal. Slack's is in detect-secrets with IGNORECASE, which
# the context-free import above skips.
WEBHOOK_SEGMENTS = (
    (
        "slack-webhook",
        "/services/T",
        r"/services/T[A-Z0-9_]{6,}/B[A-Z0-9_]{6,}/(?P<secret>[A-Za-z0-9_]{16,})",
    ),
    (
        "slack-webhook",
        "/workflows/T",
        r"/workflows/T[A-Z0-9_]{6,}/A[A-Z0-9_]{6,}/\d+/(?P<secret>[A-Za-z0-9_]{16,})",
    ),
    (
        "discord-webhook",
        "/webhooks/",
        r"/api/(?:v\d+/)?webhooks/\d{15,22}/(?P<secret>[A-Za-z0-9_-]{40,100})",
    ),
    ("telegram-bot-token", "/bot", r"/bot(?P<secret>\d{6,12}:[A-Za-z0-9_-]{30,50})"),
    ("teams-webhook", "/IncomingWebhook/", r"/IncomingWebhook/(?P<secret>[0-9a-f]{32})"),
    ("zapier-webhook", "/hooks/catch/", r"/hooks/catch/\d+/(?P<secret>[A-Za-z0-9]{5,})"),
    ("ifttt-webhook", "/with/key/", r"/with/key/(?P<secret>[A-Za-z0-9_-]{16,})"),
    ("mattermost-webhook", "/hooks/", r"/hooks/(?P<secret>[a-z0-9]{26})(?![A-Za-z0-9])"),
    (
        "gitlab-trigger",
        "/trigger/pipeline",
        r"/trigger/pipeline\?(?:[^#\s]*&)?token=(?P<secret>[A-Za-z0-9_-]{16,})",
    ),
)

# A long run of token characters is a secret when it mixes cases and digits and carries
# more than HIGH_ENTROPY_BITS bits per character, by detect-secrets' own Shannon entropy
# (`Base64HighEntropyString.calculate_shannon_entropy`, whose default limit is 4.5 over any
# quoted base64 string). Here the run must be 32 or more of [A-Za-z0-9_-], hold a part of 20
# or more between `_`/`-`, and mix lower case, upper case and digits; over such runs 4.3 bits
# catches random 32-character keys (about 4.6-4.9 bits) that 4.5 would miss one time in five.
# Words, slugs, identifiers, hex digests (at most 4 bits, and never mixed case: detect-secrets'
# hex plugin, limit 3.0, is not used, so SHA digests, ETags and trace ids stay readable) and
# UUIDs do not qualify. `/`, `+` and `=` split runs, so a path is never one token. A value
# that does qualify is still keyed (its placeholder is an HMAC of it), so two siblings that
# send the same id share as before.
HIGH_ENTROPY = "high-entropy"
_LONG_TOKEN = r"[A-Za-z0-9_-]{32,}"
HIGH_ENTROPY_BITS = 4.3


@dataclass(frozen=True)
class Format:
    rule: str
    pattern: str


def _detect_secrets_formats() -> list[Format]:
    import importlib

    found: list[Format] = []
    for module_name, class_name, rule in _DETECT_SECRETS_PLUGINS:
        module = importlib.import_module(f"detect_secrets.plugins.{module_name}")
        plugin = getattr(module, class_name)
        for regex in plugin.denylist:
            if regex.flags & (re.IGNORECASE | re.VERBOSE):
                continue  # a contextual pattern (it needs the words around the value)
            found.append(Format(rule, regex.pattern))
    return found


@cache
def builtin_formats() -> tuple[Format, ...]:
    """Every built-in format rule, detect-secrets' first."""
    formats = _detect_secrets_formats()
    formats += [Format(rule, pattern) for rule, pattern in SUPPLEMENT]
    formats.append(Format("private-key", PEM_PRIVATE_KEY))
    formats += [Format(rule, pattern) for rule, _literal, pattern in WEBHOOK_SEGMENTS]
    return tuple(formats)


def builtin_rule_names() -> list[str]:
    return sorted({fmt.rule for fmt in builtin_formats()})


@cache
def _entropy_plugin() -> Any:
    from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString

    return Base64HighEntropyString()


def shannon_bits(text: str) -> float:
    """Bits per character, as detect-secrets computes it for its entropy plugins."""
    return float(_entropy_plugin().calculate_shannon_entropy(text))


def looks_random(token: str) -> bool:
    """The high-entropy test for one long run of token characters: words joined by `_`/`-`
    (identifiers, titles) are not random even when their letters are varied."""
    longest = max(len(part) for part in re.split(r"[_-]", token))
    return (
        longest >= 20
        and any(c.isdigit() for c in token)
        and any(c.islower() for c in token)
        and any(c.isupper() for c in token)
        and shannon_bits(token) > HIGH_ENTROPY_BITS
    )


# Candidate tokens: runs of the characters secrets are made of (dots for JWTs, colons for bot
# tokens). Only runs of MIN_TOKEN or more characters meet the format alternation, so ordinary
# header values and prose cost one linear scan.
MIN_TOKEN = 15
_CANDIDATE = re.compile(r"[A-Za-z0-9_.:-]{15,}")
# Formats whose values hold characters outside a token, each behind a literal it must contain.
_WHOLE_TEXT_LITERALS = {
    "private-key": ("PRIVATE KEY", "PuTTY"),
    "azure-storage-key": ("AccountKey=",),
}
# Whole-text formats whose match opens with the name of its value: only the value is the secret
# (a world that echoes the bare key must find it scrubbed too).
_NAME_BEFORE_VALUE = {"azure-storage-key": "AccountKey="}
_ENTROPY_RUN = re.compile(r"[A-Za-z0-9_-]{32,}")
_CAPTURING = re.compile(r"(?<!\\)\((?!\?)")
# A named format's lazy tail (detect-secrets' JWT) is extended over the rest of its run.
_TAIL = re.compile(r"[A-Za-z0-9_.-]*")


def _alternation(formats: list[Format]) -> tuple[re.Pattern[str] | None, dict[str, str]]:
    rules: dict[str, str] = {}
    parts = []
    for index, fmt in enumerate(formats):
        group = f"f{index}"
        rules[group] = fmt.rule
        # Inner groups become non-capturing so `lastgroup` names the matching format.
        parts.append(f"(?P<{group}>{_CAPTURING.sub('(?:', fmt.pattern)})")
    return (re.compile("|".join(parts)) if parts else None), rules


# Formats that start with a character class defeat the regex engine's first-character skip for
# the whole alternation; each runs alone, and only on tokens holding the literal it needs.
_GATED = {"mailchimp-key": "-us", "telegram-token": ":", "discord-token": "."}
_HAS_LETTER = re.compile(r"[A-Za-z]")


class FormatScanner:
    """Finds secret values by format: named formats first, then the entropy rule over what no
    named format claimed (so a key inside a long run is named for what it is)."""

    def __init__(
        self, formats: tuple[Format, ...], *, entropy: bool = True, extra: tuple[Format, ...] = ()
    ) -> None:
        segment_patterns = {pattern: literal for _rule, literal, pattern in WEBHOOK_SEGMENTS}
        # (literal, regex, rule): formats whose secret is one group of a longer match.
        self.segments = [
            (segment_patterns[f.pattern], re.compile(f.pattern), f.rule)
            for f in formats
            if f.pattern in segment_patterns
        ]
        token_formats = [
            f
            for f in formats
            if f.rule not in _WHOLE_TEXT_LITERALS
            and f.rule not in _GATED
            and f.pattern not in segment_patterns
        ]
        self.gated = [
            (_GATED[f.rule], re.compile(f.pattern), f.rule) for f in formats if f.rule in _GATED
        ]
        whole = [f for f in formats if f.rule in _WHOLE_TEXT_LITERALS]
        self.token_regex, self.token_rules = _alternation(token_formats)
        # The PEM block is listed last but must win over detect-secrets' header-only rules.
        whole.sort(key=lambda f: f.pattern != PEM_PRIVATE_KEY)
        self.whole = [
            (literals, re.compile("|".join(f.pattern for f in whole if f.rule == rule)), rule)
            for rule, literals in _WHOLE_TEXT_LITERALS.items()
            if any(f.rule == rule for f in whole)
        ]
        self.entropy = entropy
        # A tape's own patterns may be short and span any characters: run on the whole text,
        # on RE2, so an admin's pattern cannot backtrack for seconds (resolver/admin_regex.py).
        self.extra = [(compile_admin_regex(fmt.pattern), fmt.rule) for fmt in extra]

    def find(self, text: str) -> list[tuple[int, int, str]]:
        """(start, end, rule) of every secret in `text`, in order, not overlapping."""
        found: list[tuple[int, int, str]] = []
        for regex, rule in self.extra:
            found += [
                (m.start(), m.end(), rule) for m in regex.finditer(text) if m.end() > m.start()
            ]
        if len(text) < MIN_TOKEN:
            return found
        for literals, regex, rule in self.whole:
            for literal in literals:
                if literal in text:
                    skip = len(_NAME_BEFORE_VALUE.get(rule, ""))
                    found += [(m.start() + skip, m.end(), rule) for m in regex.finditer(text)]
                    break
        for literal, regex, rule in self.segments:
            if literal in text:
                found += [(m.start("secret"), m.end("secret"), rule) for m in regex.finditer(text)]
        for candidate in _CANDIDATE.finditer(text):
            found += self._in_token(candidate.group(), candidate.start())
        if len(found) > 1:
            found.sort()
            kept = [found[0]]
            for item in found[1:]:
                if item[0] >= kept[-1][1]:
                    kept.append(item)
            found = kept
        return found

    def _in_token(self, token: str, offset: int) -> list[tuple[int, int, str]]:
        found: list[tuple[int, int, str]] = []
        if not _HAS_LETTER.search(token):
            return found  # numbers, dates, versions: every format holds a letter
        for literal, regex, rule in self.gated:
            if literal in token:
                found += [
                    (offset + m.start(), offset + m.end(), rule) for m in regex.finditer(token)
                ]
        if self.token_regex is not None:
            for match in self.token_regex.finditer(token):
                tail = _TAIL.match(token, match.end())
                assert tail is not None  # the tail pattern matches the empty string
                end = tail.end()
                found.append(
                    (offset + match.start(), offset + end, self.token_rules[match.lastgroup or ""])
                )
        if self.entropy and len(token) >= 32:
            for match in _ENTROPY_RUN.finditer(token):
                start, end = match.start() + offset, match.end() + offset
                if any(s < end and start < e for s, e, _rule in found):
                    continue
                if looks_random(match.group()):
                    found.append((start, end, HIGH_ENTROPY))
        return found
