"""The text formats credentials really travel in, through the real proxy and resolver (issue 55).

The five shapes the issue found stored in clear — an AWS secret access key (with `/`) in an INI
`text/plain` body, a password in a `postgresql://user:pw@host/db` string inside JSON (and in a
query, a read), an XML `<password>`, a `.env` line `DB_PASSWORD=…`, a JSON name/value pair —
and a gzip request body the world echoes back, all go through the proxy to an upstream that
echoes everything it received. Then the data directory, the events, the viewer, the export and
a published dataset's Parquet hold none of them, the audit (detect-secrets included) is clean,
and a sealed sibling sending the same values is served from the tape.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pandas as pd
import pytest

from groundhog.client import Groundhog
from groundhog.dataset.folder import TABLES, table_file
from groundhog.dataset.publish import publish
from tests.proxy.secret_scans import event_and_exchange_pages, recorded_then_replayed, spellings
from tests.proxy.stack import Stack

SECRETS = {
    "ini-aws": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "url-userinfo": "Pg-pw-7Hq2xZ",
    "xml": "Xml-pw-3Kd9q",
    "env": "Env-pw-5Tg1w",
    "pair": "Pair-pw-8Lm4",
    "gzip": "Gzip-pw-2Wn6",
}
GZIPPED = gzip.compress(json.dumps({"password": SECRETS["gzip"]}).encode(), mtime=0)
# How the gzip body could come back: its bytes, and its bytes as a JSON echo spells them.
COMPRESSED_FORMS = [GZIPPED, json.dumps(GZIPPED.decode("latin-1"))[1:-1].encode()]


def send_all(client: httpx.Client, base: str) -> list[str]:
    dsn = f"postgresql://app:{SECRETS['url-userinfo']}@db.internal:5432/app"
    text = {"Content-Type": "text/plain"}
    answers = [
        client.get(f"{base}/connect", params={"dsn": dsn}),
        client.post(
            f"{base}/ini",
            content=(
                f"[default]\nregion = eu-west-1\naws_secret_access_key = {SECRETS['ini-aws']}\n"
            ).encode(),
            headers=text,
        ),
        client.post(f"{base}/dsn", json={"name": "main", "dsn": dsn}),
        client.post(
            f"{base}/soap",
            content=f"<login><user>ann</user><password>{SECRETS['xml']}</password></login>".encode(),
            headers={"Content-Type": "application/xml"},
        ),
        client.post(
            f"{base}/env", content=f"DEBUG=1\nDB_PASSWORD={SECRETS['env']}\n".encode(), headers=text
        ),
        client.post(
            f"{base}/form-builder",
            json={
                "fields": [
                    {"name": "user", "value": "ann"},
                    {"name": "password", "value": SECRETS["pair"]},
                ]
            },
        ),
        client.post(
            f"{base}/gz",
            content=GZIPPED,
            headers={"Content-Type": "application/json", "Content-Encoding": "gzip"},
        ),
    ]
    for answer in answers:
        assert answer.status_code == 200, answer.text
    return [answer.headers["x-groundhog-decision"] for answer in answers]


def leaks(where: str, data: bytes) -> list[str]:
    found = [
        f"{name} in {where}"
        for name, secret in SECRETS.items()
        if any(form in data for form in spellings(secret))
    ]
    return found + [f"gzip body in {where}" for form in COMPRESSED_FORMS if form in data]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Stack, str, list[str]]]:
    data = tmp_path_factory.mktemp("secrets-round3")
    with recorded_then_replayed(data, send_all) as (stack, tape, first, replay):
        assert first == ["recorded"] + ["write"] * 6
        yield stack, tape, replay


def test_a_sealed_sibling_sending_the_same_values_is_served_from_the_tape(recorded) -> None:
    _stack, _tape, replay = recorded
    assert replay == ["shared"] + ["replayed-write"] * 6


def test_none_reaches_the_data_directory(recorded) -> None:
    stack, _tape, _replay = recorded
    found = []
    for path in stack.data_dir.rglob("*"):
        if path.is_file():
            found += leaks(str(path.relative_to(stack.data_dir)), path.read_bytes())
    assert found == []


def test_none_reaches_events_viewer_or_export_and_the_audit_is_clean(recorded) -> None:
    stack, tape, _replay = recorded
    audit = stack.admin("GET", f"/v1/tapes/{tape}/audit").json()
    assert audit == {"tape": tape, "clean": True, "findings": []}
    found = leaks("export", stack.admin("GET", f"/v1/tapes/{tape}/export").content)
    events, ids = event_and_exchange_pages(stack, tape)
    for branch, page in events.items():
        found += leaks(f"events of {branch}", page)
        timeline = stack.admin("GET", f"/ui/tapes/{tape}/timeline", params={"branch": branch})
        found += leaks(f"timeline of {branch}", timeline.content)
    assert len(ids) == 7
    for exchange_id in sorted(ids):
        for page in (
            f"/v1/tapes/{tape}/exchanges/{exchange_id}",
            f"/ui/tapes/{tape}/exchanges/{exchange_id}",
        ):
            answer = stack.admin("GET", page)
            assert answer.status_code == 200, page
            found += leaks(page, answer.content)
    assert found == []


def test_none_reaches_a_published_datasets_parquet(recorded, tmp_path: Path) -> None:
    stack, tape, _replay = recorded
    published = publish(Groundhog(stack.resolver.url), tape, tmp_path / "dataset")
    assert published.audit.clean
    found = []
    for table in TABLES:
        frame = pd.read_parquet(table_file(published.folder, table))
        assert len(frame.columns) > 0
        for column in frame.columns:
            for value in frame[column]:
                data = value if isinstance(value, bytes) else str(value).encode()
                found += leaks(f"{table}.{column}", data)
    assert found == []
