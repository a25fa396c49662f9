"""End to end: `/v1/wait` skips its first look only when nothing can have settled since the
resolve looked, and never misses a record that landed in between (resolver/routes/internal.py,
resolver/wakeups.py). A real resolver process; the test plays the proxy and reads /metrics."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from engine.policy import Decision
from resolver import wait_tokens
from resolver.wakeups import Mark
from tests.resolver.proxy_double import ProxyDouble
from tests.support.servers import ServerProcess, running_server, wait_until


@pytest.fixture(scope="module")
def patient_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """No timer looks within a test: only a record's wake-up (or a first look) reads the store.
    Shared by the tests of this module, each on its own tape, reading metrics as differences."""
    env = {
        "GROUNDHOG_WAIT_POLL_SECONDS": "300",
        "GROUNDHOG_RESOLVE_WAIT_SECONDS": "300",
        "GROUNDHOG_CLAIM_SECONDS": "300",
    }
    data = tmp_path_factory.mktemp("patient-resolver")
    with running_server(["resolver", "--data", str(data)], env=env) as server:
        yield server


def _counts(base_url: str) -> dict[str, float]:
    return {
        "skipped": _first_looks(base_url, "skipped"),
        "taken": _first_looks(base_url, "taken"),
        "event": _wakeups(base_url, "event"),
        "timer": _wakeups(base_url, "timer"),
    }


def _since(base_url: str, before: dict[str, float]) -> dict[str, float]:
    return {name: value - before[name] for name, value in _counts(base_url).items()}


def _metric(base_url: str, pattern: str) -> float:
    text = httpx.get(f"{base_url}/metrics", trust_env=False).text
    found = re.search(pattern, text, re.M)
    return float(found.group(1)) if found else 0.0


def _first_looks(base_url: str, look: str) -> float:
    return _metric(base_url, rf'^groundhog_wait_first_looks_total{{look="{look}"}} (\S+)$')


def _wakeups(base_url: str, by: str) -> float:
    return _metric(base_url, rf'^groundhog_wait_wakeups_total{{by="{by}"}} (\S+)$')


def _holder_and_waiter(proxy: ProxyDouble, tape: str) -> tuple[dict, dict]:
    proxy.open(tape)
    a, b = proxy.fork(tape, children=2)
    holder = proxy.resolve(tape, a, path="/slow").json()
    waiter = proxy.resolve(tape, b, path="/slow", follow=False).json()
    assert holder["action"] == "forward" and waiter["action"] == "wait"
    return holder, waiter


def _record(proxy: ProxyDouble, ticket: str) -> None:
    record = {"ticket": ticket, "response": {"status": 200, "headers": [], "body": "aGVsZA=="}}
    assert proxy.http.post("/v1/record", json=record).status_code == 200


def test_a_first_wait_on_a_live_holder_sleeps_until_the_record_without_looking(
    patient_server: ServerProcess,
) -> None:
    url = patient_server.url
    proxy = ProxyDouble(url)
    holder, waiter = _holder_and_waiter(proxy, "skip")
    token = wait_tokens.decode_wait(waiter["wait"])
    assert token.claim_expires is not None and token.claim_expires > time.time() + 200
    before = _counts(url)
    with ThreadPoolExecutor(1) as pool:
        waited = pool.submit(proxy.wait, waiter["wait"])
        wait_until(lambda: _metric(url, r"^groundhog_waiting (\S+)$") == 1, what="a parked waiter")
        parked = _since(url, before)
        assert parked["skipped"] == 1 and parked["taken"] == 0
        _record(proxy, holder["ticket"])
        answer = waited.result(timeout=60).json()
    assert answer["action"] == "serve" and answer["decision"] == "shared"
    assert answer["response"]["body"] == "aGVsZA=="
    # One look in all: the one the record's wake-up asked for.
    woken = _since(url, before)
    assert woken["event"] == 1 and woken["timer"] == 0


def test_a_record_between_the_resolve_and_the_wait_is_served_at_once(
    patient_server: ServerProcess,
) -> None:
    url = patient_server.url
    proxy = ProxyDouble(url)
    holder, waiter = _holder_and_waiter(proxy, "between")
    _record(proxy, holder["ticket"])  # settles before the waiter comes back
    before = _counts(url)
    answer = proxy.wait(waiter["wait"]).json()  # skipping the look would sleep for 300 s
    assert answer["action"] == "serve" and answer["decision"] == "shared"
    looks = _since(url, before)
    assert looks["taken"] == 1 and looks["skipped"] == 0


def test_a_token_another_resolver_issued_is_looked_at_first(
    patient_server: ServerProcess,
) -> None:
    proxy = ProxyDouble(patient_server.url)
    holder, waiter = _holder_and_waiter(proxy, "elsewhere")
    ask = wait_tokens.decode(waiter["wait"])
    expires = wait_tokens.decode_wait(waiter["wait"]).claim_expires
    # The same ask as a replica with its own settle log (or this one before a restart) wrote it.
    foreign = wait_tokens.encode(
        ask, Decision.RECORDED, claim_expires=expires, mark=Mark("another-process", 0)
    )
    _record(proxy, holder["ticket"])
    before = _counts(patient_server.url)
    answer = proxy.wait(foreign).json()
    assert answer["action"] == "serve" and answer["decision"] == "shared"
    looks = _since(patient_server.url, before)
    assert looks["taken"] == 1 and looks["skipped"] == 0


def test_a_resolve_that_finds_a_lapsed_lease_takes_the_address_over_at_once(
    tmp_path: Path,
) -> None:
    env = {"GROUNDHOG_CLAIM_SECONDS": "0.2", "GROUNDHOG_RESOLVE_WAIT_SECONDS": "300"}
    with running_server(["resolver", "--data", str(tmp_path)], env=env) as server:
        proxy = ProxyDouble(server.url)
        proxy.open("lapsed")
        a, b = proxy.fork("lapsed", children=2)
        holder = proxy.resolve("lapsed", a, path="/slow").json()
        lapses = time.time() + 0.2
        wait_until(lambda: time.time() > lapses + 0.05, what="the holder's lease to lapse")
        taker = proxy.resolve("lapsed", b, path="/slow", follow=False).json()
    # No `wait` round trip to find out the holder is gone: the resolve itself takes over.
    assert taker["action"] == "forward" and taker["ticket"] not in (None, holder["ticket"])
