"""The known secret formats, as data: one row per format, each with an example and a near miss.

A credential does not always sit under a name that says so (a key pasted into a prompt, a
token in a path segment, a connection string in a JSON value), so redaction also knows values
by their shape (DESIGN §4: "values in well-known secret formats wherever they appear"). Every
format lives here, in one table, so adding one is one row: the scanner
(`engine/secret_formats.py`) is built from the rows, and the test suite generates its cases
from each row's `example` (must be found, whole or its `secret` group, under the row's rule) and
`counter_example` (must not be). The patterns are our own; detect-secrets, the audit's second
opinion (`resolver/audit_second_opinion.py`), keeps its own, so the two can disagree and the
suite lists where they do.

Rows that share a `rule` are variants of one credential family (OpenAI and Anthropic keys are
all `model-api-key`); the placeholder names the rule, so a tape that declares a host's
credentials interchangeable keys every key of that family alike.

`scope`: `token` rows run inside runs of token characters (`[A-Za-z0-9_.:-]{15,}`), cheap and
anchored; `text` rows run over the whole text (values with `/`, `+`, `=`, spaces or newlines),
only where one of their `literals` occurs, and replace only their `secret` group when they have
one. Every pattern is ASCII and avoids backtracking on long runs (bounded or possessive
repeats, no repeat followed by a literal that could fail late), so a scan stays linear in the
text.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FormatRow:
    name: str
    rule: str
    pattern: str
    example: str
    counter_example: str
    scope: str = "token"
    literals: tuple[str, ...] = ()


def _row(
    name: str,
    rule: str,
    pattern: str,
    example: str,
    counter_example: str,
    *literals: str,
    scope: str = "token",
) -> FormatRow:
    return FormatRow(name, rule, pattern, example, counter_example, scope, literals)


# Fake values of the right shape, assembled so no scanner of this repository's own source reads
# them as live keys.
_HEX32 = "0123456789abcdef" * 2
_ALNUM36 = "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"

FORMAT_TABLE: tuple[FormatRow, ...] = (
    _row(
        "aws-access-key-id",
        "aws-access-key",
        r"(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}",
        "AKIA" + "IOSFODNN7EXAMPL3",
        "AKIA" + "iosfodnn7exampl3",
    ),
    _row(
        "aws-secret-access-key",
        "aws-secret-key",
        r"(?i:aws_?secret_?access_?key|secret_?access_?key)[\"']?[ \t]{0,8}[:=][ \t]{0,8}"
        r"[\"']?(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
        "aws_secret_access_key = " + "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "EXAMPLEKEY",
        "aws_secret_access_key = (see the vault)",
        "ecret",
        "ECRET",
        scope="text",
    ),
    _row(
        "github-classic-token",
        "github-token",
        r"(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36}",
        "ghp_" + _ALNUM36,
        "ghp_" + "short1234",
    ),
    _row(
        "github-fine-grained-token",
        "github-token",
        r"github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}",
        "github_pat_" + "11ABCDEFG0123456789abc_" + _ALNUM36 + "Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss",
        "github_pat_" + "not_a_token_at_all",
    ),
    _row(
        "gitlab-token",
        "gitlab-token",
        r"(?:glpat|gldt|glft|glsoat|glrt|glcbt|glptt|gloas)-[A-Za-z0-9_-]{20,64}",
        "glpat-" + "xY9z8W7v6U5t4S3r2Q1p",
        "glpat-" + "short",
    ),
    _row(
        "jwt",
        "jwt",
        r"eyJ[A-Za-z0-9_=-]{1,8192}+\.[A-Za-z0-9_=-]{1,16384}+(?:\.[A-Za-z0-9_+/=-]{0,8192}+)?",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbm4ifQ.c2lnbmF0dXJlLXBhcnQtaGVyZQ",
        "eyJhbGciOiJIUzI1NiJ9-header-only",
    ),
    _row(
        "openai-legacy-key",
        "openai-legacy-key",
        r"sk-[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}",
        "sk-" + "Ab3dEf6hIj9kLm2nOp5q" + "T3BlbkFJ" + "Rs8tUv1wXy4zAb7cDe0f",
        "sk-" + "T3BlbkFJ",
    ),
    _row(
        "openai-project-key",
        "model-api-key",
        r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}",
        "sk-proj-" + "Zq3xT9vLmN2pQ8rS4tU6wY1aB5cD7eF0",
        "sk-proj-" + "tiny",
    ),
    _row(
        "anthropic-key",
        "model-api-key",
        r"sk-ant-(?:api|admin|oat|ort)\d\d-[A-Za-z0-9_-]{20,}",
        "sk-ant-api03-" + "Qw3Er5Ty7Ui9Op1As3Df5Gh7Jk9",
        "sk-ant-" + "notakey",
    ),
    _row(
        "openai-style-key",
        "model-api-key",
        r"sk-[A-Za-z0-9_-]{20,}",
        "sk-" + "Zx9Zx9Zx9Zx9Zx9Zx9Zx9Zx9",
        "sk-" + "learn-tutorial",
    ),
    _row(
        "stripe-secret-key",
        "stripe-key",
        r"(?:sk|rk)_(?:live|test)_[0-9a-zA-Z]{24,247}",
        "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
        "sk_live_" + "short",
    ),
    _row(
        "stripe-webhook-secret",
        "stripe-key",
        r"whsec_[A-Za-z0-9+/=]{32,}",
        "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        "whsec_" + "none",
    ),
    _row(
        "slack-token",
        "slack-token",
        r"xox[abposre]-[A-Za-z0-9-]{10,}",
        "xoxb-" + "123456789012-abcdefghijkl",
        "xoxz-" + "123456789012-abcdefghijkl",
    ),
    _row(
        "slack-app-token",
        "slack-token",
        r"xapp-\d-[A-Za-z0-9-]{10,}",
        "xapp-1-" + "A0123BCDEF-1234567890-abcdef",
        "xapp-" + "x-short",
    ),
    _row(
        "huggingface-token",
        "huggingface-token",
        r"hf_[A-Za-z0-9]{30,}",
        "hf_" + "AbCdEfGhIjAbCdEfGhIjAbCdEfGhIjKl",
        "hf_" + "hub_download_helper",
    ),
    _row(
        "google-api-key",
        "google-api-key",
        r"AIza[0-9A-Za-z_-]{35}",
        "AIza" + "SyA-1234567890abcdefghijklmnopqrstu",
        "AIza" + "Sy-short",
    ),
    _row(
        "google-oauth-token",
        "google-oauth-token",
        r"ya29\.[0-9A-Za-z_-]{20,}",
        "ya29." + "a0AfH6SMBx1y2z3A4b5C6d7E8f9G0h",
        "ya29." + "short",
    ),
    _row(
        "sendgrid-key",
        "sendgrid-key",
        r"SG\.[a-zA-Z0-9_-]{22}\.[a-zA-Z0-9_-]{43}",
        "SG." + "abcdefghijklmnopqrstuv" + "." + "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefg",
        "SG." + "abcdefghijklmnopqrstuv",
    ),
    _row(
        "npm-token",
        "npm-token",
        r"npm_[A-Za-z0-9]{36}",
        "npm_" + _ALNUM36,
        "npm_" + "install_helpers",
    ),
    _row(
        "pypi-token",
        "pypi-token",
        r"pypi-AgE[A-Za-z0-9_-]{70,}",
        "pypi-AgEIcHlwaS5vcmc" + "CJ" * 40,
        "pypi-" + "package-index-mirror",
    ),
    _row(
        "twilio-api-key",
        "twilio-key",
        r"SK[0-9a-f]{32}",
        "SK" + _HEX32,
        "SK" + "0123456789abcdef",
    ),
    _row(
        "square-token",
        "square-oauth",
        r"sq0(?:csp|atp)-[0-9A-Za-z_-]{40,}",
        "sq0csp-" + "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopq",
        "sq0csp-" + "short",
    ),
    _row(
        "mailchimp-key",
        "mailchimp-key",
        r"[0-9a-z]{32}-us[0-9]{1,2}",
        _HEX32 + "-us21",
        "abc-us21",
        "-us",
    ),
    _row(
        "discord-token",
        "discord-token",
        r"[MNO][a-zA-Z0-9_-]{23,25}\.[a-zA-Z0-9_-]{6}\.[a-zA-Z0-9_-]{27}",
        "MTIzNDU2Nzg5MDEyMzQ1Njc4.GhIjKl." + "abcdefghijklmnopqrstuvwxyz0",
        "MTIzNDU2.GhIjKl.short",
        ".",
    ),
    _row(
        "telegram-token",
        "telegram-token",
        r"\d{8,10}:[0-9A-Za-z_-]{35}",
        "123456789:" + "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsawX",
        "123456789:" + "AAHdq",
        ":",
    ),
    _row(
        "azure-storage-account-key",
        "azure-storage-key",
        r"AccountKey=(?P<secret>[A-Za-z0-9+/=]{88})",
        "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey="
        + "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVE"
        + "rCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==",
        "AccountKey=" + "see-the-portal",
        "AccountKey=",
        scope="text",
    ),
    _row(
        "azure-shared-access-key",
        "azure-sas",
        r"SharedAccessKey=(?P<secret>[A-Za-z0-9+/=]{32,}+)",
        "Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccessKey="
        + "q2Z0bWVyZ2VkLWtleS1mb3ItdGVzdHMtb25seTE=",
        "SharedAccessKeyName=RootManageSharedAccessKey",
        "SharedAccessKey=",
        scope="text",
    ),
    _row(
        "azure-sas-signature",
        "azure-sas",
        r"(?<=[?&;])sig=(?P<secret>[A-Za-z0-9%+/=]{20,}+)",
        "https://acme.blob.core.windows.net/c/f.txt?sv=2022-11-02&sp=r&sig="
        + "Xy9zAbCdEfGh%2BIjKlMnOpQr42%3D",
        "https://example.com/?design=wide&sig=short",
        "sig=",
        scope="text",
    ),
    _row(
        "pem-private-key",
        "private-key",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[A-Za-z0-9+/=\s\\:,.()-]*?"
        r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|(?=[^A-Za-z0-9+/=\s\\:,.()-])|\Z)",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0t\n"
        "-----END RSA PRIVATE KEY-----",
        "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----",
        "PRIVATE KEY",
        scope="text",
    ),
    _row(
        "putty-private-key",
        "private-key",
        r"PuTTY-User-Key-File-\d: [a-z0-9-]{3,40}+",
        "PuTTY-User-Key-File-2: ssh-rsa",
        "PuTTY user guide, chapter 8",
        "PuTTY-User-Key-File-",
        scope="text",
    ),
    # A password in a URL's userinfo (`postgresql://user:pw@host/db`, `https://u:p@host/`): the
    # user and the host stay readable; a placeholder already there is what redaction left.
    _row(
        "url-userinfo-password",
        "url-password",
        r"://[^/\s:@\"'<>\\]{0,256}+:(?!\[redacted:)(?P<secret>[^/\s@\"'<>\\]{1,256}+)@",
        "postgresql://app:S3cr3t-Pw_42@db.internal:5432/app",
        "https://example.com:8443/path@v2",
        "://",
        scope="text",
    ),
    # Webhook and bot URLs carry their secret in one path segment; only that segment goes, so the
    # host and the ids before it stay readable.
    _row(
        "slack-webhook",
        "slack-webhook",
        r"/services/T[A-Z0-9_]{6,32}+/B[A-Z0-9_]{6,32}+/(?P<secret>[A-Za-z0-9_]{16,}+)",
        "https://hooks.slack.com/services/T0A1B2C3D/B0E4F5G6H/Xy9zAbCdEfGhIjKlMnOpQrSt",
        "/services/Team/Billing/overview",
        "/services/T",
        scope="text",
    ),
    _row(
        "slack-workflow-webhook",
        "slack-webhook",
        r"/workflows/T[A-Z0-9_]{6,32}+/A[A-Z0-9_]{6,32}+/\d{1,32}+/(?P<secret>[A-Za-z0-9_]{16,}+)",
        "https://hooks.slack.com/workflows/T0A1B2C3D/A0E4F5G6H/123/Xy9zAbCdEfGhIjKlMnOp",
        "/workflows/T0A1B2C3D/list",
        "/workflows/T",
        scope="text",
    ),
    _row(
        "discord-webhook",
        "discord-webhook",
        r"/api/(?:v\d+/)?webhooks/\d{15,22}+/(?P<secret>[A-Za-z0-9_-]{40,100}+)",
        "https://discord.com/api/webhooks/112233445566778899/"
        "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6kL9nP2rS5uV8xA1cD4fG7iJ0lM3o",
        "/api/webhooks/list",
        "/webhooks/",
        scope="text",
    ),
    _row(
        "telegram-bot-url",
        "telegram-bot-token",
        r"/bot(?P<secret>\d{6,12}+:[A-Za-z0-9_-]{30,50}+)",
        "https://api.telegram.org/bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/getMe",
        "/bot/help",
        "/bot",
        scope="text",
    ),
    _row(
        "teams-webhook",
        "teams-webhook",
        r"/IncomingWebhook/(?P<secret>[0-9a-f]{32})",
        "https://acme.webhook.office.com/webhookb2/a@b/IncomingWebhook/" + _HEX32 + "/c",
        "/IncomingWebhook/settings",
        "/IncomingWebhook/",
        scope="text",
    ),
    _row(
        "zapier-webhook",
        "zapier-webhook",
        r"/hooks/catch/\d{1,32}+/(?P<secret>[A-Za-z0-9]{5,}+)",
        "https://hooks.zapier.com/hooks/catch/123456/abcde1/",
        "/hooks/catch/",
        "/hooks/catch/",
        scope="text",
    ),
    _row(
        "ifttt-webhook",
        "ifttt-webhook",
        r"/with/key/(?P<secret>[A-Za-z0-9_-]{16,}+)",
        "https://maker.ifttt.com/trigger/ping/with/key/dQw4w9WgXcQ-abcdefgh12",
        "/with/key/short",
        "/with/key/",
        scope="text",
    ),
    _row(
        "mattermost-webhook",
        "mattermost-webhook",
        r"/hooks/(?P<secret>[a-z0-9]{26})(?![A-Za-z0-9])",
        "https://chat.example.com/hooks/abcdefghij0123456789klmnop",
        "/hooks/new",
        "/hooks/",
        scope="text",
    ),
    _row(
        "gitlab-pipeline-trigger",
        "gitlab-trigger",
        r"/trigger/pipeline\?(?:[^#\s&]{0,256}+&){0,16}+token=(?P<secret>[A-Za-z0-9_-]{16,}+)",
        "https://gitlab.com/api/v4/projects/1/trigger/pipeline?ref=main&token=glptt0123456789abc",
        "/trigger/pipeline?ref=main",
        "/trigger/pipeline",
        scope="text",
    ),
)
