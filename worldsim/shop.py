"""The second world: a shop whose prices move on their own, a cart the agent writes, an offer
that depends on that write, and a checkout whose answer carries noise no proxy can share.

It differs from the research world in structure, not only in numbers: its exogenous noise sits
largely in *writes* (the checkout's price and shipping fee are drawn when the order is placed,
always live), so sharing reads can remove only part of it; and its write-read dependency is a
cart (`POST /cart`, then `GET /cart` shows a bundle offer only for what is in it). Constants
are declared in bench/protocol.toml before the world's first benchmark run. Every read is a
pure function of (cart state, day, noise seed, request, occurrence), as in the research world,
so the same oracle grades it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from types import MappingProxyType

from worldsim import noise, render
from worldsim.errors import InvalidRequest, UnknownEndpoint

ITEMS = 8
_CATALOG_SEED = 0
PRICE_LEVEL_SIGMA = 0.15  # slow: the day's price level
PRICE_CALL_SIGMA = 0.15  # per call: each quote's jitter
SHIPPING_MEDIAN = 0.3  # per call, at checkout: lognormal fee
SHIPPING_SIGMA = 0.8
OFFER_BASE = 0.1  # the bundle offer for the item in the cart: slow, per day and item
OFFER_SPAN = 0.3
STOCK_PROBABILITY = 0.8


@dataclass(frozen=True)
class Item:
    id: str
    name: str
    value: float
    base_price: float


def _catalog() -> dict[str, Item]:
    items = {}
    for number in range(1, ITEMS + 1):
        item_id = f"i{number}"
        value = round(1.0 + noise.uniform(_CATALOG_SEED, "value", item_id), 3)
        price = round(0.5 + noise.uniform(_CATALOG_SEED, "price", item_id), 3)
        items[item_id] = Item(item_id, f"Item {number}", value, price)
    return items


CATALOG = MappingProxyType(_catalog())


@dataclass
class Cart:
    """One sandbox's state: the items in its cart and the orders it placed."""

    items: list[str] = field(default_factory=list)
    orders: dict[str, dict[str, object]] = field(default_factory=dict)

    def copy(self) -> Cart:
        return Cart(list(self.items), dict(self.orders))


def label(method: str, path: str) -> str:
    method = method.upper()
    if method == "GET" and path in ("/catalog", "/cart"):
        return f"GET {path}"
    if method == "GET" and path.startswith("/items/") and path[7:] and "/" not in path[7:]:
        return "GET /items/{id}"
    if method == "POST" and path in ("/cart", "/checkout", "/sessions"):
        return f"POST {path}"
    raise UnknownEndpoint(f"the shop has no endpoint {method} {path}")


def in_stock(epoch: int, item_id: str) -> bool:
    return noise.uniform(epoch, "stock", item_id) < STOCK_PROBABILITY


def offer_amount(epoch: int, item_id: str) -> float:
    return round(OFFER_BASE + OFFER_SPAN * noise.uniform(epoch, "offer", item_id), 4)


def quote(item: Item, epoch: int, seed: int, key: str, occurrence: int) -> float:
    level = noise.lognormal(epoch, 1.0, PRICE_LEVEL_SIGMA, "level")
    jitter = noise.lognormal(seed, 1.0, PRICE_CALL_SIGMA, "quote", key, occurrence, item.id)
    return round(item.base_price * level * jitter, 4)


def read(
    cart: Cart,
    seed: int,
    path: str,
    query: tuple[tuple[str, str], ...],
    occurrence: int,
    epoch: int,
) -> render.Rendered:
    """Render a GET: the pure function the oracle re-runs against other carts."""
    endpoint = label("GET", path)
    key = render.request_key("GET", path, query, b"")
    if endpoint == "GET /catalog":
        order = sorted(
            CATALOG.values(), key=lambda item: noise.uniform(seed, "rank", key, occurrence, item.id)
        )
        listed = [
            {
                "id": item.id,
                "name": item.name,
                "price": quote(item, epoch, seed, key, occurrence),
                "in_stock": in_stock(epoch, item.id),
            }
            for item in order
        ]
        return render.Rendered(200, {"items": listed})
    if endpoint == "GET /cart":
        offer = None
        if cart.items:
            item_id = cart.items[-1]
            offer = {"code": f"BUNDLE-{item_id}", "amount": offer_amount(epoch, item_id)}
        return render.Rendered(200, {"items": list(cart.items), "offer": offer}, ("cart",))
    item = CATALOG.get(path[len("/items/") :])
    if item is None:
        problem = {"status": 404, "title": "No such item", "detail": f"no item {path[7:]!r}"}
        return render.Rendered(404, problem)
    payload = {
        "id": item.id,
        "name": item.name,
        "value": item.value,
        "price": quote(item, epoch, seed, key, occurrence),
        "in_stock": in_stock(epoch, item.id),
    }
    return render.Rendered(200, payload)


def _body(body: bytes) -> dict[str, object]:
    try:
        data = json.loads(body or b"{}")
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise InvalidRequest(f"the body is not valid JSON: {error}") from error
    if not isinstance(data, dict):
        raise InvalidRequest("the body must be a JSON object")
    return data


def write(
    cart: Cart, endpoint: str, body: bytes, seed: int, key: str, occurrence: int, epoch: int
) -> render.Rendered:
    """Apply a write to ``cart`` (in place) and render its answer."""
    data = _body(body)
    if endpoint == "POST /cart":
        item_id = data.get("item")
        if not isinstance(item_id, str) or item_id not in CATALOG:
            raise InvalidRequest(f"item must be one of {', '.join(CATALOG)}")
        if not in_stock(epoch, item_id):
            raise InvalidRequest(f"{item_id} is out of stock today")
        cart.items.append(item_id)
        return render.Rendered(201, {"items": list(cart.items)}, (), ("cart",))
    if not cart.items:
        raise InvalidRequest("the cart is empty: POST /cart first")
    item = CATALOG[cart.items[-1]]
    coupon = data.get("coupon")
    discount = offer_amount(epoch, item.id) if coupon == f"BUNDLE-{item.id}" else 0.0
    shipping = round(
        noise.lognormal(seed, SHIPPING_MEDIAN, SHIPPING_SIGMA, "shipping", key, occurrence), 4
    )
    price = quote(item, epoch, seed, key, occurrence)
    order_id = f"o{len(cart.orders) + 1}"
    order = {
        "order": order_id,
        "item": item.id,
        "value": item.value,
        "price": price,
        "shipping": shipping,
        "discount": discount,
        "total": round(price + shipping - discount, 4),
    }
    cart.orders[order_id] = order
    cart.items.clear()
    return render.Rendered(201, order, (), ("cart", "orders"))
