"""An in-memory cache of recorded answers by address, for the resolve hit path.

An exchange never changes once recorded (first recording wins) and tape ids are never reused,
so an address's answer can be kept in memory safely by every replica: a hit then costs only the
branch bookkeeping (occurrence, event), not the exchange and body reads, the base64 encoding or
even the JSON encoding (each entry keeps its answer's JSON text, spliced into the reply as is).
Bounded by an approximate byte budget, least recently used first out.

An entry is put by the first hit of an address, or before that by the record that stored it
(resolver/recording.py `keep`): after a fork the first sibling to read what another branch just
recorded, and the siblings that waited on that record, are then served from memory too, not
from a read of the exchange and its blob (measured through the proxy at one client: the first
hit of an address cost about a tenth more than the next).
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from groundhog.protocol.wire import WireResponse

# Where an answer lives: tape id, request key hash, occurrence, fingerprint (the one definition).
Address = tuple[int, str, int, str]

DEFAULT_BUDGET_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class Recorded:
    """A recorded answer ready to serve: its exchange id, wire response, response headers.

    `response_json` is `response` as JSON text, encoded once here instead of on every hit.
    """

    exchange_id: int
    response: WireResponse
    response_headers: list[list[str]]
    response_json: bytes = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "response_json", dumps_compact(self.response))

    def size(self) -> int:
        return len(self.response_json) + 64 * (len(self.response_headers) + 4)


def dumps_compact(value: Any) -> bytes:
    """JSON bytes with no whitespace: the one encoding of resolve answers and cached parts."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


class AnswerCache:
    def __init__(self, budget_bytes: int = DEFAULT_BUDGET_BYTES) -> None:
        self.budget_bytes = budget_bytes
        self._entries: OrderedDict[Address, Recorded] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, address: Address) -> Recorded | None:
        with self._lock:
            entry = self._entries.get(address)
            if entry is not None:
                self._entries.move_to_end(address)
            return entry

    def put(self, address: Address, entry: Recorded) -> None:
        size = entry.size()
        if size > self.budget_bytes // 8:
            return  # one huge body should not flush everything else
        with self._lock:
            previous = self._entries.pop(address, None)
            if previous is not None:
                self._bytes -= previous.size()
            self._entries[address] = entry
            self._bytes += size
            while self._bytes > self.budget_bytes and self._entries:
                _, evicted = self._entries.popitem(last=False)
                self._bytes -= evicted.size()

    def forget_tape(self, tape_id: int) -> None:
        with self._lock:
            for address in [a for a in self._entries if a[0] == tape_id]:
                self._bytes -= self._entries.pop(address).size()

    def __len__(self) -> int:
        return len(self._entries)
