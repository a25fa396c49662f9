"""The shop world: its routes, its write-read dependency, its oracle and its agent."""

from __future__ import annotations

import statistics

import pytest
from fastapi.testclient import TestClient

from worldsim import agent, shop, shop_agent
from worldsim.app import create_app
from worldsim.config import load_config

BASE = "http://testserver"


def _client(cooperative: bool = True) -> TestClient:
    return TestClient(create_app(load_config(seed=2, world="shop", cooperative=cooperative)))


def _session(client: TestClient, epoch: int = 4) -> dict[str, str]:
    token = client.post("/sessions", json={"epoch": epoch}).json()["session"]
    return {"Authorization": f"Bearer {token}"}


def _in_stock(epoch: int) -> str:
    return next(item for item in shop.CATALOG if shop.in_stock(epoch, item))


def test_the_offer_appears_only_after_the_write_and_the_oracle_sees_it() -> None:
    with _client(cooperative=False) as client:
        auth = _session(client)
        before = client.get("/cart", headers=auth)
        assert before.json() == {"items": [], "offer": None}
        item = _in_stock(4)
        assert client.post("/cart", json={"item": item}, headers=auth).status_code == 201
        after = client.get("/cart", headers=auth).json()
        assert after["offer"]["code"] == f"BUNDLE-{item}"
        sandbox = auth["Authorization"][7:]
        reads = [{"request_id": before.headers["x-request-id"], "sandbox": sandbox}]
        graded = client.post("/_oracle/served", json={"reads": reads}).json()["results"][0]
        assert graded["stale"] is True and graded["changed"] is True
        order = client.post(
            "/checkout", json={"coupon": after["offer"]["code"]}, headers=auth
        ).json()
        assert order["discount"] == after["offer"]["amount"]
        assert order["total"] == pytest.approx(
            order["price"] + order["shipping"] - order["discount"]
        )


def test_quotes_move_per_call_in_the_uncooperative_shop() -> None:
    with _client(cooperative=False) as client:
        auth = _session(client)
        first = client.get("/catalog", headers=auth).json()
        second = client.get("/catalog", headers=auth).json()
    assert first != second
    assert {item["id"] for item in first["items"]} == set(shop.CATALOG)


@pytest.mark.parametrize(
    ("method", "path", "body", "status"),
    [
        ("POST", "/cart", {"item": "nope"}, 422),
        ("POST", "/checkout", {}, 422),
        ("GET", "/items/nope", None, 404),
        ("GET", "/context", None, 404),
    ],
)
def test_bad_shop_requests_get_problems(method: str, path: str, body: object, status: int) -> None:
    with _client() as client:
        answer = client.request(method, path, json=body, headers=_session(client))
    assert answer.status_code == status


def test_deal_beats_compare_beats_impulse_in_process() -> None:
    with _client() as client:
        rewards = {strategy: [] for strategy in shop_agent.Strategy}
        for world in range(60):
            for strategy in shop_agent.Strategy:
                transport = agent.HttpTransport(client, BASE, {"X-Groundhog-Seed": str(world)})
                rollout = shop_agent.run_rollout(transport, strategy, world, epoch=world)
                rewards[strategy].append(rollout.reward)
                reads_own_write = strategy in ("deal", "coupon")
                assert rollout.saw_own_write is (True if reads_own_write else None)
    means = {strategy: statistics.fmean(values) for strategy, values in rewards.items()}
    assert means["deal"] > means["compare"]
