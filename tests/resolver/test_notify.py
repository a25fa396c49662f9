"""resolver/notify.py: addresses survive the payload, and on PostgreSQL a record committed
through one replica wakes a waiter on another at once (not at its next store poll)."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import httpx
import pytest

from resolver.notify import parse, payload
from tests.resolver.proxy_double import ProxyDouble
from tests.support.servers import running_server, wait_until
from tests.support.store_databases import private_schema_url


def test_an_address_survives_its_payload_even_with_colons_in_the_fingerprint() -> None:
    address = (7, "ab" * 32, 3, "naive:0123")
    assert parse(payload(address)) == address
    assert parse("garbage") is None and parse("x:1:k:f") is None


def _gauge(url: str, name: str) -> float:
    text = httpx.get(f"{url}/metrics", trust_env=False).text
    found = re.search(rf"^{re.escape(name)} (\S+)$", text, re.M)
    return float(found.group(1)) if found else 0.0


@pytest.mark.postgres
def test_a_record_on_one_replica_wakes_a_waiter_on_another(
    postgres_url: str, tmp_path: Path
) -> None:
    # No store poll and no lease lapse within the wait window: the waiter on the second replica
    # is woken by the notification, or only by its timer at the window's end.
    env = {
        "GROUNDHOG_WAIT_POLL_SECONDS": "600",
        "GROUNDHOG_RESOLVE_WAIT_SECONDS": "20",
        "GROUNDHOG_CLAIM_SECONDS": "600",
    }
    with private_schema_url(postgres_url) as url:
        args = ["resolver", "--data", str(tmp_path), "--database-url", url]
        with running_server(args, env=env) as first, running_server(args, env=env) as second:
            for server in (first, second):
                wait_until(
                    lambda s=server: _gauge(s.url, "groundhog_notify_listener_up") == 1.0,
                    what="the LISTEN connection",
                )
            holder, waiter = ProxyDouble(first.url), ProxyDouble(second.url)
            holder.open("notified")
            a, b = holder.fork("notified", children=2)
            forward = holder.resolve("notified", a, path="/n").json()
            token = waiter.resolve("notified", b, path="/n", follow=False).json()["wait"]
            answers: list[dict] = []
            thread = threading.Thread(target=lambda: answers.append(waiter.wait(token).json()))
            thread.start()
            wait_until(lambda: _gauge(second.url, "groundhog_waiting") >= 1, what="the waiter")
            response = {"status": 200, "headers": [], "body": "bm90aWZpZWQ="}
            recorded = holder.http.post(
                "/v1/record", json={"ticket": forward["ticket"], "response": response}
            )
            assert recorded.status_code == 200
            thread.join(timeout=60)
            by_event = _gauge(second.url, 'groundhog_wait_wakeups_total{by="event"}')
    assert by_event == 1.0
    assert answers and answers[0]["action"] == "serve" and answers[0]["decision"] == "shared"
    assert answers[0]["response"]["body"] == "bm90aWZpZWQ="
