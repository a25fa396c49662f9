"""Where a step of the resolve transaction runs: the lane's unit, and the writer of the loop lane.

The steps of the resolve lifecycle (resolver/resolution.py, recording.py, final_steps.py,
record_outcomes.py, stored_form.py, notify.py) run on whatever unit the door
(resolver/resolve_tx/__init__.py) hands them, and never open one themselves: a step that
opened its own would run outside the lane the door chose (a thread's wait on the event loop,
or a second transaction where there must be one). So the store's transaction machinery
(store/unit.py, store/loop_writes.py, store/prepared.py, store/fused.py) is reached from the
resolver through this package alone; tests/resolver/resolve_tx/test_private_parts.py holds
every other module to it.
"""

from __future__ import annotations

from store.db import Store
from store.fused import ReadAhead
from store.loop_writes import LoopWriter, WouldWait
from store.prepared import Executor
from store.unit import Unit, unit_of_work  # the thread lane's unit, which may wait for the lock

__all__ = [
    "Executor",
    "LoopWriter",
    "ReadAhead",
    "Unit",
    "WouldWait",
    "loop_writer_for",
    "unit_of_work",
]


def loop_writer_for(store: Store, *, enabled: bool = True) -> LoopWriter | None:
    """The loop lane's writer for `store`; None where it is off or a commit could block
    (PostgreSQL, SQLite at `synchronous=FULL`): every call then takes the thread lane."""
    return LoopWriter.for_store(store) if enabled else None
