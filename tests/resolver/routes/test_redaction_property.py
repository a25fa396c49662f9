"""Property: a random secret planted in a random place never reaches the store (issue 31).

Through the real resolver's record path (the test plays the proxy; the world echoes the secret
back in its answer's body and a header), a secret under a credential name in the query, a
header, a form, a multipart part or JSON at any depth, or in a secret format in the path, is
found in none of: the SQLite file and its `-wal` and `-shm`, the export, the events, the
exchanges. The audit calls every such tape clean (so the export is not refused).
"""

from __future__ import annotations

import base64
import itertools
import json
import string
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.resolver.proxy_double import ProxyDouble, World
from tests.support.servers import ServerProcess, running_server

ALPHANUMERIC = string.ascii_letters + string.digits
NAMES = ["api_key", "pwd", "pw", "passcode", "sig", "access_token", "client_secret", "X-Api-Pass"]
NAMES += ["X-Pass", "credentials", "tokens", "session", "authToken", "privateKey", "Passphrase"]
ORDINARY = ["data", "items", "0", "config", "user", "meta"]
_tapes = itertools.count()


@dataclass
class EchoWorld(World):
    """Answers every live call with the secret echoed (as echo services and error pages do)."""

    echo: str = ""

    def answer(self, branch: str, method: str, host: str, path: str, body: bytes) -> dict[str, Any]:
        payload = json.dumps({"you_sent": self.echo, "path": path}).encode()
        return {
            "status": 200,
            "headers": [["Content-Type", "application/json"], ["X-Echo", self.echo]],
            "body": base64.b64encode(payload).decode(),
        }


@pytest.fixture(scope="module")
def recorder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, Path]]:
    data: Path = tmp_path_factory.mktemp("redaction-property")
    with running_server(["resolver", "--data", str(data)]) as server:
        yield server, data


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


def _spellings(secret: str) -> list[bytes]:
    raw = secret.encode()
    return [raw, quote(secret, safe="").encode(), base64.b64encode(raw).rstrip(b"=")]


def _leaks(secret: str, where: str, data: bytes) -> list[str]:
    return [where] if any(form in data for form in _spellings(secret)) else []


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(planted())
def test_a_planted_secret_never_reaches_the_store(recorder, plant) -> None:
    server, data = recorder
    place, secret, ask = plant
    world = EchoWorld(echo=secret)
    proxy = ProxyDouble(server.url, world=world)
    tape = f"planted-{next(_tapes)}"
    proxy.open(tape)
    served = proxy.ask(tape, "root", **ask)
    assert served.decision in ("recorded", "write"), (place, served.decision)
    found: list[str] = []
    for suffix in ("", "-wal", "-shm"):
        path = data / f"groundhog.sqlite3{suffix}"
        if path.exists():
            found += _leaks(secret, path.name, path.read_bytes())
    audit = proxy.http.get(f"/v1/tapes/{tape}/audit").json()
    assert audit["clean"], (place, audit)
    export = proxy.http.get(f"/v1/tapes/{tape}/export")
    assert export.status_code == 200, export.text
    found += _leaks(secret, "export", export.content)
    events = proxy.http.get(f"/v1/tapes/{tape}/events", params={"branch": "root"})
    found += _leaks(secret, "events", events.content)
    for event in events.json()["events"]:
        if event["exchange_id"]:
            exchange = proxy.http.get(f"/v1/tapes/{tape}/exchanges/{event['exchange_id']}")
            found += _leaks(secret, "exchange", exchange.content)
    assert found == [], (place, ask, found)
