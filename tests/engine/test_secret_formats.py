"""Format rules in isolation: each named format, the entropy rule and its non-secrets."""

from __future__ import annotations

import itertools
import json
import secrets
import string

import pytest

from engine.secret_formats import (
    HIGH_ENTROPY,
    Format,
    FormatScanner,
    builtin_formats,
    builtin_rule_names,
    looks_random,
    shannon_bits,
)


@pytest.fixture(scope="module")
def scanner() -> FormatScanner:
    return FormatScanner(builtin_formats())


def _random_key(length: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    while True:
        value = "".join(secrets.choice(alphabet) for _ in range(length))
        kinds = (str.isdigit, str.isupper, str.islower)
        if all(any(kind(c) for c in value) for kind in kinds):
            return value


def test_builtin_rules_come_from_the_format_table() -> None:
    names = builtin_rule_names()
    assert {"aws-access-key", "github-token", "jwt", "private-key"} <= set(names)
    assert {"model-api-key", "google-api-key", "huggingface-token"} <= set(names)
    assert names == sorted(set(names))


@pytest.mark.parametrize(
    ("value", "rule"),
    [
        ("AKIA" + "ABCDEFGHIJKLMNOP", "aws-access-key"),
        ("ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", "github-token"),
        ("sk-proj-" + "Zx9" * 10, "model-api-key"),
        ("sk-ant-api03-" + "Qw3" * 10, "model-api-key"),
        ("AIza" + "B" * 35, "google-api-key"),
        ("hf_" + "AbCdEfGhIj" * 3 + "Kl", "huggingface-token"),
    ],
)
def test_named_formats_are_found_inside_prose(
    scanner: FormatScanner, value: str, rule: str
) -> None:
    text = f"please use {value} for the call"
    found = scanner.find(text)
    assert [(text[start:end], name) for start, end, name in found] == [(value, rule)]


def test_a_jwt_is_found_whole_including_its_signature(scanner: FormatScanner) -> None:
    jwt = (
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
        "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ."
        "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
    )
    start, end, rule = scanner.find(f"Bearer {jwt}")[0]
    assert rule == "jwt"
    assert f"Bearer {jwt}"[start:end] == jwt


def test_a_private_key_block_spans_lines(scanner: FormatScanner) -> None:
    text = "x\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow...\n"
    assert [rule for _s, _e, rule in scanner.find(text)] == ["private-key"]


def test_a_random_run_is_high_entropy_but_ordinary_tokens_are_not(
    scanner: FormatScanner,
) -> None:
    key = _random_key(40)
    assert [rule for _s, _e, rule in scanner.find(f"id={key}")] == [HIGH_ENTROPY]
    ordinary = [
        "0123456789abcdef0123456789abcdef01234567",  # a hex digest: at most 4 bits a char
        "123e4567-e89b-12d3-a456-426614174000",  # a UUID
        "the_quick_brown_fox_jumps_over_the_lazy_dog_again",  # words joined by `_`
        "2026-11-30T19:19:39.123456+00:00",  # a timestamp
        "/search/results/page/2/of/the/catalogue/index",  # a path: `/` splits runs
    ]
    for text in ordinary:
        assert scanner.find(text) == [], text


def test_entropy_can_be_switched_off() -> None:
    quiet = FormatScanner(builtin_formats(), entropy=False)
    assert quiet.find(f"id={_random_key(40)}") == []


def test_extra_patterns_run_on_the_whole_text_even_when_short() -> None:
    scanner = FormatScanner((), entropy=False, extra=(Format("pin", r"PIN-\d{4}"),))
    assert scanner.find("a PIN-1234 b") == [(2, 10, "pin")]


def test_findings_never_overlap_and_come_in_order(scanner: FormatScanner) -> None:
    text = " ".join(["AKIA" + "ABCDEFGHIJKLMNOP", _random_key(48), "ghp_" + "x1Y2" * 9])
    found = scanner.find(text)
    assert len(found) == 3
    for (_s1, end, _r1), (start, _e2, _r2) in itertools.pairwise(found):
        assert end <= start


def test_shannon_bits_and_looks_random_agree_with_their_definitions() -> None:
    assert shannon_bits("aaaa") == 0
    assert shannon_bits("abcd") == pytest.approx(2.0)
    assert not looks_random("a" * 40)
    assert not looks_random("abcdefghijklmnopqrstuvwxyzabcdefgh")  # no digit, no upper
    assert looks_random(_random_key(40))


PEM_BODY = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw\nQ2bzA1N7bBqmeU"
PEM = f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----"


@pytest.mark.parametrize(
    "text",
    [
        f"key:\n{PEM}\nthat was it",
        json.dumps({"key": PEM})[1:-1],  # JSON-escaped: `\n` are two characters
        PEM.replace("RSA ", "OPENSSH "),
        PEM.replace("RSA ", "ENCRYPTED "),
        PEM.replace("RSA ", ""),
        f"cut short: {PEM[:80]}",
    ],
)
def test_a_pem_private_key_is_found_whole_header_to_footer(
    scanner: FormatScanner, text: str
) -> None:
    found = scanner.find(text)
    assert [rule for _s, _e, rule in found] == ["private-key"]
    start, end, _rule = found[0]
    assert "MIIEow" in text[start:end] and "Q2bzA1N7" not in text[:start] + text[end:]
    if "END" in text:
        assert text[start:end].endswith("PRIVATE KEY-----")


def test_a_certificate_is_not_a_private_key(scanner: FormatScanner) -> None:
    assert scanner.find("-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n") == []


@pytest.mark.parametrize(
    ("url", "secret", "rule"),
    [
        (
            "https://hooks.slack.com/services/T0A1B2C3D/B0E4F5G6H/Xy9zAbCdEfGhIjKlMnOpQrSt",
            "Xy9zAbCdEfGhIjKlMnOpQrSt",
            "slack-webhook",
        ),
        (
            "https://discord.com/api/webhooks/112233445566778899/"
            "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6kL9nP2rS5uV8xA1cD4fG7iJ0lM3o",
            "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6kL9nP2rS5uV8xA1cD4fG7iJ0lM3o",
            "discord-webhook",
        ),
        (
            "https://api.telegram.org/bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/getMe",
            "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw",
            "telegram-bot-token",
        ),
        (
            "https://acme.webhook.office.com/webhookb2/a@b/IncomingWebhook/"
            "0123456789abcdef0123456789abcdef/c",
            "0123456789abcdef0123456789abcdef",
            "teams-webhook",
        ),
        ("https://hooks.zapier.com/hooks/catch/123456/abcde1/", "abcde1", "zapier-webhook"),
        (
            "https://maker.ifttt.com/trigger/ping/with/key/dQw4w9WgXcQ-abcdefgh12",
            "dQw4w9WgXcQ-abcdefgh12",
            "ifttt-webhook",
        ),
    ],
)
def test_webhook_and_bot_urls_lose_their_secret_segment_only(
    scanner: FormatScanner, url: str, secret: str, rule: str
) -> None:
    for text in (url, "/" + url.split("/", 3)[3]):  # a whole URL, or a request's path
        found = scanner.find(text)
        assert [(text[s:e], r) for s, e, r in found if r != HIGH_ENTROPY] == [(secret, rule)]
        assert all(secret not in text[:s] + text[e:] for s, e, _r in found)


def test_ordinary_paths_are_no_webhooks(scanner: FormatScanner) -> None:
    for path in ("/services/Team/Billing/overview", "/api/webhooks/list", "/hooks/new", "/bot"):
        assert scanner.find(path) == [], path


def test_entropy_is_detect_secrets_own() -> None:
    from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString

    value = _random_key(40)
    expected = Base64HighEntropyString().calculate_shannon_entropy(value)
    assert shannon_bits(value) == pytest.approx(expected)
