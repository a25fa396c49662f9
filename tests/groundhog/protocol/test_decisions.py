"""groundhog/protocol/decisions.py: the decision words and actions every component compares.

The module is only declarations, so what can go wrong is drift: a word added to the enum but
not to the documented table (or the other way round), a live decision left out of
`FORWARD_DECISIONS` (the report would count its live call as served from tape), or a word too
long for the store's `decision` columns. These tests hold the declarations against the
documentation, the decision table that uses them and the schema that stores them.
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

from sqlalchemy import String

from engine import policy
from engine.policy import Mode, decide
from groundhog.protocol.decisions import FORWARD_DECISIONS, Action, Decision
from store.models import Event, PendingRecord

CONCEPTS = Path(__file__).resolve().parents[3] / "docs" / "concepts.md"


def documented_decisions() -> dict[str, bool]:
    """docs/concepts.md's decision table: each word and whether it went upstream."""
    rows = re.findall(r"^\| `([a-z-]+)` \| (yes|no) \|", CONCEPTS.read_text(), flags=re.M)
    assert rows, f"no decision table found in {CONCEPTS}"
    return {word: went == "yes" for word, went in rows}


def test_the_documented_table_names_every_decision_once() -> None:
    documented = documented_decisions()
    assert sorted(documented) == sorted(decision.value for decision in Decision)
    assert len({decision.value for decision in Decision}) == len(Decision)


def test_the_forward_set_is_the_decisions_documented_as_going_upstream() -> None:
    upstream = {word for word, went in documented_decisions().items() if went}
    assert {decision.value for decision in FORWARD_DECISIONS} == upstream
    assert all(isinstance(decision, Decision) for decision in FORWARD_DECISIONS)


def test_the_decision_table_forwards_exactly_the_forward_decisions() -> None:
    """Every cell of `engine.policy.decide`: a forward's word is in the set, a serve's is not."""
    seen: set[Decision] = set()
    for is_write, mode, online, fingerprint, recorded, passthrough in itertools.product(
        (False, True), Mode, (False, True), ("", "f" * 8), (False, True), (False, True)
    ):
        outcome = decide(
            is_write=is_write, mode=mode, online=online, true_fingerprint=fingerprint,
            branch="root/a", recorded=recorded, passthrough=passthrough,
        )  # fmt: skip
        assert outcome.action is not Action.WAIT  # only single flight waits, never the table
        forwarded = outcome.action is Action.FORWARD
        assert (outcome.decision in FORWARD_DECISIONS) is forwarded, outcome
        seen.add(outcome.decision)
    assert seen & FORWARD_DECISIONS  # the product did reach forwards, not only serves


def test_engine_policy_re_exports_the_same_objects() -> None:
    assert policy.Decision is Decision and policy.Action is Action
    assert policy.LIVE_DECISIONS is FORWARD_DECISIONS
    assert policy.RECORDING_DECISIONS <= FORWARD_DECISIONS


def test_every_word_fits_the_stored_decision_columns() -> None:
    for column in (Event.__table__.c.decision, PendingRecord.__table__.c.decision):
        assert isinstance(column.type, String) and column.type.length is not None
        too_long = [d.value for d in Decision if len(d.value) > column.type.length]
        assert too_long == [], column


def test_the_words_travel_as_plain_strings() -> None:
    """Headers and reports carry the word itself, and a word read back is the same member."""
    for decision in Decision:
        assert f"{decision}" == decision.value and decision == decision.value
        assert json.loads(json.dumps({"decision": decision})) == {"decision": decision.value}
        assert Decision(str(decision)) is decision
    for action in Action:
        assert Action(json.loads(json.dumps(action))) is action
        assert re.fullmatch(r"[a-z]+", action.value)
