"""`GET /v1/tapes/{t}/audit`, the export's refusal and `groundhog tape audit` (issue 31, item 5).

A tape recorded through today's rules is clean; one made before them (an exchange with clear
secrets written straight into the store, as an older Groundhog left it) is flagged at each
place, by rule, never by value; export refuses it unless told `allow_unscrubbed`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from groundhog.cli import app
from store import exchanges
from store.db import open_store, transaction
from store.models import Branch, Event, Exchange, Tape
from tests.resolver.proxy_double import ProxyDouble
from tests.support.servers import ServerProcess, running_server

PASSWORD = "old-tape-pw-4411"
API_KEY = "old-tape-key-9d2c"
PEM = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcw\n-----END PRIVATE KEY-----"
SECRETS = (PASSWORD, API_KEY, "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcw", "hunter2-old-cookie")


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, Path]]:
    data: Path = tmp_path_factory.mktemp("audit-data")
    with running_server(["resolver", "--data", str(data)]) as server:
        yield server, data


def _plant_old_exchange(data: Path, tape: str) -> int:
    """An exchange and event with clear secrets, as a tape made before these rules holds."""
    store = open_store(f"sqlite:///{data / 'groundhog.sqlite3'}", migrate_schema=False)
    try:
        with transaction(store.write) as session:
            tape_row = session.scalars(select(Tape).where(Tape.name == tape)).one()
            root = session.scalars(select(Branch).where(Branch.tape_id == tape_row.id)).first()
            assert root is not None
            url = f"https://api.example.com/v1/login?pwd={PASSWORD}&q=wind"
            exchange = Exchange(
                tape_id=tape_row.id,
                key_hash="0" * 64,
                occurrence=0,
                fingerprint="",
                key_readable=f"v2 POST {url}",
                request_method="POST",
                request_host="api.example.com",
                request_url=url,
                request_headers=[["X-Api-Key", API_KEY], ["Content-Type", "application/json"]],
                request_body_sha=exchanges.put_blob(
                    json.dumps({"credentials": {"pass": PASSWORD}}).encode(), session=session
                ),
                response_status=200,
                response_headers=[["Set-Cookie", "sid=hunter2-old-cookie"]],
                response_body_sha=exchanges.put_blob(
                    json.dumps({"key": PEM}).encode(), session=session
                ),
            )
            session.add(exchange)
            session.flush()
            session.add(
                Event(
                    branch_id=root.id,
                    seq=10_000,
                    method="GET",
                    url=f"https://api.example.com/keys?api_key={API_KEY}",
                    key_hash="1" * 64,
                    occurrence=0,
                    fingerprint="",
                    decision="recorded",
                    is_read=True,
                    exchange_id=exchange.id,
                )
            )
            return exchange.id
    finally:
        store.dispose()


def test_a_tape_recorded_today_is_clean_and_exports(audited) -> None:
    server, _data = audited
    proxy = ProxyDouble(server.url)
    proxy.open("clean-tape")
    ask = {"headers": [["Authorization", "Bearer sk-proj-Zq3xT9vLmN2pQ8rS4tU6wY1aB5cD7eF0"]]}
    assert proxy.ask("clean-tape", "root", "GET", "/search", **ask).decision == "recorded"
    # The tape keeps a Set-Cookie as a keyed placeholder: that is not a finding.
    cookie = [["Set-Cookie", "sid=hunter2-live-cookie; Path=/"]]
    login = proxy.ask("clean-tape", "root", "POST", "/login", response_headers=cookie)
    assert login.decision == "write"
    answer = proxy.http.get("/v1/tapes/clean-tape/audit").raise_for_status().json()
    assert answer == {"tape": "clean-tape", "clean": True, "findings": []}
    assert proxy.http.get("/v1/tapes/clean-tape/export").status_code == 200


def test_a_tape_made_before_these_rules_is_flagged_where_never_what(audited) -> None:
    server, data = audited
    proxy = ProxyDouble(server.url)
    proxy.open("old-tape")
    exchange_id = _plant_old_exchange(data, "old-tape")
    answer = proxy.http.get("/v1/tapes/old-tape/audit")
    assert answer.status_code == 200
    document = answer.json()
    assert document["tape"] == "old-tape" and document["clean"] is False
    places = {(f["exchange"], f["where"], f["rule"]) for f in document["findings"]}
    assert {
        (exchange_id, "request.url", "name-pwd"),
        (exchange_id, "request.headers.X-Api-Key", "name-key"),
        (exchange_id, "request.body", "name-credentials"),
        (exchange_id, "response.headers.Set-Cookie", "response-set-cookie"),
        (exchange_id, "response.body", "format-private-key"),
        (exchange_id, "event.url", "name-key"),
    } <= places
    assert not any(secret in answer.text for secret in SECRETS)
    refused = proxy.http.get("/v1/tapes/old-tape/export")
    assert refused.status_code == 409
    problem = refused.json()
    assert problem["type"].endswith("unscrubbed-tape") and "allow-unscrubbed" in problem["detail"]
    assert not any(secret in refused.text for secret in SECRETS)
    allowed = proxy.http.get("/v1/tapes/old-tape/export", params={"allow_unscrubbed": "true"})
    assert allowed.status_code == 200 and allowed.content.startswith(b"SQLite format 3")


def test_the_cli_audits_and_exits_non_zero_on_findings(audited, tmp_path: Path) -> None:
    server, data = audited
    proxy = ProxyDouble(server.url)
    proxy.open("cli-old")
    proxy.open("cli-clean")
    _plant_old_exchange(data, "cli-old")
    runner = CliRunner()
    env = {"GROUNDHOG_RESOLVER_URL": server.url}
    flagged = runner.invoke(app, ["tape", "audit", "cli-old", "--json"], env=env)
    assert flagged.exit_code == 1, flagged.output
    assert json.loads(flagged.stdout)["clean"] is False
    assert not any(secret in flagged.output for secret in SECRETS)
    table = runner.invoke(app, ["tape", "audit", "cli-old"], env=env)
    assert table.exit_code == 1 and "request.body" in table.output
    clean = runner.invoke(app, ["tape", "audit", "cli-clean"], env=env)
    assert clean.exit_code == 0 and "clean" in clean.output
    target = tmp_path / "cli-old.sqlite3"
    refused = runner.invoke(app, ["tape", "export", "cli-old", str(target)], env=env)
    assert refused.exit_code == 1 and not target.exists()
    assert "allow-unscrubbed" in refused.output
    allowed = runner.invoke(
        app, ["tape", "export", "cli-old", str(target), "--allow-unscrubbed"], env=env
    )
    assert allowed.exit_code == 0, allowed.output
    assert target.read_bytes().startswith(b"SQLite format 3")


def test_a_secret_redaction_was_told_to_miss_is_found_by_the_second_opinion(audited) -> None:
    """The tape switches the name rules off: the `.env` password is stored in clear, our own
    rules (the tape's) see nothing, detect-secrets does, and export is refused."""
    server, _data = audited
    proxy = ProxyDouble(server.url)
    proxy.open("rule-off", redact_disable=["names"])
    body = b"DEBUG=true\nDB_PASSWORD=Seeded-Pw-4471\n"
    headers = [["Content-Type", "text/plain"]]
    served = proxy.ask("rule-off", "root", "POST", "/env", body=body, headers=headers)
    assert served.decision == "write"
    answer = proxy.http.get("/v1/tapes/rule-off/audit").raise_for_status()
    findings = answer.json()["findings"]
    assert {"where": "request.body", "rule": "detect-secrets-secret-keyword"} in [
        {"where": f["where"], "rule": f["rule"]} for f in findings
    ]
    assert not any(f["rule"].startswith(("name-", "format-")) for f in findings)
    assert "Seeded-Pw-4471" not in answer.text
    assert proxy.http.get("/v1/tapes/rule-off/export").status_code == 409
