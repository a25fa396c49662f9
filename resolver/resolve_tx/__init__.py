"""The one door to the store for the proxy's three calls: a resolve, a wait's look, a record.

Each call runs the one resolve state machine (docs/internals.md, "The resolve lifecycle":
`Resolver.take` or `Resolver.look`, then `_settle` and `FinalSteps.carry_out`; `Recorder.commit`)
in one transaction, and this package alone chooses how that transaction runs:

- where (its `Lane`): `Lane.LOOP`, on the event loop in the loop writer's unit
  (resolve_tx/units.py `loop_writer_for`), when the store is SQLite at `synchronous=NORMAL` and
  nobody else is writing — a hit is a few hundred microseconds of SQLite work, and a thread hop
  would cost as much again; `Lane.THREAD`, on a worker thread in a unit of its own
  (`unit_of_work`), otherwise: PostgreSQL, a busy SQLite, a large record body, or a finish that
  asks the tape's simulator over HTTP;
- how it opens (resolve_tx/opening.py): one fused statement on PostgreSQL, the plain ones
  elsewhere or when the tape is not as last seen; and its commit, pipelined with the writes
  nobody reads on PostgreSQL (the unit's `write_later`).

The lane changes where the code runs, never what it does: a loop transaction that would wait
raises `WouldWait` before it has taken anything, and the same call runs again on a thread.
Every lane that answers the proxy — uvicorn's protocol (resolver/hot_protocol.py) and FastAPI's
routes (resolver/routes/internal.py) — comes through here. The thread lane is `Resolver.resolve`,
`Resolver.poll` and `Recorder.record` themselves, which a caller already on a thread of its own
(the benchmark, the simulator client, tests) calls directly. Without this package each entrance
chose for itself, and the choices had grown into twin functions (`resolve` and
`resolve_without_waiting`, …) that drifted apart. The store's transaction machinery
(store/unit.py, loop_writes.py, prepared.py, fused.py) is its private part: outside the store,
only this package imports it (tests/resolver/resolve_tx/test_private_parts.py).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from enum import StrEnum
from functools import partial
from typing import TYPE_CHECKING, NoReturn

from starlette.concurrency import run_in_threadpool

from engine.errors import ProblemError
from resolver.errors import ResolverError
from resolver.resolve_tx.units import LoopWriter, Unit, WouldWait

if TYPE_CHECKING:  # the steps import this package's parts, so the door names them lazily
    from engine.resolve_request import ResolveRequest
    from engine.resolve_results import Resolution, Waiting
    from resolver.record_outcomes import RecordResult
    from resolver.recording import Recorder
    from resolver.resolution import Resolver
    from resolver.schemas import RecordRequest

type Transaction = AbstractContextManager[Unit]
type Settled = Resolution | Waiting


class Lane(StrEnum):
    """Where a call's transaction runs."""

    LOOP = "loop"
    THREAD = "thread"

    @classmethod
    def _missing_(cls, value: object) -> NoReturn:
        valid = ", ".join(repr(lane.value) for lane in cls)
        raise ValueError(f"{value!r} is not a lane; the lanes are {valid}")


def lane_of(loop_writer: LoopWriter | None) -> Lane:
    """The lane a call tries first: the loop where the store has a loop writer."""
    return Lane.THREAD if loop_writer is None else Lane.LOOP


async def resolve(resolver: Resolver, wire: ResolveRequest) -> Settled:
    """A resolve, settled and finished, on the loop where it need not wait, else on a thread."""
    return await _settled(resolver, partial(resolver.take, wire), partial(resolver.resolve, wire))


async def poll(resolver: Resolver, waiting: Waiting) -> Settled:
    """A wait's look at the store, on the loop where it need not wait, else on a thread."""
    return await _settled(
        resolver, partial(resolver.look, waiting), partial(resolver.poll, waiting)
    )


async def _settled(
    resolver: Resolver,
    step: Callable[[Transaction], Settled],
    thread_lane: Callable[[], Settled],
) -> Settled:
    """`step` on the loop, finished; where the loop declines, `thread_lane` (the same step in a
    unit of work of its own, finished) on a worker thread."""
    taken = on_loop(resolver.loop_writer, step)
    if taken is None:
        return await run_in_threadpool(thread_lane)
    if resolver.needs_thread(taken):
        return await run_in_threadpool(resolver.finish, taken)
    return resolver.finish(taken)


def on_loop[Result](
    loop_writer: LoopWriter | None, step: Callable[[Transaction], Result]
) -> Result | None:
    """`step` in the loop writer's unit; None, with nothing taken, where there is none or
    its transaction would wait."""
    if lane_of(loop_writer) is Lane.THREAD:
        return None
    assert loop_writer is not None
    try:
        return step(loop_writer.unit())
    except WouldWait:
        return None


async def record(recorder: Recorder, wire: RecordRequest) -> RecordResult:
    """A record, on the loop for a small complete answer that need not wait, else on a thread.
    A failure of the loop's commit releases the claim on a thread and is raised."""
    try:
        committed = record_on_loop(recorder, wire)
    except Exception as error:
        await run_in_threadpool(recorder.fail, wire.ticket, error)
        raise  # `fail` always raises; this only satisfies the type checker
    if committed is not None:
        return committed
    return await run_in_threadpool(recorder.record, wire)


def record_on_loop(recorder: Recorder, wire: RecordRequest) -> RecordResult | None:
    """The loop lane of a record; None, with nothing done, for a record it leaves to a thread:
    one too large or not a complete answer, one whose transaction would wait, and one refused
    (an unusable body, an unknown ticket), which the thread lane refuses again and whose claim
    it releases."""
    if not recorder.fits_loop(wire):
        return None
    try:
        body = recorder.checked_body(wire)
        return on_loop(recorder.loop_writer, partial(recorder.commit, wire, body))
    except (ResolverError, ProblemError):
        return None
