"""The one decision path of `/v1/resolve` and `/v1/wait`: facts in, the next step out.

`decide_step` is a pure function of what is known about an ask (`Facts`): the request's kind,
the tape's mode, online flag, passthrough and simulator settings, a replacing fault, and the
answers of the store's lookups so far (recorded or not, whose recording, the claim's state).
When a fact it needs is missing it asks for it (`LOOK_UP`, `CONFIRM_ONLINE`, `CLAIM`,
`TAKE_OVER`); otherwise it names the final step (serve, refuse, inject, forward, wait) with the
action and decision word the proxy sees. The Resolver (resolver/resolution.py) is the only
caller: it feeds the facts (engine/facts.py), performs what is asked, and once the step is
final has it written in one place (resolver/final_steps.py). A plain hit and a single-flight
poll go through this same function; only the facts they start from differ. The DESIGN §4 table
itself stays in `policy.decide`, which this wraps.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from engine.policy import Action, Decision, Mode, decide


class ClaimState(StrEnum):
    """The single-flight claim on the ask's address, as far as this ask knows."""

    FREE = "free"  # nobody holds it
    HELD = "held"  # another asker holds a live claim
    EXPIRED = "expired"  # another asker's claim lapsed: it may be taken over
    OURS = "ours"  # this ask holds it
    FAILED = "failed"  # the attempt this ask waited on failed before the world answered


class Step(StrEnum):
    # Lookups: the decision needs one more fact.
    LOOK_UP = "look-up"  # is the address recorded (and by whom)?
    CONFIRM_ONLINE = "confirm-online"  # the online flag read under a share lock
    CLAIM = "claim"  # try to claim the address (single flight); held -> wait
    TAKE_OVER = "take-over"  # try to take over the lapsed claim
    # Final steps: what the resolver writes and answers.
    SERVE = "serve"  # the recorded answer
    REFUSE = "refuse"  # the sealed-miss 502
    INJECT = "inject"  # a fault's answer
    PASS = "pass"  # a live call, never recorded (passthrough)
    FORWARD = "forward"  # a live call to record (holding the claim if single flight)
    WAIT = "wait"  # another asker is fetching the address
    FAIL = "fail"  # the attempt this ask waited on failed: serve its `upstream-failed`


LOOKUPS = frozenset({Step.LOOK_UP, Step.CONFIRM_ONLINE, Step.CLAIM, Step.TAKE_OVER})
# Steps that start something (a live call, a claim) or refuse: the online flag they act on
# must be read under a share lock in the same transaction, so no live call starts after a seal.
_NEED_CONFIRMED_ONLINE = frozenset(
    {Step.REFUSE, Step.PASS, Step.FORWARD, Step.CLAIM, Step.TAKE_OVER}
)


@dataclass(frozen=True)
class Facts:
    """What is known about one ask; None means "not looked up yet"."""

    is_write: bool
    mode: Mode
    online: bool
    true_fingerprint: str
    branch: str
    passthrough: bool = False
    fault: bool = False  # a fault replaces the answer (engine/injection.py)
    simulator: bool = False  # the tape names a miss simulator
    simulate_writes: bool = False
    recorded: bool | None = None
    simulated_recording: bool = False  # the recording found was the simulator's
    online_confirmed: bool = False  # `online` was read under a share lock
    claim: ClaimState | None = None  # None: unknown; a claim attempt tells

    def updated(self, **changes: object) -> Facts:
        """A copy with `changes`: what `dataclasses.replace` does, without re-running `__init__`
        over every field (a tenth of a plain hit's Python time went to that copy)."""
        unknown = changes.keys() - _FACT_NAMES
        if unknown:
            raise TypeError(f"Facts has no field(s) {sorted(unknown)}")
        copy = object.__new__(Facts)
        copy.__dict__.update(self.__dict__)
        copy.__dict__.update(changes)
        return copy


_FACT_NAMES = frozenset(Facts.__dataclass_fields__)


@dataclass(frozen=True)
class Plan:
    """The next step; `action` and `decision` are what the proxy is told (final steps)."""

    step: Step
    action: Action | None = None
    decision: Decision | None = None

    @property
    def final(self) -> bool:
        return self.step not in LOOKUPS


def looks_up(facts: Facts) -> bool:
    """Whether the answer depends on a recording: not for passthrough or an online live call."""
    if facts.passthrough:
        return False
    return not (facts.online and (facts.is_write or facts.mode is Mode.NAIVE))


def simulates(decision: Decision, facts: Facts) -> bool:
    """A refusal of a sealed tape with a simulator: reads always, writes if the tape allows."""
    if decision is not Decision.REFUSED or facts.online or facts.passthrough:
        return False
    return facts.simulator and (facts.simulate_writes or not facts.is_write)


def shown(decision: Decision, facts: Facts) -> Decision:
    """A recording the simulator made is served as `simulated` to everyone, never `shared`."""
    served = (Decision.SHARED, Decision.STALE, Decision.REPLAYED_WRITE)
    if decision in served and facts.simulated_recording:
        return Decision.SIMULATED
    return decision


def decide_step(facts: Facts) -> Plan:
    """The next step for an ask with these facts (see the module docstring)."""
    if facts.fault:
        return Plan(Step.INJECT, Action.SERVE, Decision.INJECTED)
    if facts.recorded is None and looks_up(facts):
        return Plan(Step.LOOK_UP)
    outcome = decide(
        is_write=facts.is_write,
        mode=facts.mode,
        online=facts.online,
        true_fingerprint=facts.true_fingerprint,
        branch=facts.branch,
        recorded=bool(facts.recorded),
        passthrough=facts.passthrough,
    )
    decision = outcome.decision
    if outcome.action is Action.SERVE and decision is not Decision.REFUSED:
        return Plan(Step.SERVE, Action.SERVE, shown(decision, facts))
    plan = _live_plan(decision, facts)
    if plan.step in _NEED_CONFIRMED_ONLINE and not facts.online_confirmed:
        return Plan(Step.CONFIRM_ONLINE)
    return plan


def _live_plan(decision: Decision, facts: Facts) -> Plan:
    """A miss or a live call: refuse, pass through, forward, or go through single flight."""
    simulated = simulates(decision, facts)
    if decision is Decision.REFUSED and not simulated:
        return Plan(Step.REFUSE, Action.SERVE, Decision.REFUSED)
    if decision is Decision.PASSTHROUGH:
        return Plan(Step.PASS, Action.FORWARD, Decision.PASSTHROUGH)
    if simulated:
        decision = Decision.SIMULATED  # claimed like a live fetch; the simulator answers
    elif facts.is_write or facts.mode is Mode.NAIVE:
        return Plan(Step.FORWARD, Action.FORWARD, decision)  # never shared: no single flight
    if facts.claim is ClaimState.OURS:
        return Plan(Step.FORWARD, Action.FORWARD, decision)
    if facts.claim is ClaimState.HELD:
        return Plan(Step.WAIT, Action.WAIT, decision)
    if facts.claim is ClaimState.FAILED:  # failures fly single: no live call of its own
        return Plan(Step.FAIL, Action.SERVE, Decision.UPSTREAM_FAILED)
    if facts.claim is ClaimState.EXPIRED:
        return Plan(Step.TAKE_OVER, None, decision)
    return Plan(Step.CLAIM, None, decision)
