"""Which redaction rules a tape declares and which fired, for its report and its export.

A user must be able to see that redaction happened, and to which kinds of field, without the
values: the report and an export's config carry rule names and counts only. Counts come from
the placeholders in the stored request keys, so they are exact for what is on the tape.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from engine.keys import KEY_VERSION, NEGOTIATION_HEADERS
from engine.redaction import DEFAULT_RESPONSE_HEADERS
from engine.redaction_rules import CREDENTIAL_SUFFIXES, CREDENTIAL_WORDS, fired_rules
from engine.secret_formats import builtin_rule_names
from engine.tape_settings import TapeSettings
from store.models import Exchange

TAPE_FIELDS = (
    "redact_headers",
    "redact_params",
    "redact_json_paths",
    "redact_patterns",
    "redact_keep",
    "redact_disable",
    "interchangeable_credentials",
)


def rules_applied(settings: TapeSettings) -> dict[str, Any]:
    """The rules in force for a tape: the defaults, less what it switched off, plus its own."""
    disabled = set(settings.redact_disable)
    return {
        "key_version": KEY_VERSION,
        "placeholder": "[redacted:RULE:HMAC-SHA256(deployment key, value)[:16]]",
        "names": [] if "names" in disabled else sorted(CREDENTIAL_WORDS),
        "name_suffixes": [] if "names" in disabled else list(CREDENTIAL_SUFFIXES),
        "formats": [rule for rule in builtin_rule_names() if rule not in disabled],
        "high_entropy": "high-entropy" not in disabled,
        "response_headers_dropped": sorted(DEFAULT_RESPONSE_HEADERS),
        "echoes_scrubbed": True,
        "negotiation_headers_in_key": sorted(NEGOTIATION_HEADERS),
        "tape": {name: getattr(settings, name) for name in TAPE_FIELDS},
    }


def redaction_summary(tape_id: int, settings: TapeSettings, *, session: Session) -> dict[str, Any]:
    keys = session.scalars(select(Exchange.key_readable).where(Exchange.tape_id == tape_id))
    return {"applied": rules_applied(settings), "fired": fired_rules(list(keys))}
