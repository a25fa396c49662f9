"""Credential names by word, placeholders by HMAC, and counting fired rules."""

from __future__ import annotations

import pytest

from engine.redaction_rules import (
    PLACEHOLDER,
    Placeholders,
    credential_word,
    fired_rules,
    name_words,
    oauth_callback,
    without_identity,
)


def test_names_split_at_separators_and_camel_case() -> None:
    assert name_words("X-Goog-Api-Key") == ["x", "goog", "api", "key"]
    assert name_words("accessToken") == ["access", "token"]
    assert name_words("client.secret value") == ["client", "secret", "value"]


@pytest.mark.parametrize(
    ("name", "word"),
    [
        ("Authorization", "authorization"),
        ("api_key", "key"),
        ("X-Goog-Api-Key", "key"),
        ("accessToken", "token"),
        ("Ocp-Apim-Subscription-Key", "key"),
        ("authtoken", "token"),
        ("PHPSESSID", "sessid"),
        ("keywords", None),
        ("author", None),
        ("max_tokens", None),
        ("monkey", None),
    ],
)
def test_credential_words_match_words_not_substrings(name: str, word: str | None) -> None:
    assert credential_word(name) == word


@pytest.mark.parametrize(
    ("name", "word"),
    [
        ("pass", "pass"),
        ("passwd", "passwd"),
        ("pwd", "pwd"),
        ("pw", "pw"),
        ("passcode", "passcode"),
        ("passphrase", "passphrase"),
        ("userPassword", "password"),
        ("newpasscode", "passcode"),
        ("client_secret", "secret"),
        ("secrets", "secrets"),
        ("tokens", "tokens"),
        ("refresh_tokens", "tokens"),
        ("id_token", "token"),
        ("private_key", "key"),
        ("privateKey", "key"),
        ("privatekey", "privatekey"),
        ("X-Auth-Email", "auth"),
        ("oauth", "oauth"),
        ("credentials", "credentials"),
        ("creds", "creds"),
        ("sig", "sig"),
        ("X-Hub-Signature-256", "signature"),
        ("session", "session"),
        ("X-Pass", "pass"),
        ("X-Api-Pass", "pass"),
        ("X-Vault-Token", "token"),
        ("PRIVATE-TOKEN", "token"),
    ],
)
def test_credential_families_match_every_spelling(name: str, word: str) -> None:
    assert credential_word(name) == word


@pytest.mark.parametrize(
    "name",
    [
        "keywords",
        "keyboard",
        "author",
        "authority",
        "max_tokens",
        "prompt_tokens",
        "completion_tokens",
        "total_tokens",
        "maxTokens",
        "token_count",
        "tokens_per_second",
        "token_ids",
        "passenger",
        "compass",
        "bypass",
        "passage",
        "signal",
        "signup",
        "design",
        "monkey",
        "turkey",
        "hockey",
        "sessional",
        "pwm",
        "code",
        "state",
        "statement",
    ],
)
def test_ordinary_words_stay_readable(name: str) -> None:
    assert credential_word(name) is None, name


@pytest.mark.parametrize(
    ("path", "names", "callback"),
    [
        ("/oauth/callback", ["code", "state"], True),
        ("/auth/callback", ["code"], True),
        ("/login", ["code", "state"], True),
        ("/token", ["grant_type", "code", "redirect_uri"], True),
        ("/token", ["code_verifier"], True),
        ("/search", ["code"], False),
        ("/repos", ["state"], False),
        ("/issues", ["state", "labels"], False),
        ("/callback", ["q"], False),
    ],
)
def test_oauth_callbacks_are_told_by_their_shape(
    path: str, names: list[str], callback: bool
) -> None:
    assert oauth_callback(path, names) is callback


def test_a_placeholder_is_stable_per_secret_and_key_and_differs_otherwise() -> None:
    first = Placeholders(key=b"k" * 32, interchangeable=False)
    again = Placeholders(key=b"k" * 32, interchangeable=False)
    other_key = Placeholders(key=b"o" * 32, interchangeable=False)
    one = first.replace("s3cret-value", "header", "authorization")
    assert PLACEHOLDER.fullmatch(one)
    assert one == again.replace("s3cret-value", "header", "authorization")
    assert one != first.replace("other-value", "header", "authorization")
    assert one != other_key.replace("s3cret-value", "header", "authorization")
    assert "s3cret" not in one


def test_interchangeable_hosts_drop_the_digest_unless_identity_is_kept() -> None:
    placeholders = Placeholders(key=b"k" * 32, interchangeable=True)
    assert placeholders.replace("abcdefgh", "query", "token") == "[redacted:token]"
    kept = placeholders.replace("abcdefgh", "body", "high-entropy", identity=False)
    assert PLACEHOLDER.fullmatch(kept) and kept.count(":") == 2


def test_findings_and_echoes_are_remembered_but_short_values_are_not_echoed() -> None:
    placeholders = Placeholders(key=b"k" * 32, interchangeable=False)
    long_one = placeholders.replace("long-secret", "json", "password")
    placeholders.replace("1234", "form", "pin")
    assert [f.rule for f in placeholders.findings] == ["password", "pin"]
    assert placeholders.secrets == [("long-secret", long_one)]


def test_a_placeholder_is_left_alone_so_scrubbed_bytes_key_the_same() -> None:
    placeholders = Placeholders(key=b"k" * 32, interchangeable=False)
    once = placeholders.replace("long-secret", "header", "cookie")
    assert placeholders.replace(once, "header", "cookie") == once
    assert len(placeholders.findings) == 1


def test_without_identity_and_fired_rules_read_stored_text() -> None:
    placeholders = Placeholders(key=b"k" * 32, interchangeable=False)
    token = placeholders.replace("long-secret", "query", "token")
    assert without_identity(f"GET /?t={token}") == "GET /?t=[redacted:token]"
    quoted = token.replace("[", "%5B").replace(":", "%3A").replace("]", "%5D")
    counts = fired_rules([f"a={token}", f"b={quoted}", "nothing here", "[redacted:jwt]"])
    assert counts == {"jwt": 1, "token": 2}
