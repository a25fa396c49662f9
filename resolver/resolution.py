"""The resolve path: one short transaction that takes the ask, settles it through the one
decision path (engine/decision.py) and has its final step carried out: serve from tape, hand
out a ticket to go live, or say "wait, someone is fetching".

This is the edge where the pure modules (keys, redaction, dependencies, fingerprint, policy,
decision) meet the store. Without it the proxy would have nobody to ask. Waiting itself (single
flight) is driven by the async `/v1/wait` route, which calls `poll` when woken (the address was
recorded) or when the holder's claim lapses; a holder renews its claim
(resolver/claim_renewal.py) while it fetches. A poll settles through the same decision path,
from the facts it has looked up.

`_settle` is the loop: it asks `decide_step` for the next step, performs the lookups it asks for
(`_find`, the locked online flag, a claim attempt) and hands the final step to
`FinalSteps.carry_out` (resolver/final_steps.py), the one place that writes events, pending
records and claims. A plain hit is that loop with one lookup. Every forward re-reads the tape's
online flag under a share lock in the transaction that hands it out, so once a seal commits no
new live call starts. The facts each lookup yields are read by engine/facts.py; what a resolve
settles to is engine/resolve_results.py.
"""

from __future__ import annotations

import secrets
import time
from contextlib import AbstractContextManager
from dataclasses import replace

from sqlalchemy.orm import Session

from engine import failpoints, injection
from engine.asks import Ask, passes_through
from engine.cache import Address, AnswerCache, Recorded
from engine.decision import ClaimState, Facts, Step, decide_step
from engine.draft_memo import DraftMemo
from engine.facts import address_of, claim_state, facts_of, holder_of, recorded_facts
from engine.policy import Action
from engine.refs import TapeRef
from engine.resolve_request import ResolveRequest
from engine.resolve_results import Resolution, Waiting, wants_simulator
from resolver import answers
from resolver.capabilities import Capabilities
from resolver.disk import DiskReserve
from resolver.echoes import EchoBook
from resolver.errors import BodyTooLarge
from resolver.final_steps import FinalSteps
from resolver.lease_service import fence_out
from resolver.resolve_tx.opening import take_ask
from resolver.resolve_tx.units import Executor, LoopWriter, ReadAhead, Unit, unit_of_work
from resolver.schemas import decode_base64
from resolver.simulator_client import SimulatorClient
from store import claims, exchanges, write_answers
from store.db import Store, relax_commit_durability

# Tapes whose config is kept as a guess (a few per deployment; more only clears the guesses).
TAPES_REMEMBERED = 1024


class Resolver:
    """Resolve and poll asks against one store."""

    def __init__(
        self,
        store: Store,
        *,
        max_body_bytes: int,
        claim_seconds: float,
        cache: AnswerCache | None = None,
        redaction_key: bytes | None = None,
        echoes: EchoBook | None = None,
        reserve: DiskReserve | None = None,
        loop_writer: LoopWriter | None = None,
        capabilities: Capabilities | None = None,
    ) -> None:
        self.store = store
        self.loop_writer = loop_writer
        # Without a deployment key (tests, benches) placeholders are keyed by a process key.
        self.redaction_key = redaction_key or secrets.token_bytes(32)
        self.max_body_bytes = max_body_bytes
        self.claim_seconds = claim_seconds
        self.capabilities = capabilities or Capabilities(self.redaction_key)
        self.cache = cache if cache is not None else AnswerCache()
        self.simulator = SimulatorClient(
            store, max_body_bytes=max_body_bytes, redaction_key=self.redaction_key
        )
        self._final_steps = FinalSteps(
            claim_seconds=claim_seconds,
            echoes=echoes if echoes is not None else EchoBook(),
            reserve=reserve,
            redaction_key=self.redaction_key,
        )
        self._recorded_stays_put = store.engine.dialect.name == "sqlite"
        # Each tape as the last resolve found it (resolver/resolve_tx/opening.py `take_ask`).
        self._tapes: dict[str, TapeRef] = {}
        # Siblings ask alike: a request's draft, remembered across branches (draft_memo.py).
        self._drafts = DraftMemo()

    def resolve(self, wire: ResolveRequest) -> Resolution | Waiting:
        """A resolve on this thread, in a unit of work of its own: the thread lane of
        resolver/resolve_tx, which the proxy's calls come through."""
        return self.finish(self.take(wire, unit_of_work(self.store)))

    def poll(self, waiting: Waiting) -> Resolution | Waiting:
        """One look at an address someone else is fetching, on this thread (the thread lane)."""
        return self.finish(self.look(waiting, unit_of_work(self.store)))

    def finish(self, result: Resolution | Waiting) -> Resolution | Waiting:
        """A taken resolve's last steps: the tape simulator's answer, a fault's delay."""
        return injection.with_delay(self._simulate(result))

    @staticmethod
    def needs_thread(result: Resolution | Waiting) -> bool:
        """Whether `finish` may block (it asks the tape's simulator over HTTP)."""
        return wants_simulator(result)

    def _remember(self, tape: TapeRef) -> None:
        """Keep the tape as this resolve found it: the next resolve's guess of its config."""
        if len(self._tapes) >= TAPES_REMEMBERED and tape.name not in self._tapes:
            self._tapes.clear()
        self._tapes[tape.name] = tape

    def take(
        self, wire: ResolveRequest, transaction: AbstractContextManager[Unit]
    ) -> Resolution | Waiting:
        """Take the ask and settle it in `transaction` (the lane's unit: resolver/resolve_tx);
        not finished. A loop unit that would wait raises `WouldWait` with nothing taken."""
        body = decode_base64(wire.body, "body") if wire.body else b""
        if len(body) > self.max_body_bytes:
            raise BodyTooLarge(
                f"request body is {len(body)} bytes, over max_body_bytes={self.max_body_bytes}; "
                "send body_too_large=true to pass it through unrecorded",
                limit=self.max_body_bytes,
            )
        with transaction as unit:
            connection = unit.connection
            # Both relax the commit as `relax_commit_durability` would, in their own statement.
            tape, branch, ask, read_ahead = take_ask(
                connection,
                wire,
                body,
                redaction_key=self.redaction_key,
                guess=self._tapes.get(wire.tape),
                drafts=self._drafts,
            )
            # Before anything the ask took commits, and before a sibling's lease is fenced out:
            # an ask without the branch's capability rolls back having changed nothing.
            self.capabilities.check(
                tape_id=tape.id,
                tape=tape.name,
                settings=tape.settings,
                branch=branch.path,
                presented=wire.capability,
            )
            fence_out(lambda: unit.session, branch, wire.lease_holder, now=time.time())
            self._remember(tape)
            facts = facts_of(ask, passthrough=passes_through(tape, ask, wire.body_too_large))
            result = self._settle(unit, ask, facts, read_ahead=read_ahead, taken=True)
            failpoints.reach("resolve.before_commit")
        failpoints.reach("resolve.committed")
        return result

    def look(
        self, waiting: Waiting, transaction: AbstractContextManager[Unit]
    ) -> Resolution | Waiting:
        """A waiter's look, in `transaction` (the lane's unit), not finished: the same decision
        from a poll's facts, in one unit that writes only if it settles (a poll that must wait
        again commits an empty transaction)."""
        ask = waiting.ask
        start = facts_of(ask)  # a passthrough or a fault never waits
        with transaction as unit:
            found = self._find(unit, ask)
            claim = None if found else claims.get_claim(*address_of(ask), session=unit.connection)
            now = time.time()
            state = claim_state(claim, now, waited_on=waiting.holder)
            looked = start.updated(**recorded_facts(found), claim=state)
            plan = decide_step(looked)
            if plan.step is Step.WAIT:
                assert claim is not None and plan.decision is not None
                return Waiting(ask, plan.decision, claim.claim_expires, holder_of(claim))
            relax_commit_durability(unit.connection)
            # One transaction: what was looked up above still holds, so it is not looked up again.
            result = self._settle(unit, ask, looked, claim=claim, found=found, taken=False)
            failpoints.reach("wait.before_commit")
        failpoints.reach("wait.committed")
        return result

    def _simulate(self, result: Resolution | Waiting) -> Resolution | Waiting:
        """A claimed `simulated` ask: ask the tape's simulator, record and serve its answer."""
        if not wants_simulator(result):
            return result
        assert isinstance(result, Resolution) and result.ticket is not None
        decision, response = self.simulator.answer(result.ask, result.ticket)
        return Resolution(Action.SERVE, decision, result.ask, response=response)

    def _settle(
        self,
        unit: Unit,
        ask: Ask,
        facts: Facts,
        *,
        claim: claims.HeldClaim | None = None,
        found: Recorded | None = None,
        read_ahead: ReadAhead | None = None,
        taken: bool,
    ) -> Resolution | Waiting:
        """Decide, look up what the decision asks for, decide again; then carry it out.

        `found` is the address's recording when `facts` already say whether there is one;
        `read_ahead`, what the opening statement read at one address (for the first look
        only: a look after a claim must see what was recorded meanwhile)."""
        ticket: str | None = None
        while True:
            plan = decide_step(facts)
            if plan.step is Step.LOOK_UP:
                found = self._find(unit, ask, read_ahead)
                read_ahead = None
                facts = facts.updated(**recorded_facts(found))
            elif plan.step is Step.CONFIRM_ONLINE:
                online = bool(claims.tape_online_locked(ask.tape_id, session=unit.connection))
                ask = replace(ask, online=online)
                facts = facts.updated(online=online, online_confirmed=True)
            elif plan.step is Step.CLAIM:
                ticket = claims.new_ticket()
                if self._take_claim(unit.connection, ask, ticket):
                    facts = facts.updated(claim=ClaimState.OURS, recorded=self._still(facts))
                else:
                    # Whose, and until when: a lapsed claim is taken over now, and a waiter's
                    # token carries a live one (routes/internal.py skips a first look on it).
                    claim = claims.get_claim(*address_of(ask), session=unit.connection)
                    facts = facts.updated(claim=claim_state(claim, time.time()))
            elif plan.step is Step.TAKE_OVER:
                assert claim is not None
                ticket = claims.new_ticket()
                if self._take_over(unit.session, claim, ticket):
                    facts = facts.updated(claim=ClaimState.OURS, recorded=self._still(facts))
                else:
                    facts = facts.updated(claim=ClaimState.HELD)
            else:
                return self._final_steps.carry_out(
                    unit, ask, plan, facts, found, ticket, claim, taken=taken
                )

    def _still(self, facts: Facts) -> bool | None:
        """What a lookup earlier in this transaction found, as it stands once a claim is won:
        unknown on PostgreSQL, where each statement sees what committed before it (READ
        COMMITTED), so someone may have recorded and released in between and the decision
        looks again; on SQLite the transaction has held the write lock since its BEGIN, so
        nobody can have recorded, and the look would find the same."""
        return facts.recorded if self._recorded_stays_put else None

    def _find(self, unit: Unit, ask: Ask, read_ahead: ReadAhead | None = None) -> Recorded | None:
        """The answer recorded at the ask's address: from memory when it was served before,
        else from `read_ahead` when it was read at this address and holds all it needs. A
        write's is its lineage's own (store/write_answers.py), never kept in memory by address:
        each lineage may have been answered differently."""
        address = address_of(ask)
        if ask.classification.is_write:
            answer = write_answers.lineage_write_answer(
                ask.tape_id, ask.branch_id, *address[1:], session=unit.connection
            ) or exchanges.find_answer(*address, session=unit.connection)
            return None if answer is None else self._recorded(unit, ask, answer)
        cached = self.cache.get(address)
        if cached is not None:
            return cached
        if read_ahead is not None and read_ahead.serves(ask.fingerprint):
            answer = read_ahead.answer
        else:
            answer = exchanges.find_answer(*address, session=unit.connection)
        if answer is None:
            return None
        found = self._recorded(unit, ask, answer)
        self.cache.put(address, found)
        return found

    def keep(self, address: Address, answer: exchanges.RecordedAnswer) -> None:
        """Hold a read's answer, just recorded and committed at `address`, in memory
        (engine/cache.py): its first hit and its waiters are then served from there."""
        self.cache.put(address, answers.recorded_of(answer))

    @staticmethod
    def _recorded(unit: Unit, ask: Ask, answer: exchanges.RecordedAnswer) -> Recorded:
        """A recorded answer ready to serve."""
        if answer.error_kind is not None:  # rare: its 502 problem names the whole exchange
            exchange = exchanges.find_exchange(*address_of(ask), session=unit.session)
            assert exchange is not None
            response = answers.recorded(exchange, session=unit.session, tape_name=ask.tape_name)
            return Recorded(answer.exchange_id, response, answer.headers)
        if answer.body_sha and answer.body is None:
            raise LookupError(f"blob {answer.body_sha} is missing from the store")
        return answers.recorded_of(answer)

    def _take_claim(self, session: Executor, ask: Ask, ticket: str) -> bool:
        claim_expires = time.time() + self.claim_seconds
        return claims.try_claim(
            *address_of(ask), ticket=ticket, claim_expires=claim_expires, session=session
        )

    def _take_over(self, session: Session, claim: claims.HeldClaim, ticket: str) -> bool:
        now = time.time()
        return claims.take_over_expired(
            claim.id,
            old_ticket=claim.ticket,
            ticket=ticket,
            now=now,
            claim_expires=now + self.claim_seconds,
            session=session,
        )
