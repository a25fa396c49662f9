"""This round's credential shapes through the real proxy and resolver (issue 31, "done when").

Each shape the issue found stored in clear (a SAS `sig`, an OAuth callback `code`, `pw` in a
query; `pwd`, `pw`, `passcode`, `tokens`, everything inside `credentials` in JSON; a form
`pass`; `X-Pass`/`X-Api-Pass` headers; a Slack webhook secret in the path; a PEM private key
echoed back by the world; a multipart `api_key`; a brotli body) goes through the proxy to a real
upstream that echoes everything it received. Then the data directory (database, `-wal`, `-shm`),
the logs, the export, the events and the exchanges hold none of them, the audit is clean, and a
sibling replaying the same requests from the sealed tape is still served from it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import brotli
import httpx
import pytest

from tests.proxy.secret_scans import event_and_exchange_pages, recorded_then_replayed, spellings
from tests.proxy.stack import Stack

SLACK_SECRET = "Xy9zAbCdEfGhIjKlMnOpQr42"
PEM_BODY = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun"
PEM = f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----"
SECRETS = {
    "sig": "SAS-sig-77aa11",
    "code": "Oauth-code-55bb22",
    "state": "State-val-33cc44",
    "query-pw": "Query-pw-88dd55",
    "pwd": "Json-pwd-11ee66",
    "pw": "Json-pw-22ff77",
    "passcode": "Json-passcode-3300",
    "tokens": "Json-token-4411",
    "pass": "Cred-pass-5522",
    "form-pass": "Form-pass-6633",
    "x-pass": "Hdr-x-pass-7744",
    "x-api-pass": "Hdr-x-api-pass-8855",
    "slack": SLACK_SECRET,
    "pem": PEM_BODY,
    "multipart": "Multi-key-9966",
    "brotli": "Br-pwd-0077",
}


def send_all(client: httpx.Client, base: str) -> list[str]:
    multipart = (
        '--bnd42\r\nContent-Disposition: form-data; name="api_key"\r\n\r\n'
        f"{SECRETS['multipart']}\r\n--bnd42--\r\n"
    ).encode()
    compressed = brotli.compress(json.dumps({"pwd": SECRETS["brotli"], "q": 1}).encode())
    answers = [
        client.get(f"{base}/blob", params={"sv": "2022-11-02", "sig": SECRETS["sig"]}),
        client.get(
            f"{base}/oauth/callback", params={"code": SECRETS["code"], "state": SECRETS["state"]}
        ),
        client.get(f"{base}/login", params={"pw": SECRETS["query-pw"]}),
        client.get(
            f"{base}/h", headers={"X-Pass": SECRETS["x-pass"], "X-Api-Pass": SECRETS["x-api-pass"]}
        ),
        client.post(
            f"{base}/profile",
            json={
                "user": {"pwd": SECRETS["pwd"], "pw": SECRETS["pw"]},
                "device": {"passcode": SECRETS["passcode"]},
                "tokens": [SECRETS["tokens"]],
                "credentials": {"pass": SECRETS["pass"]},
            },
        ),
        client.post(f"{base}/form", data={"user": "ann", "pass": SECRETS["form-pass"]}),
        client.post(f"{base}/services/T0A1B2C3D/B0E4F5G6H/{SLACK_SECRET}", json={"text": "hi"}),
        client.post(f"{base}/keys", json={"note": "my key", "pem": PEM}),
        client.post(
            f"{base}/upload",
            content=multipart,
            headers={"Content-Type": "multipart/form-data; boundary=bnd42"},
        ),
        client.post(
            f"{base}/br",
            content=compressed,
            headers={"Content-Type": "application/json", "Content-Encoding": "br"},
        ),
    ]
    for answer in answers:
        assert answer.status_code == 200, answer.text
    return [answer.headers["x-groundhog-decision"] for answer in answers]


def leaks(where: str, data: bytes) -> list[str]:
    return [
        f"{name} in {where}"
        for name, secret in SECRETS.items()
        if any(form in data for form in spellings(secret))
    ]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Stack, str, list[str]]]:
    data = tmp_path_factory.mktemp("secrets-round2")
    with recorded_then_replayed(data, send_all) as (stack, tape, first, replay):
        assert first == ["recorded"] * 4 + ["write"] * 6
        yield stack, tape, replay


def test_a_sealed_sibling_replays_them_all(recorded) -> None:
    _stack, _tape, replay = recorded
    assert replay == ["shared"] * 4 + ["replayed-write"] * 6


def test_none_reaches_the_data_directory_or_the_logs(recorded) -> None:
    stack, _tape, _replay = recorded
    files = [path for path in stack.data_dir.rglob("*") if path.is_file()]
    names = {path.name for path in files}
    assert "groundhog.sqlite3" in names and "groundhog.sqlite3-wal" in names
    found = []
    for path in files:
        found += leaks(str(path.relative_to(stack.data_dir)), path.read_bytes())
    found += leaks("resolver log", stack.resolver.log().encode())
    found += leaks("proxy log", stack.proxy.log().encode())
    assert found == []


def test_none_reaches_the_export_events_or_exchanges_and_the_audit_is_clean(recorded) -> None:
    stack, tape, _replay = recorded
    audit = stack.admin("GET", f"/v1/tapes/{tape}/audit").json()
    assert audit == {"tape": tape, "clean": True, "findings": []}
    found = leaks("export", stack.admin("GET", f"/v1/tapes/{tape}/export").content)
    events, ids = event_and_exchange_pages(stack, tape)
    for branch, page in events.items():
        found += leaks(f"events of {branch}", page)
    assert len(ids) == 10
    for exchange_id in sorted(ids):
        page = stack.admin("GET", f"/v1/tapes/{tape}/exchanges/{exchange_id}")
        found += leaks(f"exchange {exchange_id}", page.content)
    assert found == []
