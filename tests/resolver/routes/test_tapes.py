"""End to end: opening, listing, sealing and deleting tapes; bad input is precise problem+json."""

from __future__ import annotations

from tests.resolver.proxy_double import ProxyDouble

PROBLEM = "application/problem+json"


def test_open_creates_then_returns_then_conflicts(proxy: ProxyDouble, tape_name: str) -> None:
    created = proxy.http.post(
        "/v1/tapes", json={"name": tape_name, "world_seed": 3, "mode": "replay"}
    )
    assert created.status_code == 201
    assert created.json()["branches"] == 1 and created.json()["exchanges"] == 0
    same = proxy.http.post("/v1/tapes", json={"name": tape_name, "world_seed": 3, "mode": "replay"})
    assert same.status_code == 200 and same.json() == created.json()
    by_name = proxy.http.post("/v1/tapes", json={"name": tape_name})
    assert by_name.status_code == 200
    different = proxy.http.post(
        "/v1/tapes", json={"name": tape_name, "world_seed": 4, "mode": "groundhog"}
    )
    assert different.status_code == 409
    assert different.headers["content-type"] == PROBLEM
    assert different.json()["fields"] == ["mode", "world_seed"]
    assert "mode, world_seed" in different.json()["detail"]


def test_invalid_mode_and_model_list_valid_values(proxy: ProxyDouble, tape_name: str) -> None:
    mode = proxy.http.post("/v1/tapes", json={"name": tape_name, "mode": "magic"})
    assert mode.status_code == 422 and mode.headers["content-type"] == PROBLEM
    assert all(word in mode.json()["detail"] for word in ("naive", "replay", "groundhog"))
    model = proxy.http.post("/v1/tapes", json={"name": tape_name, "dependency_model": "x"})
    assert model.status_code == 422
    assert all(w in model.json()["detail"] for w in ("closure", "path", "rules", "hints"))
    assert proxy.http.get(f"/v1/tapes/{tape_name}").status_code == 404


def test_bad_tape_names_are_rejected(proxy: ProxyDouble) -> None:
    for name in ("..", "a/b", "x" * 101, "", "sp ace"):
        reply = proxy.http.post("/v1/tapes", json={"name": name})
        assert reply.status_code == 422, name
        assert reply.json()["errors"][0]["field"] == "name"


def test_list_show_seal_delete(proxy: ProxyDouble, tape_name: str) -> None:
    proxy.open(tape_name)
    proxy.ask(tape_name, "root", path="/a")
    names = [tape["name"] for tape in proxy.http.get("/v1/tapes").json()["tapes"]]
    assert tape_name in names
    assert proxy.http.get(f"/v1/tapes/{tape_name}").json()["exchanges"] == 1
    assert proxy.http.post(f"/v1/tapes/{tape_name}/seal").json()["online"] is False
    assert proxy.http.post(f"/v1/tapes/{tape_name}/unseal").json()["online"] is True
    assert proxy.http.delete(f"/v1/tapes/{tape_name}").status_code == 204
    missing = proxy.http.get(f"/v1/tapes/{tape_name}")
    assert missing.status_code == 404 and tape_name in missing.json()["detail"]
    assert proxy.http.delete(f"/v1/tapes/{tape_name}").status_code == 404


def test_unknown_route_is_problem_json(proxy: ProxyDouble) -> None:
    reply = proxy.http.get("/v1/nothing-here")
    assert reply.status_code == 404 and reply.headers["content-type"] == PROBLEM


def test_out_of_range_world_seed_and_oversized_config_are_4xx_naming_the_field(
    proxy: ProxyDouble, tape_name: str
) -> None:
    for seed in (2**70, 2**63, -(2**63) - 1):
        reply = proxy.http.post("/v1/tapes", json={"name": tape_name, "world_seed": seed})
        assert reply.status_code == 422, reply.text
        assert reply.json()["errors"][0]["field"] == "world_seed"
    assert proxy.open(tape_name, world_seed=2**63 - 1)["world_seed"] == 2**63 - 1
    huge = {"name": tape_name + "-big", "ignore_params": ["p" * 1000] * 300}  # ~300 KB
    reply = proxy.http.post("/v1/tapes", json=huge)
    assert reply.status_code == 413, reply.text
    assert reply.json()["field"] == "config" and "max_tape_config_bytes" in reply.json()["detail"]
    assert proxy.http.get(f"/v1/tapes/{tape_name}-big").status_code == 404
