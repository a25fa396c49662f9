"""`python -m resolver` migrates an older store on start, or refuses it with --no-migrate."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx

from store import migrate
from store.db import make_engine, transaction
from store.digest import tape_digest
from tests.store.test_digest import ADDRESSES, fill
from tests.store.test_migrate import old_store, revision_of
from tests.support.servers import REPO_ROOT, running_server


def store_at_revision_1(path: Path) -> tuple[str, str]:
    """A SQLite store as Groundhog at revision 0001 left it, with a tape; (url, the digest of
    that tape's content, taken from a twin store at the newest revision: the newest digest
    reads tables revision 0001 lacks)."""
    url = f"sqlite:///{path}"
    engine = make_engine(url, create_schema=False)
    try:
        fill(old_store(engine), "old", ADDRESSES)
    finally:
        engine.dispose()
    twin = make_engine(f"sqlite:///{path.with_suffix('.twin.sqlite3')}", create_schema=False)
    try:
        store = old_store(twin, migrate.head_revision())
        tape_id = fill(store, "old", ADDRESSES)
        with transaction(store.read) as session:
            digest, _ = tape_digest(tape_id, session=session)
    finally:
        twin.dispose()
    return url, digest


def test_no_migrate_refuses_an_old_store_naming_the_command(tmp_path: Path) -> None:
    url, _ = store_at_revision_1(tmp_path / "old.sqlite3")
    result = subprocess.run(
        [sys.executable, "-m", "resolver", "--no-migrate", "--database-url", url],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO_ROOT,
    )
    assert result.returncode == 2
    assert "refusing to start" in result.stderr
    assert f"groundhog migrate --database-url '{url}'" in result.stderr
    assert "Traceback" not in result.stderr
    engine = make_engine(url, create_schema=False)
    try:
        assert revision_of(engine) == "0001"
    finally:
        engine.dispose()


def test_start_migrates_an_old_store_and_serves_its_tapes(tmp_path: Path) -> None:
    url, digest = store_at_revision_1(tmp_path / "old.sqlite3")
    args = ["resolver", "--data", str(tmp_path), "--database-url", url]
    with running_server(args) as resolver:
        answer = httpx.get(f"{resolver.url}/v1/tapes/old/digest", timeout=10, trust_env=False)
    assert answer.status_code == 200
    assert answer.json()["digest"] == digest
    engine = make_engine(url, create_schema=False)
    try:
        assert revision_of(engine) == migrate.head_revision()
    finally:
        engine.dispose()
