"""End to end: a tape exported to one SQLite file imports back with an identical digest."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from bench.reliability.hostile_fields import doctored_export
from tests.resolver.proxy_double import ProxyDouble
from tests.store.test_blob_integrity import flip_first_byte


def _record_some(proxy: ProxyDouble, tape: str) -> None:
    a, b = proxy.fork(tape, children=2)
    proxy.ask(tape, a, path="/search", query=[["q", "x"]])
    proxy.ask(tape, b, path="/search", query=[["q", "x"]])
    proxy.ask(tape, b, "POST", "/docs/1", body=b"\x00binary\xff")
    proxy.ask(tape, b, path="/docs/1")
    proxy.ask(tape, a, path="/gone", host="down.example.com", error="reset")


def test_export_import_round_trip_keeps_the_digest(
    proxy: ProxyDouble, tape_name: str, tmp_path: Path
) -> None:
    proxy.open(tape_name, world_seed=9, dependency_model="path", record_transport_failures=True)
    _record_some(proxy, tape_name)
    exported = proxy.http.get(f"/v1/tapes/{tape_name}/export")
    assert exported.status_code == 200
    assert exported.headers["content-type"] == "application/vnd.sqlite3"
    file = tmp_path / "tape.sqlite3"
    file.write_bytes(exported.content)
    with sqlite3.connect(file) as connection:
        assert connection.execute("select count(*) from gh_tapes").fetchone() == (1,)
        assert connection.execute("select count(*) from gh_claims").fetchone() == (0,)
    imported = proxy.http.post(
        "/v1/tapes/import", params={"name": tape_name + "-copy"}, content=exported.content
    )
    assert imported.status_code == 201, imported.text
    assert imported.json()["world_seed"] == 9 and imported.json()["dependency_model"] == "path"
    original = proxy.http.get(f"/v1/tapes/{tape_name}/digest").json()
    copy = proxy.http.get(f"/v1/tapes/{tape_name}-copy/digest").json()
    assert copy["digest"] == original["digest"] and copy["exchanges"] == original["exchanges"] == 4
    # The copy behaves like the original: branch state and events came along.
    assert (
        proxy.http.get(f"/v1/tapes/{tape_name}-copy/report").json()["totals"]
        == proxy.http.get(f"/v1/tapes/{tape_name}/report").json()["totals"]
    )
    original_b1 = proxy.http.get(f"/v1/tapes/{tape_name}/branches/root%2Fb1").json()
    copy_b1 = proxy.http.get(f"/v1/tapes/{tape_name}-copy/branches/root%2Fb1").json()
    # Capabilities are per tape: the copy's branch opens with its own, never the original's.
    assert copy_b1.pop("capability") != original_b1.pop("capability")
    assert copy_b1 == original_b1 and copy_b1["versions"]
    # Occurrence counters came along too: the next ask of /docs/1 on b1 is occurrence 1.
    served = proxy.ask(tape_name + "-copy", "root/b1", path="/docs/1")
    assert served.occurrence == 1 and served.fingerprint != ""


def test_import_refuses_garbage_and_existing_names(proxy: ProxyDouble, tape_name: str) -> None:
    garbage = proxy.http.post("/v1/tapes/import", content=b"not a database at all" * 100)
    assert garbage.status_code == 422 and "not a tape export" in garbage.json()["detail"]
    empty = proxy.http.post("/v1/tapes/import", content=b"")
    assert empty.status_code == 422
    proxy.open(tape_name)
    exported = proxy.http.get(f"/v1/tapes/{tape_name}/export").content
    clash = proxy.http.post("/v1/tapes/import", content=exported)
    assert clash.status_code == 409 and "under a new name" in clash.json()["detail"]
    assert proxy.http.get(f"/v1/tapes/{tape_name}").status_code == 200


@pytest.mark.parametrize(
    ("update", "field", "words"),
    [
        ("update gh_tapes set config = 'not json {'", None, "not JSON"),
        ("update gh_tapes set config = '[1, 2]'", "config", "not an object"),
        ("update gh_tapes set config = '\"text\"'", "config", "not an object"),
        ("update gh_tapes set mode = 'chaos'", "mode", "mode"),
        ("update gh_tapes set dependency_model = 'psychic'", "dependency_model", "dependency"),
        ("update gh_tapes set name = '../../etc/passwd'", "name", "name"),
        (f"update gh_tapes set name = '{'n' * 601}'", "name", "name"),
        ("update gh_tapes set config = json_object('bogus', 1)", "bogus", "bogus"),
        (
            "update gh_tapes set config = json_object('ignore_params', "
            f"json_array('{'p' * 300_000}'))",
            "config",
            "max_tape_config_bytes",
        ),
    ],
)
def test_import_validates_the_tape_like_post_tapes(
    proxy: ProxyDouble,
    tape_name: str,
    tmp_path: Path,
    update: str,
    field: str | None,
    words: str,
) -> None:
    proxy.open(tape_name)
    proxy.ask(tape_name, "root", path="/kept")
    doctored = doctored_export(proxy.http.get(f"/v1/tapes/{tape_name}/export").content, update)
    assert proxy.http.delete(f"/v1/tapes/{tape_name}").status_code == 204
    reply = proxy.http.post("/v1/tapes/import", content=doctored)
    assert 400 <= reply.status_code < 500, reply.text
    assert reply.headers["content-type"] == "application/problem+json"
    problem = reply.json()
    assert words in problem["detail"]
    if field is not None:
        assert problem["field"] == field
    listed = [tape["name"] for tape in proxy.http.get("/v1/tapes").json()["tapes"]]
    assert all("passwd" not in name and len(name) <= 100 for name in listed)


def test_import_refuses_a_changed_body_naming_the_exchange_and_keeps_the_store(
    proxy: ProxyDouble, tape_name: str, tmp_path: Path
) -> None:
    proxy.open(tape_name, world_seed=3)
    proxy.ask(tape_name, "root", path="/search", query=[["q", "x"]])
    file = tmp_path / "tape.sqlite3"
    file.write_bytes(proxy.http.get(f"/v1/tapes/{tape_name}/export").content)
    with sqlite3.connect(file) as connection:
        (sha,) = connection.execute("select response_body_sha from gh_exchanges").fetchone()
    connection.close()
    flip_first_byte(file, sha)
    before = proxy.http.get("/v1/tapes").json()
    refused = proxy.http.post(
        "/v1/tapes/import", params={"name": tape_name + "-copy"}, content=file.read_bytes()
    )
    assert refused.status_code == 422, refused.text
    assert refused.headers["content-type"].startswith("application/problem+json")
    detail = refused.json()["detail"]
    assert "damaged" in detail and "/search?q=x" in detail and "response body" in detail
    assert proxy.http.get("/v1/tapes").json() == before
    assert proxy.http.get(f"/v1/tapes/{tape_name}-copy").status_code == 404
