"""The syntax of tape names and branch paths, defined once for the resolver and the proxy.

The resolver refuses a malformed name on every route; the proxy checks the same grammar on the
raw bytes a worker sends (`X-Groundhog-Tape`, `X-Groundhog-Branch`, proxy credentials) before
anything else reads them, so a byte the resolver would never accept cannot reach its code (or
crash the proxy's) by another path. Two copies of the grammar would drift apart.
"""

from __future__ import annotations

import re
from typing import Final

TAPE_NAME: Final = re.compile(r"[A-Za-z0-9_.-]{1,100}")
BRANCH_NAME: Final = re.compile(r"[A-Za-z0-9_.-]+")
BRANCH_PATH: Final = re.compile(r"root(?:/[A-Za-z0-9_.-]+)*")
MAX_BRANCH_PATH: Final = 1000
# A branch capability (resolver/capabilities.py): lower-case hex, as the resolver hands it out.
CAPABILITY: Final = re.compile(r"[0-9a-f]{16,128}")

TAPE_NAME_RULE: Final = "use 1-100 of A-Z a-z 0-9 _ . - (not '.' or '..')"
BRANCH_NAME_RULE: Final = "use A-Z a-z 0-9 _ . -"
BRANCH_PATH_RULE: Final = (
    "use 'root' or 'root/<name>/…' with names of A-Z a-z 0-9 _ . -, at most "
    f"{MAX_BRANCH_PATH} characters"
)

CAPABILITY_RULE: Final = "a capability is 16-128 lower-case hex digits, as a fork hands it out"


def is_tape_name(name: str) -> bool:
    return TAPE_NAME.fullmatch(name) is not None and name not in (".", "..")


def is_branch_name(name: str) -> bool:
    return BRANCH_NAME.fullmatch(name) is not None


def is_branch_path(path: str) -> bool:
    return len(path) <= MAX_BRANCH_PATH and BRANCH_PATH.fullmatch(path) is not None


def is_capability(text: str) -> bool:
    return CAPABILITY.fullmatch(text) is not None
