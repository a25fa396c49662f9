"""Every `X-Groundhog-*` header name, declared once.

The proxy strips the prefix from what goes upstream, the resolver adds the cooperative ones,
worldsim reads them, the benchmark and the client read the answer's; each used to spell them
itself, and one misspelling is a header silently ignored. Names are in their canonical case;
compare case-insensitively (HTTP header names are).
"""

from __future__ import annotations

from typing import Final

PREFIX: Final = "X-Groundhog-"
# The prefix as lower-case bytes, for matching raw header fields on the proxy's hot path.
PREFIX_BYTES: Final = PREFIX.lower().encode("ascii")

# A worker names its tape and branch (or gives proxy credentials TAPE:BRANCH instead).
TAPE: Final = "X-Groundhog-Tape"
BRANCH: Final = "X-Groundhog-Branch"
# ... and presents the branch's capability (or gives it in the credentials TAPE:BRANCH:CAP).
CAPABILITY: Final = "X-Groundhog-Capability"

# Every answer the proxy gives says why the worker got these bytes.
DECISION: Final = "X-Groundhog-Decision"
OCCURRENCE: Final = "X-Groundhog-Occurrence"
FINGERPRINT: Final = "X-Groundhog-Fingerprint"
# A write whose live answer reached the worker but could not be recorded.
RECORD_ERROR: Final = "X-Groundhog-Record-Error"
# An injected fault's kind (engine/faults.py).
FAULT: Final = "X-Groundhog-Fault"
# A stored answer the tape's simulator wrote (engine/simulation.py).
SIMULATED: Final = "X-Groundhog-Simulated"

# Cooperative hosts get these on a live call (engine/asks.py) ...
SEED: Final = "X-Groundhog-Seed"
# ... and may name what a request reads and writes (the `hints` dependency model).
READS: Final = "X-Groundhog-Reads"
WRITES: Final = "X-Groundhog-Writes"


def is_groundhog_header(name: str) -> bool:
    """Whether a header is one of Groundhog's own (never sent upstream as the worker gave it)."""
    return name.lower().startswith(PREFIX.lower())


def naming(tape: str, branch: str, capability: str | None = None) -> dict[str, str]:
    """The headers that name a branch, presenting its capability when there is one."""
    named = {TAPE: tape, BRANCH: branch}
    if capability:
        named[CAPABILITY] = capability
    return named
