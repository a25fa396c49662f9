"""Failpoints: named places in the resolve lifecycle where a test can make the resolver (or a
lease-holding proxy) die.

Crash consistency is a claim about every transition of the lifecycle (docs/internals.md, "The
resolve lifecycle"): what is durable when the process dies *there*. A test cannot time a
`kill -9` to land between a commit and its answer, so the resolver offers the places itself.
`GROUNDHOG_FAILPOINTS` arms them: a comma-separated list of `name` or `name@N` (die on the
N-th time the name is reached, counting from 1). Reaching an armed failpoint SIGKILLs the
process (its whole group when it leads one): no shutdown hook, no last commit. Unset, as in
production, `reach` is one call and one empty-dict test; nothing else changes.
The proxy's places (`PROXY_NAMES`, in its branch lease paths) are armed by its option
`groundhog_failpoints` with the same syntax, and so is `proxy.hook.<Addon>.<hook>` (`HOOK_PREFIX`),
which does not kill: from its N-th time on it raises `InjectedFailure` inside that mitmproxy
hook of the proxy's addons, to prove an exception there fails closed (proxy/fail_closed.py).
Without this module the crash-injection test could only kill the resolver at random times,
which rarely land between a commit and its answer, where the interesting states are.
"""

from __future__ import annotations

import logging
import os
import signal

from engine.errors import EngineError, InvalidSpec

logger = logging.getLogger(__name__)

# Every failpoint, in lifecycle order: before and after each transition's commit.
NAMES = (
    "resolve.before_commit",  # the ask decided, nothing durable yet
    "resolve.committed",  # hit served / claim taken / write's intent durable; no answer sent
    "wait.before_commit",  # a waiter settled (served, failed, took over), not committed
    "wait.committed",  # a waiter's settle is durable; no answer sent
    "record.before_commit",  # the world answered; the record not durable
    "record.committed",  # the record durable; the proxy not told
    "lease.take.committed",  # a branch's lease granted; its holder not told
    "lease.events.before_commit",  # a holder's shipped hits applied, not committed
    "lease.events.committed",  # a holder's shipped hits durable; the holder not told
)
# The lease-holding proxy's (proxy/held_branches.py, proxy/lease_shipping.py).
PROXY_NAMES = (
    "proxy.lease.logged",  # a hit served locally is in the log; its bytes not sent
    "proxy.lease.batch_sent",  # a batch of hits shipped; its answer not marked in the log
    "proxy.lease.releasing",  # asked back (a fork's flush): the release batch not yet sent
)
# `proxy.hook.<Addon>.<hook>`: raise in that addon's hook instead of dying.
HOOK_PREFIX = "proxy.hook."


class InjectedFailure(EngineError, RuntimeError):
    """A failpoint armed to raise was reached (a test of what an exception there does)."""


# name -> hits left before the process dies (absent: not armed).
_armed: dict[str, int] = {}


def parse(spec: str) -> dict[str, int]:
    """`name[@N],…` as {name: N}; an unknown name or a bad count is refused, naming them all."""
    armed: dict[str, int] = {}
    for item in (part.strip() for part in spec.split(",")):
        if not item:
            continue
        name, _, count = item.partition("@")
        hook = name.removeprefix(HOOK_PREFIX)
        if name not in NAMES and name not in PROXY_NAMES and not (hook != name and hook):
            known = ", ".join((*NAMES, *PROXY_NAMES, f"{HOOK_PREFIX}<Addon>.<hook>"))
            raise InvalidSpec(
                f"unknown failpoint {name!r} in GROUNDHOG_FAILPOINTS; known: {known}",
                field="failpoints",
            )
        if count and (not count.isdigit() or int(count) < 1):
            raise InvalidSpec(
                f"failpoint {item!r}: the count after @ must be a whole number from 1",
                field="failpoints",
            )
        armed[name] = int(count) if count else 1
    return armed


def arm(spec: str) -> None:
    """Arm the failpoints `spec` names (replacing any armed before); "" disarms all."""
    _armed.clear()
    _armed.update(parse(spec))
    if _armed:
        logger.warning("failpoints armed: this process will SIGKILL itself at %s", spec)


def reach(name: str) -> None:
    """The lifecycle is at `name`: die here if it is armed and its count is used up."""
    if not _armed or name not in _armed:
        return
    _armed[name] -= 1
    if _armed[name] > 0:
        return
    logger.warning("failpoint %s reached: killing the process", name)
    if os.getpgrp() == os.getpid():
        os.killpg(os.getpid(), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)


def raise_if_armed(name: str) -> None:
    """Raise `InjectedFailure` at `name` if it is armed, from its N-th time on."""
    if not _armed or name not in _armed:
        return
    _armed[name] -= 1
    if _armed[name] <= 0:
        raise InjectedFailure(f"failpoint {name} reached")
