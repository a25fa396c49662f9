"""End to end: forking branches and reading them back."""

from __future__ import annotations

from tests.resolver.proxy_double import ProxyDouble


def test_fork_by_count_takes_next_free_names(proxy: ProxyDouble, tape_name: str) -> None:
    proxy.open(tape_name)
    assert proxy.fork(tape_name, children=2) == ["root/b0", "root/b1"]
    assert proxy.fork(tape_name, children=["x"]) == ["root/x"]
    assert proxy.fork(tape_name, children=1) == ["root/b2"]
    assert proxy.fork(tape_name, parent="root/b0", children=1) == ["root/b0/b0"]
    listed = proxy.http.get(f"/v1/tapes/{tape_name}/branches").json()["branches"]
    assert [b["path"] for b in listed] == [
        "root",
        "root/b0",
        "root/b0/b0",
        "root/b1",
        "root/b2",
        "root/x",
    ]
    root = proxy.http.get(f"/v1/tapes/{tape_name}/branches/root").json()
    assert root["children"] == ["root/b0", "root/b1", "root/b2", "root/x"]
    assert root["parent"] is None


def test_shim_counters_are_stored_on_children(proxy: ProxyDouble, tape_name: str) -> None:
    proxy.open(tape_name)
    reply = proxy.http.post(
        f"/v1/tapes/{tape_name}/fork",
        json={"parent": "root", "children": 1, "shim_counters": {"random": 4}},
    )
    assert reply.status_code == 201
    child = proxy.http.get(f"/v1/tapes/{tape_name}/branches/root/b0").json()
    assert child["shim_counters"] == {"random": 4}


def test_fork_errors(proxy: ProxyDouble, tape_name: str) -> None:
    proxy.open(tape_name)
    proxy.fork(tape_name, children=["a"])
    missing = proxy.http.post(
        f"/v1/tapes/{tape_name}/fork", json={"parent": "root/zz", "children": 1}
    )
    assert missing.status_code == 404 and "root/zz" in missing.json()["detail"]
    clash = proxy.http.post(
        f"/v1/tapes/{tape_name}/fork", json={"parent": "root", "children": ["a"]}
    )
    assert clash.status_code == 409 and clash.json()["branches"] == ["root/a"]
    malformed = proxy.http.post(
        f"/v1/tapes/{tape_name}/fork", json={"parent": "trunk", "children": 1}
    )
    assert malformed.status_code == 422 and "'root'" in malformed.json()["detail"]
    bad_child = proxy.http.post(f"/v1/tapes/{tape_name}/fork", json={"children": ["a/b"]})
    assert bad_child.status_code == 422
    no_tape = proxy.http.post("/v1/tapes/none-such/fork", json={"children": 1})
    assert no_tape.status_code == 404
    no_branch = proxy.http.get(f"/v1/tapes/{tape_name}/branches/root%2Fnope")
    assert no_branch.status_code == 404


def test_a_fork_without_counters_copies_the_parents_stored_ones(
    proxy: ProxyDouble, tape_name: str
) -> None:
    proxy.open(tape_name)
    reported = {"version": 1, "world_seed": 0, "clock_ns": 50, "occurrences": {"uuid4": 3}}
    put = proxy.http.put(f"/v1/tapes/{tape_name}/branches/root/shim-counters", json=reported)
    assert put.status_code == 200, put.text
    assert put.json()["shim_counters"] == reported
    (child,) = proxy.fork(tape_name, children=1)
    stored = proxy.http.get(f"/v1/tapes/{tape_name}/branches/{child}").json()["shim_counters"]
    assert stored == reported


def test_fork_makes_two_children_by_default_as_the_cli_does(
    proxy: ProxyDouble, tape_name: str
) -> None:
    proxy.open(tape_name)
    reply = proxy.http.post(f"/v1/tapes/{tape_name}/fork", json={"parent": "root"})
    assert reply.json()["branches"] == ["root/b0", "root/b1"]


def test_shim_counter_reports_are_checked(proxy: ProxyDouble, tape_name: str) -> None:
    proxy.open(tape_name)
    route = f"/v1/tapes/{tape_name}/branches/root/shim-counters"
    wrong_world = proxy.http.put(route, json={"version": 1, "world_seed": 99})
    assert wrong_world.status_code == 422 and "world 99" in wrong_world.json()["detail"]
    negative = proxy.http.put(route, json={"version": 1, "occurrences": {"uuid4": -1}})
    assert negative.status_code == 422
    missing = proxy.http.put(
        f"/v1/tapes/{tape_name}/branches/root/zz/shim-counters", json={"version": 1}
    )
    assert missing.status_code == 404


def test_validator_messages_carry_no_pydantic_label(proxy: ProxyDouble, tape_name: str) -> None:
    proxy.open(tape_name)
    reply = proxy.http.post(f"/v1/tapes/{tape_name}/fork", json={"children": 0})
    assert reply.status_code == 422
    assert "give between 1 and 1000 children" in reply.json()["detail"]
    assert "Value error" not in reply.text
