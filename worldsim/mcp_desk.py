"""The MCP world's domain: a travel desk whose fares move on their own, as pure functions.

The third benchmark world serves its tools over MCP (worldsim/mcp_world.py); this module is what
those tools compute, kept free of the transport so the server, the in-process check of the
strategies' order and the oracle render the same answers from the same inputs. Unlike the shop,
most of its exogenous noise sits in *reads*: a fare quote is drawn per call and the booking
charges the quote the agent read (its signed quote token), so sharing reads removes most of it;
a small booking fee is still drawn per call by the write. Its write-read dependency is a hold:
`my_trip` shows an upgrade voucher only after `hold`. Every read is a pure function of (trip,
day, noise seed, tool, arguments, occurrence). Constants are declared in bench/protocol.toml's
`[world.mcp]` before the world's first benchmark run. Without this module the oracle could
not re-render a served read against a session's trip, and stale reads could not be graded.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from types import MappingProxyType

from worldsim import noise, render
from worldsim.errors import InvalidRequest

FLIGHTS = 8
_CATALOG_SEED = 1
FARE_LEVEL_SIGMA = 0.15  # slow: the day's fare level (lognormal)
FARE_CALL_SIGMA = 0.2  # per call: each quote's jitter (lognormal)
FEE_MEDIAN = 0.05  # per call, drawn by the booking (a write: never shareable)
FEE_SIGMA = 0.5
VOUCHER_BASE = 0.05  # the upgrade voucher of the held flight: slow, per day and flight
VOUCHER_SPAN = 0.3
SEATS_PROBABILITY = 0.85
LATENCY_MEDIAN_MS = 120.0  # per call, reported in every answer (never slept)
LATENCY_SIGMA = 0.5

READ_TOOLS = ("search_flights", "flight_details", "my_trip")
WRITE_TOOLS = ("hold", "book")


@dataclass(frozen=True)
class Flight:
    id: str
    name: str
    value: float
    base_fare: float


def _catalog() -> dict[str, Flight]:
    flights = {}
    for number in range(1, FLIGHTS + 1):
        flight_id = f"f{number}"
        value = round(1.0 + noise.uniform(_CATALOG_SEED, "value", flight_id), 3)
        fare = round(0.5 + noise.uniform(_CATALOG_SEED, "fare", flight_id), 3)
        flights[flight_id] = Flight(flight_id, f"Flight {number}", value, fare)
    return flights


CATALOG = MappingProxyType(_catalog())


@dataclass
class Trip:
    """One session's state: the flight it holds (with the quote it holds it at) and bookings."""

    hold: tuple[str, str] | None = None
    bookings: list[dict[str, object]] = field(default_factory=list)


def tool_key(tool: str, arguments: dict[str, object]) -> str:
    """The world's canonical form of a tool call, used for noise and occurrence counts."""
    return f"{tool}#{render.encode(arguments).decode()}"


def seats(epoch: int, flight_id: str) -> bool:
    return noise.uniform(epoch, "seats", flight_id) < SEATS_PROBABILITY


def voucher_amount(epoch: int, flight_id: str) -> float:
    return round(VOUCHER_BASE + VOUCHER_SPAN * noise.uniform(epoch, "voucher", flight_id), 4)


def fare(flight: Flight, epoch: int, seed: int, key: str, occurrence: int) -> float:
    level = noise.lognormal(epoch, 1.0, FARE_LEVEL_SIGMA, "level")
    jitter = noise.lognormal(seed, 1.0, FARE_CALL_SIGMA, "fare", key, occurrence, flight.id)
    return round(flight.base_fare * level * jitter, 4)


def latency_ms(seed: int, key: str, occurrence: int) -> float:
    return round(
        noise.lognormal(seed, LATENCY_MEDIAN_MS, LATENCY_SIGMA, "latency", key, occurrence), 1
    )


def quote_token(world_seed: int, epoch: int, flight_id: str, amount: float) -> str:
    """A signed quote: the booking charges exactly the fare the agent was shown."""
    signature = noise.salted_seed(world_seed, f"quote:{epoch}:{flight_id}:{amount!r}")
    return f"{flight_id}:{amount!r}:{signature:016x}"


def parse_quote(world_seed: int, epoch: int, token: str) -> tuple[str, float]:
    """The flight and fare of a quote token this world signed on this day."""
    parts = token.split(":")
    if len(parts) != 3 or parts[0] not in CATALOG:
        raise InvalidRequest(f"not a quote token of this desk: {token[:80]!r}")
    try:
        amount = float(parts[1])
    except ValueError as error:
        raise InvalidRequest(f"not a quote token of this desk: {token[:80]!r}") from error
    if quote_token(world_seed, epoch, parts[0], amount) != token:
        raise InvalidRequest("the quote token's signature does not match (another day's quote?)")
    return parts[0], amount


def _quoted(
    world_seed: int, flight: Flight, epoch: int, seed: int, key: str, occurrence: int
) -> dict[str, object]:
    amount = fare(flight, epoch, seed, key, occurrence)
    return {
        "id": flight.id,
        "name": flight.name,
        "fare": amount,
        "quote": quote_token(world_seed, epoch, flight.id, amount),
        "seats": seats(epoch, flight.id),
    }


def read(
    trip: Trip,
    world_seed: int,
    seed: int,
    tool: str,
    arguments: dict[str, object],
    occurrence: int,
    epoch: int,
) -> dict[str, object]:
    """Render a read-only tool's answer: the pure function the oracle re-runs against trips."""
    key = tool_key(tool, arguments)
    payload: dict[str, object]
    if tool == "search_flights":
        order = sorted(
            CATALOG.values(), key=lambda f: noise.uniform(seed, "rank", key, occurrence, f.id)
        )
        listed = [_quoted(world_seed, f, epoch, seed, key, occurrence) for f in order]
        payload = {"flights": listed}
    elif tool == "flight_details":
        flight = CATALOG.get(str(arguments.get("flight")))
        if flight is None:
            raise InvalidRequest(f"no flight {arguments.get('flight')!r}; see search_flights")
        payload = {
            **_quoted(world_seed, flight, epoch, seed, key, occurrence),
            "value": flight.value,
        }
    elif tool == "my_trip":
        voucher = None
        if trip.hold is not None:
            held = trip.hold[0]
            voucher = {"code": f"UPGRADE-{held}", "amount": voucher_amount(epoch, held)}
        payload = {"hold": trip.hold[0] if trip.hold else None, "voucher": voucher}
    else:
        raise InvalidRequest(f"{tool!r} is not a read-only tool of this desk")
    return {**payload, "latency_ms": latency_ms(seed, key, occurrence)}


def write(
    trip: Trip,
    world_seed: int,
    seed: int,
    tool: str,
    arguments: dict[str, object],
    occurrence: int,
    epoch: int,
) -> dict[str, object]:
    """Apply a writing tool to ``trip`` (in place) and render its answer."""
    key = tool_key(tool, arguments)
    latency = latency_ms(seed, key, occurrence)
    if tool == "hold":
        flight_id, _amount = parse_quote(world_seed, epoch, str(arguments.get("quote", "")))
        if not seats(epoch, flight_id):
            raise InvalidRequest(f"{flight_id} has no seats today")
        trip.hold = (flight_id, str(arguments["quote"]))
        return {"held": flight_id, "latency_ms": latency}
    if tool != "book":
        raise InvalidRequest(f"{tool!r} is not a writing tool of this desk")
    if trip.hold is None:
        raise InvalidRequest("nothing is held: call hold first")
    flight_id, quote = trip.hold
    _, amount = parse_quote(world_seed, epoch, quote)
    code = arguments.get("voucher")
    discount = voucher_amount(epoch, flight_id) if code == f"UPGRADE-{flight_id}" else 0.0
    fee = round(noise.lognormal(seed, FEE_MEDIAN, FEE_SIGMA, "fee", key, occurrence), 4)
    booking = {
        "booking": f"b{len(trip.bookings) + 1}",
        "flight": flight_id,
        "value": CATALOG[flight_id].value,
        "fare": amount,
        "fee": fee,
        "discount": discount,
        "total": round(amount + fee - discount, 4),
    }
    trip.bookings.append(booking)
    trip.hold = None
    return {**booking, "latency_ms": latency}


def encode_answer(payload: dict[str, object]) -> str:
    """A tool's text answer: canonical JSON, so equal answers are equal bytes."""
    return render.encode(payload).decode()


def decode_answer(text: str) -> dict[str, object]:
    value = json.loads(text)
    if not isinstance(value, dict):
        raise ValueError("a desk answer is a JSON object")
    return value


def declared_gap(latency_cost_per_second: float) -> float:
    """The true expected `upgrade - compare` gap: the mean voucher minus one read's latency cost.

    Both strategies choose the same flight from the same quotes and pay the same expected fare
    and fee; `upgrade` adds one `my_trip` call (its latency is a lognormal cost) and redeems the
    voucher, uniform on [VOUCHER_BASE, VOUCHER_BASE + VOUCHER_SPAN].
    """
    mean_voucher = VOUCHER_BASE + VOUCHER_SPAN / 2
    mean_latency_s = LATENCY_MEDIAN_MS / 1000 * math.exp(LATENCY_SIGMA**2 / 2)
    return mean_voucher - latency_cost_per_second * mean_latency_s


def fare_call_sd() -> float:
    """The standard deviation of one quote's per-call jitter factor (a lognormal's)."""
    s2 = FARE_CALL_SIGMA**2
    return math.sqrt((math.exp(s2) - 1) * math.exp(s2))
