"""A tape recorded under an older key version misses until re-recorded, and says so (DESIGN §3)."""

from __future__ import annotations

import base64
import hashlib
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from engine.keys import KEY_VERSION
from tests.resolver.ui.ui_server import app_with_ui

ASK: dict[str, Any] = {
    "tape": "t",
    "branch": "root",
    "method": "GET",
    "scheme": "https",
    "host": "api.example.com",
    "port": 443,
    "path": "/search",
    "query": [["q", "wind"]],
    "headers": [],
}


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(app_with_ui(data_dir=tmp_path / "data")) as client:
        yield client


def _as_older_version(exported: bytes, path: Path) -> bytes:
    """The export as an older resolver would have written it: every key under `v2`."""
    path.write_bytes(exported)
    db = sqlite3.connect(path)
    with db:
        # An older resolver stated no digest in its exports (store/digest_manifest.py).
        db.execute("drop table gh_export_digest")
        db.execute("drop table gh_export_digest_lines")
        rows = db.execute("select id, key_readable from gh_exchanges").fetchall()
        assert rows and all(key.startswith(f"{KEY_VERSION} ") for _id, key in rows)
        for row_id, key in rows:
            older = "v2" + key[len(KEY_VERSION) :]
            digest = hashlib.sha256(older.encode()).hexdigest()
            db.execute(
                "update gh_exchanges set key_readable = ?, key_hash = ? where id = ?",
                (older, digest, row_id),
            )
    db.close()
    return path.read_bytes()


def test_a_tape_recorded_under_an_older_key_version_misses_and_says_so(
    client: TestClient, tmp_path: Path
) -> None:
    assert client.post("/v1/tapes", json={"name": "t"}).status_code == 201
    fork = client.post("/v1/tapes/t/fork", json={"parent": "root", "children": ["c"]})
    assert fork.is_success, fork.text
    ticket = client.post("/v1/resolve", json=ASK).json()["ticket"]
    response = {"status": 200, "headers": [], "body": base64.b64encode(b"wind").decode()}
    assert client.post("/v1/record", json={"ticket": ticket, "response": response}).is_success
    older = _as_older_version(client.get("/v1/tapes/t/export").content, tmp_path / "old.sqlite3")
    assert client.post("/v1/tapes/import?name=old", content=older).status_code == 201
    for tape in ("t", "old"):
        assert client.post(f"/v1/tapes/{tape}/seal").is_success

    current = client.post("/v1/resolve", json={**ASK, "branch": "root/c"}).json()
    stale = client.post("/v1/resolve", json={**ASK, "tape": "old", "branch": "root/c"}).json()

    assert current["decision"] == "shared"
    assert stale["decision"] == "refused" and stale["response"]["status"] == 502
    problem = json.loads(base64.b64decode(stale["response"]["body"]))
    assert problem["key_version"] == KEY_VERSION and problem["recorded_key_versions"] == ["v2"]
    assert (
        f"under key version v2 and this resolver keys requests under {KEY_VERSION}"
        in (problem["detail"])
    )
    assert "re-recorded" in problem["detail"]
    nearest = problem["near_misses"][0]
    assert nearest["differences"] == [
        {"part": "version", "name": "", "asked": KEY_VERSION, "recorded": "v2"}
    ]
    assert "re-record it" in nearest["summary"]
    assert (
        json.loads(
            base64.b64decode(
                client.post("/v1/resolve", json={**ASK, "tape": "t", "query": [["q", "x"]]}).json()[
                    "response"
                ]["body"]
            )
        )["recorded_key_versions"]
        == []
    )
