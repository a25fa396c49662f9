"""Exports carry no secret and say which rules applied; an import never weakens redaction."""

from __future__ import annotations

import base64
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote

import pytest
from fastapi.testclient import TestClient

from tests.resolver.ui.ui_server import app_with_ui

RAW = "raw-secret-from-an-old-export-5e1f"


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(app_with_ui(data_dir=tmp_path / "data")) as client:
        yield client


def _record(client: TestClient, tape: str) -> None:
    ask = {
        "tape": tape,
        "branch": "root",
        "method": "GET",
        "scheme": "https",
        "host": "api.example.com",
        "port": 443,
        "path": "/search",
        "query": [["api_key", "live-key-0a9c"], ["q", "wind"]],
        "headers": [["X-Api-Key", "live-key-0a9c"]],
    }
    ticket = client.post("/v1/resolve", json=ask).json()["ticket"]
    response = {"status": 200, "headers": [["Set-Cookie", "s=1"]], "body": ""}
    assert client.post("/v1/record", json={"ticket": ticket, "response": response}).is_success


def test_export_states_rules_and_import_scrubs_what_the_file_holds(
    client: TestClient, tmp_path: Path
) -> None:
    assert client.post("/v1/tapes", json={"name": "t"}).status_code == 201
    _record(client, "t")
    exported = client.get("/v1/tapes/t/export").content
    assert b"live-key-0a9c" not in exported
    path = tmp_path / "old.sqlite3"
    path.write_bytes(exported)
    db = sqlite3.connect(path)
    with db:
        (config,) = db.execute("select config from gh_tapes").fetchone()
        redaction = json.loads(config)["redaction"]
        assert redaction["fired"]["name-key"] == 2 and "jwt" in redaction["applied"]["formats"]
        # An older or hand-edited export: a raw credential where a placeholder should be (an
        # older Groundhog stated no digest in its exports: store/digest_manifest.py).
        db.execute("drop table gh_export_digest")
        db.execute("drop table gh_export_digest_lines")
        db.execute(
            "update gh_exchanges set request_headers = ?, request_url = ?, key_readable = ?,"
            " response_headers = ?",
            (
                json.dumps([["Authorization", f"Bearer {RAW}"]]),
                f"https://api.example.com/search?token={RAW}",
                f"v1 GET https://api.example.com/search?token={RAW}",
                json.dumps([["Set-Cookie", f"s={RAW}"], ["A", "1"]]),
            ),
        )
    db.close()  # checkpoints the WAL into the file that is sent
    imported = client.post("/v1/tapes/import?name=copy", content=path.read_bytes())
    assert imported.status_code == 201, imported.text
    events = client.get("/v1/tapes/t/events", params={"branch": "root"}).json()
    exchange_id = events["events"][0]["exchange_id"]
    copy_events = client.get("/v1/tapes/copy/events", params={"branch": "root"}).json()
    copy_id = copy_events["events"][0]["exchange_id"]
    shown = client.get(f"/v1/tapes/copy/exchanges/{copy_id}").text
    assert RAW not in shown and base64.b64encode(RAW.encode()).decode() not in shown
    assert "[redacted:name-authorization:" in shown and "[redacted:name-token:" in unquote(shown)
    assert exchange_id is not None
