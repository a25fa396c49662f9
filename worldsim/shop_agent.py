"""The shop world's agent: four strategies and a reward from what it observed.

`deal` beats `compare` only when the agent sees its own write: after adding to the cart it
reads the cart, which shows a bundle offer for that item, and checks out with the coupon. A
replay that serves the cart as it was before the write shows no offer, and the coupon's saving
vanishes; `coupon` (added in protocol version 6 so a shop group has four branches like the
research world's) is the same read of its own write without the comparison. Reward = the
item's value - the total paid (price + shipping - discount) - a latency cost + the agent's own
noise, all read from replies. Its read order varies per rollout: the
items it compares are read in an order drawn from the agent's own seed.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from enum import StrEnum

from worldsim import noise
from worldsim.agent import LATENCY_COST_PER_SECOND, Step, Transport, _Session, parse_strategy

ATTENTION_COEFFICIENT = None  # the shop's reward has no observed zero-mean covariate
COMPARED = 3
AGENT_NOISE_SD = 0.05


class Strategy(StrEnum):
    """What the agent does; deal > compare > impulse (coupon's place was not declared)."""

    IMPULSE = "impulse"  # buy the first item listed in stock
    COMPARE = "compare"  # read three items, buy the best value for money
    DEAL = "deal"  # compare, then read the cart's offer and check out with its coupon
    COUPON = "coupon"  # buy the first item listed, read the cart's offer, use its coupon


_COMPARES = frozenset({Strategy.COMPARE, Strategy.DEAL})
_READS_OWN_WRITE = frozenset({Strategy.DEAL, Strategy.COUPON})


PROBE_STRATEGY = Strategy.DEAL


@dataclass(frozen=True)
class Rollout:
    strategy: Strategy
    agent_seed: int
    item: str
    value: float
    total: float
    latency_cost: float
    agent_noise: float
    offer_seen: bool | None
    reward: float
    steps: tuple[Step, ...]
    session: str | None = None
    attention: float | None = None

    @property
    def saw_own_write(self) -> bool | None:
        """For `deal` and `coupon`: did the cart show the item it had just added?"""
        return self.offer_seen

    def to_json(self) -> dict[str, object]:
        return {**asdict(self), "strategy": str(self.strategy)}


def probe_write_reply(path: str, body: bytes | None) -> dict[str, object]:
    """What a probe answers locally for a write (it never sends one)."""
    if path == "/cart":
        return {"items": [json.loads(body or b"{}").get("item")]}
    return {"order": "probe", "item": "", "value": 0.0, "total": 0.0}


def run_rollout(
    transport: Transport,
    strategy: Strategy | str,
    agent_seed: int,
    *,
    epoch: int | None = None,
    client: str | None = None,
    open_session: bool = True,
) -> Rollout:
    """Run one rollout; deterministic given the agent seed and the replies."""
    strategy = parse_strategy(strategy, Strategy)
    session = _Session(transport)
    if open_session:
        session.open(epoch, client)
    listed = [item for item in session.call("GET", "/catalog")["items"] if item["in_stock"]]
    if not listed:
        raise ValueError("nothing is in stock today")
    choice = str(listed[0]["id"])
    if strategy in _COMPARES:
        candidates = [str(item["id"]) for item in listed[:COMPARED]]
        # The agent's own seed orders its reads: read order varies per rollout.
        candidates.sort(key=lambda item_id: noise.uniform(agent_seed, "order", item_id))
        scored = {}
        for item_id in candidates:
            detail = session.call("GET", f"/items/{item_id}")
            scored[item_id] = float(detail["value"]) - float(detail["price"])
        choice = max(sorted(scored), key=scored.__getitem__)
    session.call("POST", "/cart", payload={"item": choice}, expect=201)
    coupon: str | None = None
    offer_seen: bool | None = None
    if strategy in _READS_OWN_WRITE:
        offer = session.call("GET", "/cart")["offer"]
        offer_seen = offer is not None
        coupon = str(offer["code"]) if offer else None
    payload = {"coupon": coupon} if coupon else {}
    order = session.call("POST", "/checkout", payload=payload, expect=201)
    agent_noise = AGENT_NOISE_SD * noise.normal(agent_seed, "agent", "shop")
    latency_cost = LATENCY_COST_PER_SECOND * session.latency_seconds()
    value, total = float(order["value"]), float(order["total"])
    reward = value - total - latency_cost + agent_noise
    return Rollout(
        strategy=strategy,
        agent_seed=agent_seed,
        item=choice,
        value=value,
        total=total,
        latency_cost=latency_cost,
        agent_noise=agent_noise,
        offer_seen=offer_seen,
        reward=reward if math.isfinite(reward) else math.nan,
        steps=tuple(session.steps),
        session=session.token,
    )
