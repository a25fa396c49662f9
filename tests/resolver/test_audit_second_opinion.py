"""The audit's second opinion (detect-secrets as a library) against our own format table: where
the two agree, and, written down here, where they do not."""

from __future__ import annotations

import json

import pytest

from engine.secret_format_table import FORMAT_TABLE
from resolver.audit_second_opinion import second_opinion

# Our rows whose example detect-secrets 1.5 does not find: formats it has no plugin for (today's
# model keys, fine-grained GitHub tokens, Hugging Face, Google, npm outside `.npmrc`) and the
# secret segments of webhook URLs and SAS signatures. Our rules are the only guard for these.
MISSED_BY_DETECT_SECRETS = {
    "github-fine-grained-token",
    "openai-project-key",
    "anthropic-key",
    "openai-style-key",
    "stripe-webhook-secret",
    "slack-app-token",
    "huggingface-token",
    "google-api-key",
    "google-oauth-token",
    "npm-token",
    "azure-shared-access-key",
    "azure-sas-signature",
    "slack-workflow-webhook",
    "discord-webhook",
    "telegram-bot-url",
    "teams-webhook",
    "zapier-webhook",
    "ifttt-webhook",
    "mattermost-webhook",
    "gitlab-pipeline-trigger",
}
# Our near misses that detect-secrets flags: its keyword plugin reads `AccountKey=` as a key name
# whatever follows it.
FLAGGED_BY_DETECT_SECRETS_ONLY = {"azure-storage-account-key"}


def test_where_detect_secrets_misses_our_formats_is_written_down() -> None:
    missed = {row.name for row in FORMAT_TABLE if not second_opinion(f"use {row.example} now")}
    assert missed == MISSED_BY_DETECT_SECRETS


def test_where_detect_secrets_flags_our_near_misses_is_written_down() -> None:
    flagged = {
        row.name for row in FORMAT_TABLE if second_opinion(f"see {row.counter_example} here")
    }
    assert flagged == FLAGGED_BY_DETECT_SECRETS_ONLY


@pytest.mark.parametrize(
    ("text", "rules"),
    [
        # The issue's shapes, in clear, as a tape made without the rules would hold them.
        (
            "[default]\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
            {"detect-secrets-secret-keyword"},
        ),
        ("DB_PASSWORD=Hunter2-Pass\n", {"detect-secrets-secret-keyword"}),
        (
            json.dumps({"dsn": "postgresql://app:Hunter2-Pass@db.internal/app"}),
            {"detect-secrets-basic-auth-credentials"},
        ),
        # Disagreements: detect-secrets reads neither XML elements nor name/value pairs.
        ("<login><password>Hunter2-Pass</password></login>", set()),
        (json.dumps([{"name": "password", "value": "Hunter2-Pass"}]), set()),
    ],
)
def test_the_issue_shapes_in_clear(text: str, rules: set[str]) -> None:
    assert second_opinion(text) == rules


def test_placeholders_and_ordinary_text_are_no_findings() -> None:
    placeholder = "[redacted:name-password:0123456789abcdef]"
    for text in (
        json.dumps({"password": placeholder, "title": "solar"}),
        f"DB_PASSWORD={placeholder}\n",
        f"Authorization: Bearer {placeholder}",
        "Mcp-Session-Id: [sandbox]",
        json.dumps({"items": [1, 2, 3], "etag": "33a64df551425fcc55e4d42a148795d9f25f89d4"}),
        "https://api.example.com/v1/search?q=wind&page=2",
    ):
        assert second_opinion(text) == set(), text
