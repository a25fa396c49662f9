"""Keyed-hash noise: every exogenous value in the world is F(seed, request key, occurrence).

The benchmark's claim is that two branches asking the same question at the same occurrence
get the same answer, in any process and any order, while a different world seed gives an
independent draw. A stream RNG cannot do that (it desynchronises when branches read in
different orders); a keyed hash of the address can. Without this module the world would
either share nothing (naive forever) or need coordination between branches.
"""

from __future__ import annotations

import hashlib
import math
from statistics import NormalDist

_STANDARD_NORMAL = NormalDist(0.0, 1.0)
_SEPARATOR = b"\x1f"
_MANTISSA = 2.0**-53


def _digest(seed: int, parts: tuple[object, ...]) -> bytes:
    key = f"worldsim:{seed}".encode()[:64]
    message = _SEPARATOR.join(str(part).encode() for part in parts)
    return hashlib.blake2b(message, key=key, digest_size=16, person=b"worldsim-noise").digest()


def uniform(seed: int, *parts: object) -> float:
    """A uniform draw in the open interval (0, 1), fixed by the seed and the parts."""
    bits = int.from_bytes(_digest(seed, parts)[:8], "big") >> 11
    return (bits + 0.5) * _MANTISSA


def normal(seed: int, *parts: object) -> float:
    """A standard normal draw by inverse CDF (pure Python, identical on every host)."""
    return _STANDARD_NORMAL.inv_cdf(uniform(seed, *parts))


def lognormal(seed: int, median: float, sigma: float, *parts: object) -> float:
    """A lognormal draw with the given median and log-space standard deviation."""
    return median * math.exp(sigma * normal(seed, *parts))


def salted_seed(seed: int, salt: str) -> int:
    """A derived seed, e.g. an agent's exploration seed per branch: independent of `seed`."""
    return int.from_bytes(_digest(seed, ("salt", salt))[:8], "big")
