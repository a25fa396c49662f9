"""Secret values recognised by their format, wherever they appear in a request (DESIGN §4).

A credential does not always sit under a name that says so: a key can be a path segment, part
of a free-text body, or a header nobody thought to list. The formats are data
(`engine/secret_format_table.py`, one row each with an example and a near miss); this module
turns the rows into one scanner, and adds the entropy rule for bare random values that no row
names (detect-secrets' Shannon entropy, over runs of token characters).

Every pattern is ASCII, so it runs unchanged over header values, query values, path segments,
JSON strings and raw bodies (decoded as latin-1, which keeps byte offsets).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from engine.admin_regex import compile_admin_regex
from engine.secret_format_table import FORMAT_TABLE

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
    """One format as the scanner runs it: `token` scope inside runs of token characters,
    `text` scope over the whole text where one of `literals` occurs (a tape's own patterns:
    `text` scope, no literal)."""

    rule: str
    pattern: str
    scope: str = "text"
    literals: tuple[str, ...] = ()


@cache
def builtin_formats() -> tuple[Format, ...]:
    """Every built-in format rule, in the table's order."""
    return tuple(Format(row.rule, row.pattern, row.scope, row.literals) for row in FORMAT_TABLE)


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


_HAS_LETTER = re.compile(r"[A-Za-z]")


def _secret_span(match: re.Match[str], rule: str) -> tuple[int, int, str]:
    if "secret" in match.re.groupindex:
        return match.start("secret"), match.end("secret"), rule
    return match.start(), match.end(), rule


class FormatScanner:
    """Finds secret values by format: named formats first, then the entropy rule over what no
    named format claimed (so a key inside a long run is named for what it is)."""

    def __init__(
        self, formats: tuple[Format, ...], *, entropy: bool = True, extra: tuple[Format, ...] = ()
    ) -> None:
        # Token formats that open with a literal prefix share one alternation (the regex
        # engine skips to the prefix); one behind a literal it must contain runs alone, and
        # only on tokens holding it.
        self.token_regex, self.token_rules = _alternation(
            [f for f in formats if f.scope == "token" and not f.literals]
        )
        self.gated = [
            (f.literals, re.compile(f.pattern), f.rule)
            for f in formats
            if f.scope == "token" and f.literals
        ]
        # (literals, regex, rule): text formats, each where one of its literals occurs; one
        # with a `secret` group replaces only that group.
        self.whole = [
            (f.literals, re.compile(f.pattern), f.rule) for f in formats if f.scope == "text"
        ]
        self.entropy = entropy
        # A tape's own patterns may be short and span any characters: run on the whole text,
        # on RE2, so an admin's pattern cannot backtrack for seconds (engine/admin_regex.py).
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
            if any(literal in text for literal in literals):
                found += [_secret_span(match, rule) for match in regex.finditer(text)]
        for candidate in _CANDIDATE.finditer(text):
            found += self._in_token(candidate.group(), candidate.start())
        if len(found) > 1:
            found.sort(key=lambda item: (item[0], -item[1]))  # at one start, the longest wins
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
        for literals, regex, rule in self.gated:
            if any(literal in token for literal in literals):
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
