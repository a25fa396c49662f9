"""The audit's second opinion: detect-secrets' plugins over a tape's stored text (issue 55).

An audit that runs the same rules as redaction can only find what redaction already knew: a
format nobody wrote a row for, a name family nobody thought of, a rule a tape switched off all
pass both. So `tape audit`, which gates export and publish, also asks detect-secrets (Yelp's
maintained scanner, written by people who do only this), used as a library: each plugin's
`analyze_string` over every line, then detect-secrets' own heuristic filters (sequential
strings, UUIDs, templates, `$VARS`, indirect references, id-like values). Nothing is verified
against a vendor (verification would send the value to the live network).

Left out, each for a reason: the two entropy plugins (every digest, ETag and id a world hands
out is a quoted high-entropy string; our own entropy rule covers bare random values) and the
public-IP plugin (an address is not a credential). Placeholders (`[redacted:…]`) and the sandbox
marker are what redaction left, never a finding. JSON is re-indented one member a line first, so
the keyword plugin reads each `"name": value` with its name beside it; long lines are read in
overlapping windows so a hostile line cannot make a plugin's regex run long.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from functools import cache
from typing import Any

from engine.redaction_rules import PLACEHOLDER, PLACEHOLDER_MARK

SECOND_OPINION_PREFIX = "detect-secrets-"
LEFT_OUT = frozenset({"Base64 High Entropy String", "Hex High Entropy String", "Public IP (ipv4)"})
WINDOW = 4096
OVERLAP = 256
_SANDBOX_MARKER = "[sandbox]"
_SLUG = re.compile(r"[^a-z0-9]+")


def rule_name(secret_type: str) -> str:
    """`Secret Keyword` -> `detect-secrets-secret-keyword`."""
    return SECOND_OPINION_PREFIX + _SLUG.sub("-", secret_type.lower()).strip("-")


@cache
def _plugins() -> tuple[tuple[str, Any, tuple[dict[Any, int] | None, ...]], ...]:
    """(rule, plugin, the denylists to try): the keyword plugin reads quoted values (code, JSON)
    and unquoted ones (INI, `.env`, YAML, headers)."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins import keyword

    plugins = []
    mapping: dict[str, Any] = get_mapping_from_secret_type_to_class()
    for secret_type, plugin_class in sorted(mapping.items()):
        if secret_type in LEFT_OUT:
            continue
        attempts: tuple[dict[Any, int] | None, ...] = (None,)
        if issubclass(plugin_class, keyword.KeywordDetector):
            attempts = (
                keyword.QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP,
                keyword.CONFIG_DENYLIST_REGEX_TO_GROUP,
            )
        plugins.append((rule_name(secret_type), plugin_class(), attempts))
    return tuple(plugins)


def _dismissed(secret: str, line: str, plugin: Any) -> bool:
    from detect_secrets.filters import heuristic

    if PLACEHOLDER_MARK in secret or _SANDBOX_MARKER in secret:
        return True
    if PLACEHOLDER_MARK in line and secret not in PLACEHOLDER.sub("", line):
        return True  # found only inside what redaction left
    return bool(
        heuristic.is_sequential_string(secret)
        or heuristic.is_potential_uuid(secret)
        or heuristic.is_templated_secret(secret)
        or heuristic.is_prefixed_with_dollar_sign(secret)
        or heuristic.is_indirect_reference(line)
        or heuristic.is_likely_id_string(secret, line, plugin)
        or heuristic.is_not_alphanumeric_string(secret)
    )


def _lines(text: str) -> Iterator[str]:
    stripped = text.lstrip()
    if stripped[:1] in ("{", "["):
        with contextlib.suppress(ValueError, RecursionError):
            text = json.dumps(json.loads(text), indent=0, ensure_ascii=False)
    for line in text.splitlines():
        if len(line) <= WINDOW:
            yield line
            continue
        for start in range(0, len(line), WINDOW - OVERLAP):
            yield line[start : start + WINDOW]


def second_opinion(text: str) -> set[str]:
    """The detect-secrets rules that find a secret in `text` (rule names only, never values)."""
    found: set[str] = set()
    for line in _lines(text):
        if len(line.strip()) < 6:
            continue
        for rule, plugin, attempts in _plugins():
            if rule in found:
                continue
            for denylist in attempts:
                kwargs = {} if denylist is None else {"denylist_regex_to_group": denylist}
                secrets = plugin.analyze_string(line, **kwargs)
                if any(not _dismissed(secret, line, plugin) for secret in secrets):
                    found.add(rule)
                    break
    return found
