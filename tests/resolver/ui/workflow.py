"""A small recorded fork the viewer tests look at, made through the real internal protocol.

Two siblings read the same search (one records, one shares); `root/b1` writes a document and
reads it back (refetched, a non-empty fingerprint), `root/b0` reads the same address unchanged;
one answer carries markup that must be shown as text, never run.
"""

from __future__ import annotations

from dataclasses import dataclass

from tests.resolver.proxy_double import ProxyDouble, Served

HOSTILE_PATH = "/notes/<script>alert('x')</script>"


@dataclass
class Recorded:
    tape: str
    search_b0: Served
    search_b1: Served
    doc_b0: Served
    doc_b1: Served
    hostile: Served


def record_fork(proxy: ProxyDouble, tape: str) -> Recorded:
    proxy.open(tape, world_seed=7)
    b0, b1 = proxy.fork(tape, children=2)
    search = {"path": "/search", "query": [["q", "solar"]]}
    # One identity for both siblings: a credential joins the key (as a keyed placeholder).
    identity = {"headers": [["Authorization", "Bearer s3cret"]]}
    search_b0 = proxy.ask(tape, b0, **search, **identity)
    search_b1 = proxy.ask(tape, b1, **search, **identity)
    proxy.ask(tape, b1, "POST", "/docs/1", body=b'{"title": "b1 wrote this"}')
    doc_b1 = proxy.ask(tape, b1, path="/docs/1")
    doc_b0 = proxy.ask(tape, b0, path="/docs/1")
    hostile = proxy.ask(tape, b0, path=HOSTILE_PATH)
    return Recorded(tape, search_b0, search_b1, doc_b0, doc_b1, hostile)
