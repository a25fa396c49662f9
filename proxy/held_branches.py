"""The sidecar's branch leases: answer a leased branch's recorded reads without the resolver.

A branch is worked by one rollout worker at a time, behind one sidecar. With
`groundhog_branch_leases` on (the default), the sidecar takes the branch's lease at its first ask
(`/v1/leases/take`: the branch's counters and versions come with it) and from then on decides
each ask with the resolver's own code (engine/leased_hits.py) over that copy and the answers it
has seen or read ahead (in memory and on disk: proxy/lease_answers.py; `/v1/leases/ahead` once
the resolver served the branch a sibling's recording this sidecar lacked): a plain hit is served
here, written to the local log first (proxy/lease_log.py), counted in the copy and shipped to the
resolver behind in batches; anything else — a miss, a write, a fault, a key whose count the
copy cannot tell — is asked of the resolver as before, after the branch's unshipped hits. A
renewal long poll keeps the leases and hears when one is asked back (a fork, a seal, another
proxy's ask): the branch's hits are shipped and the lease released at once. Without this
module every hit is a round trip to the one shared resolver and its store. On by default where
the proxy has a lease dir (`python -m proxy` gives it <data>/leases); off, every ask goes to
the resolver.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from engine import failpoints
from engine.cache import Recorded
from engine.draft_memo import DraftMemo
from engine.leased_hits import BranchCopy, local_hit
from engine.resolve_request import ResolveRequest
from groundhog.protocol.capabilities import matches_digest
from groundhog.protocol.decisions import Action, Decision
from groundhog.protocol.wire import (
    AheadAnswer,
    LeaseAheadAsk,
    LeaseHitEvent,
    LeaseRenewAsk,
    LeaseTakeAsk,
    RecordAnswer,
    ResolveAnswer,
    ResolveAsk,
    WireResponse,
    wire_response,
)
from proxy.lease_answers import LeaseAnswers
from proxy.lease_log import HOLDER_NAME, LeaseLog, holder_id
from proxy.lease_shipping import HeldBranch, Shipper
from proxy.live import FlowState
from proxy.options import DEFAULT_LEASE_DISK_BYTES, lease_disk_bytes, seconds
from proxy.resolver_client import (
    ResolverClient,
    ResolverProtocolError,
    ResolverRejected,
    ResolverUnavailable,
)

log = logging.getLogger(__name__)

RESOLVER_ERRORS = (ResolverUnavailable, ResolverRejected, ResolverProtocolError)
# A branch whose lease was refused or asked back is not asked for again this soon.
COOL_DOWN_SECONDS = 1.0
# Answers kept in memory for local hits (the resolver's own bounded cache of recordings by
# address); `groundhog_lease_disk_bytes` more on disk (proxy/answer_disk.py).
CACHE_BUDGET_BYTES = 64 * 1024 * 1024
# Decisions whose served answer took the ask's occurrence (an `upstream-failed` took none).
_COUNTED = {Decision.SHARED, Decision.STALE, Decision.INJECTED, Decision.SIMULATED}


def configured_leases(
    current: LeaseBook | None, options: Any, resolver: Callable[[], ResolverClient]
) -> LeaseBook | None:
    """The proxy's lease book as its options want it: None with `groundhog_branch_leases` off
    or no `groundhog_lease_dir`, the one it has (its ship window updated) or a new one there.

    Leases are on by default, but a sidecar started as a bare `mitmdump -s proxy/addon.py` has
    no lease dir: a temporary one would lose the log of served hits with a restart (hits
    acknowledged to the worker and never shipped), so such a proxy asks the resolver for every
    hit and says so once."""
    if not options.groundhog_branch_leases:
        return None
    if not options.groundhog_lease_dir:
        if current is None:
            log.warning(
                "branch leases are on but groundhog_lease_dir is not set: every hit is asked "
                "of the resolver (--set groundhog_lease_dir=DIR, kept across restarts, to "
                "answer this branch's hits here; --set groundhog_branch_leases=false to "
                "silence this)"
            )
        return None
    window = seconds(options, "groundhog_lease_ship_seconds")
    disk_bytes = lease_disk_bytes(options)
    if current is None:
        directory = Path(options.groundhog_lease_dir)
        return LeaseBook(resolver, directory, ship_window=window, disk_bytes=disk_bytes)
    current.shipper.window = window
    current.answers.resize(disk_bytes)
    return current


class LeaseBook:
    """The leases one proxy holds, keyed by (tape, branch)."""

    def __init__(
        self,
        resolver: Callable[[], ResolverClient],
        directory: Path,
        *,
        ship_window: float,
        disk_bytes: int = DEFAULT_LEASE_DISK_BYTES,
    ) -> None:
        self._resolver = resolver
        # A holder id kept from before: this proxy restarted, and may have left leases held.
        self.restarted = (directory / HOLDER_NAME).exists()
        self.holder = holder_id(directory)
        self.log = LeaseLog(directory)
        self.shipper = Shipper(
            resolver, self.holder, self.log, window=ship_window, on_lost=self._forget
        )
        self.answers = LeaseAnswers(
            directory, memory_bytes=CACHE_BUDGET_BYTES, disk_bytes=disk_bytes
        )
        self.drafts = DraftMemo()
        self._held: dict[tuple[str, str], HeldBranch] = {}
        self._cooling: dict[tuple[str, str], float] = {}
        self._reading_ahead: set[asyncio.Task[None]] = set()
        self._taking: dict[tuple[str, str], asyncio.Task[HeldBranch | None]] = {}
        self._renewer: asyncio.Task[None] | None = None
        # Leases being shipped and released (a write moved the copy on): taken again after.
        self._releasing: dict[tuple[str, str], asyncio.Future[Any]] = {}
        self._lease_seconds = 6.0
        self.local_hits = 0
        # Set once the log of a previous life is shipped: nothing is served or asked before.
        self.recovered = asyncio.Event()

    # -- the request path -----------------------------------------------------------------

    async def answer(
        self, payload: ResolveAsk, ask: Callable[[ResolveAsk], Awaitable[ResolveAnswer | None]]
    ) -> ResolveAnswer | None:
        """This proxy's own answer to a hit of a branch it holds, else `ask`'s (the resolver's,
        after the branch's unshipped hits), learnt from. `ResolverUnavailable` if those hits
        could not be shipped (`before_remote`): `ask` was not called."""
        local = await self.serve(payload)
        if local is not None:
            return local
        await self.before_remote(payload)
        answer = await ask(payload)
        if answer is not None:
            self.learn(payload, answer)
        return answer

    async def serve(self, payload: ResolveAsk) -> ResolveAnswer | None:
        """The answer for a hit of a branch this proxy holds (taking the lease at the branch's
        first ask), or None: ask the resolver (after `before_remote`)."""
        await self.recovered.wait()
        name = (payload["tape"], payload["branch"])
        capability = payload.get("capability")
        held = self._held.get(name) or await self._take(name, capability)
        if held is None or payload.get("body_too_large"):
            return None
        if not matches_digest(held.capability_digest, capability):
            return None  # not this branch's capability: the resolver refuses it
        try:
            wire = ResolveRequest.model_validate(payload)
            body = base64.b64decode(wire.body) if wire.body else b""
        except ValueError:
            return None  # the resolver names what is wrong with it
        hit = await self.answers.decide(
            lambda find: local_hit(held.copy, wire, body, find, self.drafts)
        )
        if hit is None or hit.ask.key.hash in held.unknown:
            return None
        if self._held.get(name) is not held:
            return None  # released while its answer was read from disk: the resolver's now
        ask, recorded = hit.ask, hit.recorded
        event: LeaseHitEvent = {
            "method": ask.request.method,
            "url": ask.request.url(),
            "key_hash": ask.key.hash,
            "occurrence": ask.occurrence,
            "fingerprint": ask.fingerprint,
            "exchange_id": recorded.exchange_id,
            "true_fingerprint_nonempty": ask.true_fingerprint != "",
            "attempt": payload.get("attempt"),
            "serial": held.served + 1,
        }
        self.log.append(held.lease, event)  # before the answer's bytes leave
        failpoints.reach("proxy.lease.logged")
        held.served += 1
        held.copy.counts[ask.key.hash] = ask.occurrence + 1
        held.pending.append(event)
        self.shipper.soon(held)
        self.local_hits += 1
        return {
            "action": str(Action.SERVE),
            "decision": str(Decision.SHARED),
            "occurrence": ask.occurrence,
            "fingerprint": ask.fingerprint,
            "request_key": ask.key.hash,
            "ticket": None,
            "upstream_headers": [],
            "delay_ms": hit.delay_ms,
            "response": recorded.response,
        }

    async def before_remote(self, payload: ResolveAsk) -> None:
        """Before the resolver is asked about a branch: its unshipped hits go first, and the
        ask names this holder (the resolver refuses other askers of a leased branch).

        Raises `ResolverUnavailable` if the hits could not be shipped within the resolver
        client's retry window (`Shipper.ship_first`: the ask would be answered from counts
        that miss them)."""
        payload["lease_holder"] = self.holder
        held = self._held.get((payload["tape"], payload["branch"]))
        if held is not None and held.pending:
            await self.shipper.ship_first(held, self._resolver().resolve_retry)

    def learn(self, payload: ResolveAsk, answer: ResolveAnswer) -> None:
        """What the resolver's answer tells the copy: a served read's occurrence is counted and
        its recording kept; a write moves versions the copy cannot follow (taken again); any
        other answer leaves its key's count unknown until the resolver answers it again."""
        name = (payload["tape"], payload["branch"])
        held = self._held.get(name)
        if held is None:
            return
        key, occurrence = answer.get("request_key"), answer.get("occurrence")
        decision = str(answer.get("decision"))
        if decision in (Decision.WRITE, Decision.REPLAYED_WRITE):
            self._drop(name, "a write moved its versions")
            return
        if not isinstance(key, str) or not isinstance(occurrence, int):
            return
        if answer.get("action") != Action.SERVE or decision not in _COUNTED:
            held.unknown.add(key)
            return
        held.answered(key, occurrence)
        exchange_id, response = answer.get("exchange_id"), answer.get("response")
        if isinstance(exchange_id, int) and isinstance(response, dict):
            fingerprint = str(answer.get("fingerprint") or "")
            self._keep(held, (key, occurrence, fingerprint), exchange_id, response)
        if decision == Decision.SHARED and not held.read_ahead:
            # A recording this sidecar lacked: its siblings record elsewhere, so what else
            # they recorded is worth reading ahead, once per lease.
            self._start_read_ahead(name, held)

    def learn_recorded(self, state: FlowState, answer: RecordAnswer, sent_body: bytes) -> None:
        """A read recorded through this proxy: its occurrence is counted, and its stored form
        (what its siblings will be served) kept for them."""
        held = self._held.get((state.tape, state.branch))
        key, occurrence, fingerprint = state.request_key, state.occurrence, state.fingerprint
        if held is None or not key or occurrence is None:
            return
        held.answered(key, occurrence)
        stored, exchange_id = answer.get("response"), answer.get("exchange_id")
        if stored is None or not isinstance(exchange_id, int):
            return
        body = stored["body"]
        if body is None:  # byte-identical to what was sent
            body = base64.b64encode(sent_body).decode()
        response = wire_response(stored["status"], stored["headers"], body)
        self._keep(held, (key, occurrence, fingerprint), exchange_id, response)

    # -- taking, shipping, renewing, releasing --------------------------------------------

    async def _take(
        self, name: tuple[str, str], capability: str | None = None
    ) -> HeldBranch | None:
        """The branch's lease, taken for an ask presenting `capability` (the resolver refuses
        a take without the branch's capability where the tape requires one)."""
        if time.monotonic() < self._cooling.get(name, 0.0):
            return None
        taking = self._taking.get(name)
        if taking is None:
            taking = asyncio.ensure_future(self._take_now(name, capability))
            self._taking[name] = taking
            taking.add_done_callback(lambda _done: self._taking.pop(name, None))
        return await asyncio.shield(taking)

    async def _take_now(self, name: tuple[str, str], capability: str | None) -> HeldBranch | None:
        tape, branch = name
        releasing = self._releasing.pop(name, None)
        if releasing is not None:
            await asyncio.shield(releasing)  # its hits shipped first: serials stay in order
        ask: LeaseTakeAsk = {"tape": tape, "branch": branch, "holder": self.holder}
        if capability:
            ask["capability"] = capability
        try:
            grant = await self._resolver().take_lease(ask)
            digest = grant.get("capability_digest")
            held = HeldBranch(
                epoch=int(grant["epoch"]),
                copy=BranchCopy.from_grant(grant),
                served=int(grant.get("shipped") or 0),  # the serials it has shipped already
                capability_digest=None if digest is None else str(digest),
            )
        except (*RESOLVER_ERRORS, KeyError, TypeError, ValueError) as error:
            log.info("no lease on %s/%s for now: %s", tape, branch, error)
            if not isinstance(error, ResolverUnavailable):
                self._cooling[name] = time.monotonic() + COOL_DOWN_SECONDS
            # A resolver that went away may have granted it and died before answering: the
            # branch's next ask takes it again (a holder's take of its own lease is granted),
            # so it is renewed and released when asked back, not left to lapse unknown.
            return None
        self._held[name] = held
        self.answers.bind(grant.get("store"))
        self._lease_seconds = float(grant.get("lease_seconds") or 6.0)
        if self._renewer is None or self._renewer.done():
            self._renewer = asyncio.ensure_future(self._renew_forever())
        return held

    def _start_read_ahead(self, name: tuple[str, str], held: HeldBranch) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no event loop to read on (a test's direct call)
            return
        held.read_ahead = True
        reading = loop.create_task(self._read_ahead(name, held))
        self._reading_ahead.add(reading)
        reading.add_done_callback(self._reading_ahead.discard)

    async def _read_ahead(self, name: tuple[str, str], held: HeldBranch) -> None:
        """Keep the recorded answers the branch may ask next (what siblings recorded, through
        any sidecar, at or past its counts), but those kept here already."""
        ask: LeaseAheadAsk = {
            "tape": name[0],
            "branch": name[1],
            "held": self.answers.held(held.copy.tape.id),
        }
        try:
            answer = await self._resolver().read_ahead(ask)
        except RESOLVER_ERRORS as error:
            log.info("no read-ahead for %s/%s: %s", *name, error)
            return
        self._keep_ahead(held, answer.get("ahead") or [])

    def _keep_ahead(self, held: HeldBranch, ahead: list[AheadAnswer]) -> None:
        """Answers read ahead, kept at their addresses (recordings never change: kept even if
        the lease went meanwhile)."""
        for entry in ahead:
            try:
                where = (str(entry["key"]), int(entry["occurrence"]), str(entry["fingerprint"]))
                self._keep(held, where, int(entry["exchange_id"]), entry["response"])
            except (KeyError, TypeError, ValueError) as error:
                log.warning("skipping a read-ahead answer the resolver sent: %s", error)

    def _keep(
        self,
        held: HeldBranch,
        where: tuple[str, int, str],
        exchange_id: int,
        response: WireResponse,
    ) -> None:
        """Keep a recorded answer at its address (key, occurrence, fingerprint) of the branch's
        tape: every hit of it from now on is answered here (recordings never change)."""
        headers = [list(pair) for pair in response["headers"] or []]
        self.answers.keep((held.copy.tape.id, *where), Recorded(exchange_id, response, headers))

    def _forget(self, held: HeldBranch) -> None:
        for name, other in list(self._held.items()):
            if other is held:
                del self._held[name]

    def _drop(self, name: tuple[str, str], why: str) -> None:
        """Stop serving the branch locally (its copy went stale) and release its lease."""
        held = self._held.pop(name, None)
        if held is not None:
            log.debug("releasing %s/%s: %s", *name, why)
            self.shipper.released_soon(held)
            if held.shipper is not None:
                self._releasing[name] = held.shipper

    async def release(self, name: tuple[str, str]) -> None:
        held = self._held.pop(name, None)
        if held is not None:
            self._cooling[name] = time.monotonic() + COOL_DOWN_SECONDS
            await self.shipper.ship(held, release=True)

    async def _renew_forever(self) -> None:
        while self._held:
            held = {h.copy.branch.id: (name, h) for name, h in self._held.items()}
            payload: LeaseRenewAsk = {
                "holder": self.holder,
                "leases": [{"branch_id": b, "epoch": h.epoch} for b, (_n, h) in held.items()],
            }
            try:
                answer = await self._resolver().renew_leases(payload, self._lease_seconds / 3)
            except RESOLVER_ERRORS as error:
                log.warning("could not renew branch leases: %s", error)
                await asyncio.sleep(min(1.0, self._lease_seconds / 6))
                continue
            for branch_id in answer.get("revoke") or []:
                if branch_id in held:
                    await self.release(held[branch_id][0])
            for branch_id in answer.get("lost") or []:
                if branch_id in held:
                    log.error("lost the lease of branch %s", held[branch_id][1].copy.branch.path)
                    self._forget(held[branch_id][1])

    # -- start and stop -------------------------------------------------------------------

    async def recover(self, *, patience: float = 30.0) -> None:
        """Ship what the log holds from before a restart (its leases then released), asking
        a resolver that is not there yet again for up to `patience` seconds."""
        try:
            await self.answers.open()
            await self.shipper.recover(patience, restarted=self.restarted)
        finally:
            self.recovered.set()

    async def close(self) -> None:
        """Ship everything and release every lease (mitmproxy is shutting down)."""
        for name in list(self._held):
            try:
                await self.release(name)
            except RESOLVER_ERRORS as error:
                log.error("could not release %s/%s: %s", *name, error)
        if self._renewer is not None:
            self._renewer.cancel()
        for reading in list(self._reading_ahead):
            reading.cancel()
        await self.answers.settle()
        self.log.close()
