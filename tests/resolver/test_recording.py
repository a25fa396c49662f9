"""An acknowledged record survives `kill -9` of the resolver."""

from __future__ import annotations

from tests.resolver.proxy_double import ProxyDouble
from tests.support.servers import running_server, start_server


def test_acknowledged_record_survives_kill_9(database_args: list[str]) -> None:
    args = ["resolver", *database_args]
    server = start_server(args)
    try:
        proxy = ProxyDouble(server.url)
        proxy.open("crash")
        a, b = proxy.fork("crash", children=2)
        recorded = [proxy.ask("crash", a, path=f"/item/{i}") for i in range(5)]
        assert all(s.decision == "recorded" for s in recorded)
        proxy.ask("crash", a, "POST", "/docs/1", body=b"w")
        server.kill_hard()
    finally:
        server.stop()
    with running_server(args) as restarted:
        proxy = ProxyDouble(restarted.url)
        replayed = [proxy.ask("crash", b, path=f"/item/{i}") for i in range(5)]
        assert [s.decision for s in replayed] == ["shared"] * 5
        assert [s.body for s in replayed] == [s.body for s in recorded]
        versions = proxy.http.get("/v1/tapes/crash/branches/root%2Fb0").json()["versions"]
        assert versions  # the write's version bump was committed with its record
        assert proxy.world.live_calls == 0
