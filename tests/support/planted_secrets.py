"""Random secrets planted in random places, for the property tests of redaction (issue 31).

Shared by the record-path property test (tests/resolver/routes/test_redaction_property.py) and
the full-proxy one (tests/proxy/test_redaction_property_end_to_end.py): one strategy, so both
plant the same kinds of secret in the same places.
"""

from __future__ import annotations

import base64
import json
import string
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import httpx
from hypothesis import strategies as st

ALPHANUMERIC = string.ascii_letters + string.digits
NAMES = ["api_key", "pwd", "pw", "passcode", "sig", "access_token", "client_secret", "X-Api-Pass"]
NAMES += ["X-Pass", "credentials", "tokens", "session", "authToken", "privateKey", "Passphrase"]
ORDINARY = ["data", "items", "0", "config", "user", "meta"]


def _secret(size: int) -> st.SearchStrategy[str]:
    """Random credentials that mix letters and digits, as keys and passwords do."""
    return st.text(ALPHANUMERIC, min_size=size, max_size=size + 12).filter(
        lambda s: len(set(s)) >= 8 and any(c.isdigit() for c in s) and any(c.isalpha() for c in s)
    )


@st.composite
def planted(draw: st.DrawFn) -> tuple[str, str, dict[str, Any]]:
    """(place, secret, the ask's arguments with the secret in that place)."""
    place = draw(st.sampled_from(["query", "header", "form", "multipart", "json", "path"]))
    name = draw(st.sampled_from(NAMES))
    if place == "path":
        kind = draw(st.sampled_from(["github", "slack-webhook"]))
        if kind == "github":
            secret = "ghp_" + draw(_secret(36).map(lambda s: s[:36]).filter(lambda s: len(s) == 36))
            return place, secret, {"method": "GET", "path": f"/repos/{secret}/issues"}
        secret = draw(_secret(24))
        return place, secret, {"method": "GET", "path": f"/services/T0A1B2C3D/B0E4F5G6H/{secret}"}
    secret = draw(_secret(10))
    if place == "query":
        return place, secret, {"method": "GET", "path": "/s", "query": [["q", "x"], [name, secret]]}
    if place == "header":
        return place, secret, {"method": "GET", "path": "/s", "headers": [[name, secret]]}
    if place == "form":
        body = urlencode([("user", "ann"), (name, secret)]).encode()
        content_type = "application/x-www-form-urlencoded"
    elif place == "multipart":
        body = (
            f'--b0undary\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{secret}\r\n'
            "--b0undary--\r\n"
        ).encode()
        content_type = "multipart/form-data; boundary=b0undary"
    else:
        value: Any = draw(st.sampled_from([secret, [secret], {"inner": secret}]))
        document: Any = {name: value}
        for key in draw(st.lists(st.sampled_from(ORDINARY), max_size=4)):
            document = [document] if key == "0" else {key: document}
        body = json.dumps(document).encode()
        content_type = "application/json"
    headers = [["Content-Type", content_type]]
    return place, secret, {"method": "POST", "path": "/submit", "headers": headers, "body": body}


def spellings(secret: str) -> list[bytes]:
    raw = secret.encode()
    return [raw, quote(secret, safe="").encode(), base64.b64encode(raw).rstrip(b"=")]


def leaks(secret: str, where: str, data: bytes) -> list[str]:
    return [where] if any(form in data for form in spellings(secret)) else []


def stored_leaks(admin: httpx.Client, data: Path, tape: str, secret: str) -> list[str]:
    """Where `secret` is found: the SQLite file, `-wal`, `-shm`, the export, the events, the
    exchanges. Asserts the audit calls the tape clean (an export is refused otherwise)."""
    found: list[str] = []
    for suffix in ("", "-wal", "-shm"):
        path = data / f"groundhog.sqlite3{suffix}"
        if path.exists():
            found += leaks(secret, path.name, path.read_bytes())
    audit = admin.get(f"/v1/tapes/{tape}/audit").json()
    assert audit["clean"], audit
    export = admin.get(f"/v1/tapes/{tape}/export")
    assert export.status_code == 200, export.text
    found += leaks(secret, "export", export.content)
    events = admin.get(f"/v1/tapes/{tape}/events", params={"branch": "root"})
    found += leaks(secret, "events", events.content)
    for event in events.json()["events"]:
        if event["exchange_id"]:
            exchange = admin.get(f"/v1/tapes/{tape}/exchanges/{event['exchange_id']}")
            found += leaks(secret, "exchange", exchange.content)
    return found
