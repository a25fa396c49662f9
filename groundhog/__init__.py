"""Groundhog's worker side: the shim, the admin client, worker environments, GroupRunner, CLI.

    from groundhog import Groundhog, GroupRunner
    from groundhog.shim import shim, agent_rng

Names are imported lazily: a worker whose sitecustomize installs `groundhog.shim` at start-up
must not pay for importing httpx, requests and rich before its own code runs.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Groundhog": "groundhog.client",
    "Tape": "groundhog.client",
    "Branch": "groundhog.branch",
    "GroupRunner": "groundhog.group",
    "GroupResult": "groundhog.group",
    "GroundhogError": "groundhog.errors",
    "ResolverUnreachable": "groundhog.errors",
    "agent_rng": "groundhog.shim",
    "counters": "groundhog.shim",
    "install": "groundhog.shim",
    "uninstall": "groundhog.shim",
    "with_groundhog": "groundhog.verifiers_adapter",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'groundhog' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
