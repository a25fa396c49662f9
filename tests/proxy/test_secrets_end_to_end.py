"""Default-deny redaction through the real proxy and resolver (issue 14, "done when").

Every kind of secret goes through the proxy to a real upstream that echoes what it received;
then the data directory (database, WAL, blobs, logs), an export, the admin API and the viewer
are searched for each value raw, URL-encoded and base64, and none is found. A sibling branch
replaying the same requests from the sealed tape is still served from tape.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.proxy.secret_scans import event_and_exchange_pages, recorded_then_replayed, spellings
from tests.proxy.stack import Stack

OPENAI = "sk-proj-Zq3xT9vLmN2pQ8rS4tU6wY1aB5cD7eF0"
GITHUB = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
AWS = "AKIAIOSFODNN7EXAMPLE"
SLACK = "xoxb-123456789012-abcdefghijkl"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbm4ifQ.c2lnbmF0dXJlLXBhcnQtaGVyZQ"
HEADERS = {
    "X-Auth-Token": "hdr-auth-token-5b1e",
    "Api-Key": "hdr-api-key-77c2",
    "X-Goog-Api-Key": "hdr-goog-key-0d9a",
    "Ocp-Apim-Subscription-Key": "hdr-apim-key-4f10",
    "Authorization": "Bearer hdr-bearer-e3c8",
    "Cookie": "sid=hdr-cookie-8a61",
}
QUERY = {"api_key": "qry-api-key-2b7d", "token": "qry-token-91fe", "key": "qry-key-c4a0"}
FORM_PASSWORD = "form-password-6e2d"
JSON_PASSWORD = "json-password-13bb"
SECRETS = [
    *[value.removeprefix("Bearer ") for value in HEADERS.values()],
    *QUERY.values(),
    FORM_PASSWORD,
    JSON_PASSWORD,
    OPENAI,
    GITHUB,
    AWS,
    SLACK,
    JWT,
]


def leaks(where: str, data: bytes) -> list[str]:
    return [
        f"{secret} in {where}"
        for secret in SECRETS
        if any(form in data for form in spellings(secret))
    ]


def send_all(client: httpx.Client, base: str) -> list[str]:
    """Every kind of secret, once each; the decisions the proxy reported."""
    answers = [
        client.get(f"{base}/search", params={**QUERY, "q": "wind"}, headers=HEADERS),
        client.get(f"{base}/keys/{OPENAI}/{GITHUB}/{AWS}/{SLACK}/{JWT}"),
        client.post(f"{base}/login", data={"user": "ann", "password": FORM_PASSWORD}),
        client.post(
            f"{base}/profile", json={"user": {"settings": {"auth": {"password": JSON_PASSWORD}}}}
        ),
        client.post(
            f"{base}/notes",
            content=f"keys {OPENAI} {GITHUB} {AWS} {SLACK} {JWT}".encode(),
            headers={"Content-Type": "text/plain"},
        ),
    ]
    for answer in answers:
        assert answer.status_code == 200, answer.text
    return [answer.headers["x-groundhog-decision"] for answer in answers]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Stack, str, list[str]]]:
    data = tmp_path_factory.mktemp("secrets-data")
    with recorded_then_replayed(data, send_all) as (stack, tape, first, replay):
        assert first == ["recorded", "recorded", "write", "write", "write"]
        yield stack, tape, replay


def _data_files(data: Path) -> list[Path]:
    return [path for path in data.rglob("*") if path.is_file()]


def test_replay_of_the_same_requests_still_hits(recorded) -> None:
    _stack, _tape, replay = recorded
    assert replay == ["shared", "shared", "replayed-write", "replayed-write", "replayed-write"]


def test_no_secret_in_the_data_directory_or_logs(recorded) -> None:
    stack, _tape, _replay = recorded
    found = []
    files = _data_files(stack.data_dir)
    assert any(path.name.endswith(".sqlite3") for path in files)
    for path in files:
        found += leaks(str(path.relative_to(stack.data_dir)), path.read_bytes())
    found += leaks("resolver log", stack.resolver.log().encode())
    found += leaks("proxy log", stack.proxy.log().encode())
    assert found == []


def test_no_secret_in_the_export_admin_api_or_viewer(recorded) -> None:
    stack, tape, _replay = recorded
    found = leaks("export", stack.admin("GET", f"/v1/tapes/{tape}/export").content)
    pages = [f"/v1/tapes/{tape}", f"/v1/tapes/{tape}/report", f"/v1/tapes/{tape}/digest"]
    pages += ["/ui", f"/ui/tapes/{tape}"]
    events, exchange_ids = event_and_exchange_pages(stack, tape)
    for branch, page in events.items():
        found += leaks(f"events of {branch}", page)
        timeline = stack.admin("GET", f"/ui/tapes/{tape}/timeline", params={"branch": branch})
        found += leaks(f"timeline of {branch}", timeline.content)
    assert len(exchange_ids) == 5
    for exchange_id in sorted(exchange_ids):
        pages += [f"/v1/tapes/{tape}/exchanges/{exchange_id}"]
        pages += [f"/ui/tapes/{tape}/exchanges/{exchange_id}"]
    for page in pages:
        found += leaks(page, stack.admin("GET", page).content)
    assert found == []


def test_the_report_names_the_rules_that_fired(recorded) -> None:
    stack, tape, _replay = recorded
    report = stack.admin("GET", f"/v1/tapes/{tape}/report").json()
    fired = report["redaction"]["fired"]
    for rule in ("name-key", "name-token", "name-password", "format-jwt", "format-github-token"):
        assert fired.get(rule, 0) > 0, fired
    assert not leaks("report", json.dumps(report).encode())
