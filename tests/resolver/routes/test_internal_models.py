"""End to end: each dependency model leaves reads shared until a relevant write, and only then."""

from __future__ import annotations

import json

from tests.resolver.proxy_double import ProxyDouble

RULES = [
    {
        "method": "POST",
        "host": None,
        "path": "/docs/{id}",
        "reads": ["doc:{id}"],
        "writes": ["doc:{id}", "index:{body.topic}"],
    },
    {"method": "GET", "path": "/docs/{id}", "reads": ["doc:{id}"], "writes": []},
    {"method": "GET", "path": "/search", "reads": ["index:{query.topic}"], "writes": []},
    {"method": "POST", "path": "/query", "reads": ["index:{body.topic}"], "writes": []},
]


def test_path_model_invalidates_only_the_written_path(proxy: ProxyDouble, tape_name: str) -> None:
    proxy.open(tape_name, dependency_model="path")
    a, b = proxy.fork(tape_name, children=2)
    for branch in (a, b):
        proxy.ask(tape_name, branch, path="/docs/1")
        proxy.ask(tape_name, branch, path="/docs/2")
    proxy.ask(tape_name, b, "POST", "/docs/1", body=b"new")
    assert proxy.ask(tape_name, b, path="/docs/2").fingerprint == ""
    assert proxy.ask(tape_name, b, path="/docs/1").decision == "refetched"


def test_rules_model_follows_route_rules(proxy: ProxyDouble, tape_name: str) -> None:
    proxy.open(tape_name, dependency_model="rules", rules=RULES)
    a, b = proxy.fork(tape_name, children=2)
    energy = [["topic", "energy"]]
    sport = [["topic", "sport"]]
    base = {
        p: proxy.ask(tape_name, a, path="/search", query=q)
        for p, q in (("e", energy), ("s", sport))
    }
    body = json.dumps({"topic": "energy", "text": "hi"}).encode()
    proxy.ask(
        tape_name, b, "POST", "/docs/7", body=body, headers=[["Content-Type", "application/json"]]
    )
    energy_after = proxy.ask(tape_name, b, path="/search", query=energy)
    sport_after = proxy.ask(tape_name, b, path="/search", query=sport)
    assert energy_after.decision == "refetched"  # index:energy was written
    assert sport_after.decision == "shared" and sport_after.body == base["s"].body
    assert proxy.ask(tape_name, b, path="/docs/8").fingerprint == ""
    assert proxy.ask(tape_name, b, path="/docs/7").fingerprint != ""
    # A POST a rule declares read-only is a read: it is shared, not forwarded as a write.
    query = json.dumps({"topic": "sport"}).encode()
    json_type = [["Content-Type", "application/json"]]
    first = proxy.ask(tape_name, a, "POST", "/query", body=query, headers=json_type)
    second = proxy.ask(tape_name, b, "POST", "/query", body=query, headers=json_type)
    assert (first.decision, second.decision) == ("recorded", "shared")
    # An unmatched read falls back to closure: any write to the host invalidates it.
    assert proxy.ask(tape_name, b, path="/other").fingerprint != ""


def test_hints_model_uses_the_worlds_headers(proxy: ProxyDouble, tape_name: str) -> None:
    proxy.open(tape_name, dependency_model="hints")
    a, b, c = proxy.fork(tape_name, children=3)
    reads_doc = [["X-Groundhog-Reads", "doc:1"]]
    proxy.ask(tape_name, a, path="/docs/1", response_headers=reads_doc)
    proxy.ask(tape_name, a, path="/docs/2", response_headers=[["X-Groundhog-Reads", "doc:2"]])
    write_hint = [["X-Groundhog-Writes", "doc:1"]]
    proxy.ask(tape_name, b, "POST", "/docs/1", body=b"x", response_headers=write_hint)
    assert proxy.ask(tape_name, b, path="/docs/2").decision == "shared"
    assert proxy.ask(tape_name, b, path="/docs/1").decision == "refetched"
    # A read never hinted falls back to closure.
    assert proxy.ask(tape_name, b, path="/unhinted").fingerprint != ""
    assert proxy.ask(tape_name, c, path="/docs/1").decision == "shared"
    # A read the world says depends on nothing stays shared after any write.
    proxy.ask(tape_name, a, path="/context", response_headers=[["X-Groundhog-Reads", ""]])
    context = proxy.ask(tape_name, b, path="/context")
    assert context.decision == "shared" and context.fingerprint == ""
