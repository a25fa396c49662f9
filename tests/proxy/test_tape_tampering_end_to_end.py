"""An export edited on the way is refused on import, naming what was changed (issue 59).

A tape is recorded through the real proxy (root reads, two siblings read, write and read
again), exported through the resolver and edited as an attacker or a careless hand would; the
import (`POST /v1/tapes/import`) recomputes the digest from the bytes and answers 422 naming the
first exchange, event or field that no longer matches what the export states. Before, an edited
status, an injected header or reordered events imported silently.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
import requests

from tests.proxy.clients import proxy_url
from tests.proxy.stack import Stack
from tests.proxy.upstream_server import Upstream


def record(stack: Stack, upstream: Upstream) -> str:
    tape = stack.open_tape()
    root = proxy_url(stack.proxy.port, tape, "root")
    for path in ("/page/a", "/page/b", "/page/a"):
        assert requests.get(upstream.url + path, proxies={"http": root}, timeout=30).ok
    for branch in stack.fork(tape, 2):
        sibling = {"http": proxy_url(stack.proxy.port, tape, branch)}
        assert requests.get(f"{upstream.url}/page/a", proxies=sibling, timeout=30).ok
        assert requests.post(f"{upstream.url}/notes", json={}, proxies=sibling, timeout=30).ok
        assert requests.get(f"{upstream.url}/notes", proxies=sibling, timeout=30).ok
    return tape


@pytest.fixture(scope="module")
def exported(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Path:
    with Upstream(name="tamper") as upstream:
        tape = record(stack, upstream)
    path = tmp_path_factory.mktemp("tamper") / "tape.sqlite3"
    path.write_bytes(stack.admin("GET", f"/v1/tapes/{tape}/export").content)
    return path


def _first_two(db: sqlite3.Connection, where: str = "") -> list[tuple[int, str]]:
    query = f"select id, request_url from gh_exchanges {where} order by id limit 2"
    return db.execute(query).fetchall()


def edit_status(db: sqlite3.Connection) -> str:
    ((first, url), _) = _first_two(db)
    db.execute("update gh_exchanges set response_status = 503 where id = ?", (first,))
    return f"{url} (occurrence 0, fingerprint ''): its status differs"


def inject_header(db: sqlite3.Connection) -> str:
    ((first, _url), _) = _first_two(db)
    (headers,) = db.execute(
        "select response_headers from gh_exchanges where id = ?", (first,)
    ).fetchone()
    edited = [*json.loads(headers), ["X-Injected", "1"]]
    db.execute(
        "update gh_exchanges set response_headers = ? where id = ?", (json.dumps(edited), first)
    )
    return "its response_headers differs"


def reorder_events(db: sqlite3.Connection) -> str:
    (root,) = db.execute("select id from gh_branches where path = 'root'").fetchone()
    db.execute("update gh_events set seq = -1 where branch_id = ? and seq = 1", (root,))
    db.execute("update gh_events set seq = 1 where branch_id = ? and seq = 2", (root,))
    db.execute("update gh_events set seq = 2 where branch_id = ? and seq = -1", (root,))
    return "event 1 of branch root"


def delete_exchange(db: sqlite3.Connection) -> str:
    ((first, _url), _) = _first_two(db)
    db.execute("delete from gh_exchanges where id = ?", (first,))
    return "missing from it"


def change_url(db: sqlite3.Connection) -> str:
    ((first, _url), _) = _first_two(db)
    db.execute("update gh_exchanges set request_url = request_url || '?x=1' where id = ?", (first,))
    return "its url differs"


def change_occurrence(db: sqlite3.Connection) -> str:
    ((first, _url), _) = _first_two(db)
    db.execute("update gh_exchanges set occurrence = occurrence + 7 where id = ?", (first,))
    return "is not stated by the export"


def swap_bodies(db: sqlite3.Connection) -> str:
    ((first, _), (second, _)) = _first_two(db, "where response_body_sha is not null")
    (a,) = db.execute(
        "select response_body_sha from gh_exchanges where id = ?", (first,)
    ).fetchone()
    (b,) = db.execute(
        "select response_body_sha from gh_exchanges where id = ?", (second,)
    ).fetchone()
    assert a != b
    db.execute("update gh_exchanges set response_body_sha = ? where id = ?", (b, first))
    db.execute("update gh_exchanges set response_body_sha = ? where id = ?", (a, second))
    return "its response_body differs"


TAMPERS: dict[str, Callable[[sqlite3.Connection], str]] = {
    "status": edit_status,
    "injected-header": inject_header,
    "reordered-events": reorder_events,
    "deleted-exchange": delete_exchange,
    "changed-url": change_url,
    "changed-occurrence": change_occurrence,
    "swapped-bodies": swap_bodies,
}


def test_an_untouched_export_imports_with_its_digest(stack: Stack, exported: Path) -> None:
    answer = httpx.post(
        f"{stack.resolver.url}/v1/tapes/import", content=exported.read_bytes(), timeout=60,
        params={"name": f"untouched-{exported.parent.name}"}, trust_env=False,
    )  # fmt: skip
    assert answer.status_code == 201, answer.text


@pytest.mark.parametrize("tamper", list(TAMPERS))
def test_an_edited_export_is_refused_naming_what_differs(
    stack: Stack, exported: Path, tmp_path: Path, tamper: str
) -> None:
    edited = tmp_path / "edited.sqlite3"
    shutil.copyfile(exported, edited)
    with sqlite3.connect(edited) as db:
        named = TAMPERS[tamper](db)
    db.close()
    answer = httpx.post(
        f"{stack.resolver.url}/v1/tapes/import", content=edited.read_bytes(), timeout=60,
        params={"name": f"edited-{tamper}"}, trust_env=False,
    )  # fmt: skip
    assert answer.status_code == 422, answer.text
    detail = answer.json()["detail"]
    assert named in detail and "changed after export" in detail, detail
