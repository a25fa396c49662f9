"""An engine refusal reaches the client as the resolver's own problems do (problem_handlers).

The ask path runs in engine/, whose errors are no ResolverError: a metadata address refused
there must still be a 403 `forbidden-target` with nothing taken (engine/forbidden_targets.py).
"""

from __future__ import annotations

from engine.forbidden_targets import OPT_OUT_FIELD
from tests.resolver.proxy_double import ProxyDouble


def test_the_resolver_refuses_a_metadata_ask_before_anything_is_taken(
    proxy: ProxyDouble, tape_name: str
) -> None:
    proxy.open(tape_name)
    answer = proxy.resolve(tape_name, "root", "GET", "/latest/meta-data/", host="169.254.169.254")
    assert answer.status_code == 403
    problem = answer.json()
    assert problem["type"].endswith("forbidden-target") and OPT_OUT_FIELD in problem["detail"]
    events = proxy.http.get(f"/v1/tapes/{tape_name}/events", params={"branch": "root"}).json()
    assert events["events"] == []
    assert proxy.http.get(f"/v1/tapes/{tape_name}").json()["exchanges"] == 0


def test_a_tape_may_opt_out(proxy: ProxyDouble, tape_name: str) -> None:
    proxy.open(tape_name, **{OPT_OUT_FIELD: True})
    served = proxy.ask(tape_name, "root", "GET", "/latest/meta-data/", host="169.254.169.254")
    assert served.decision == "recorded"
