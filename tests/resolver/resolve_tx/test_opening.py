"""resolver/resolve_tx/opening.py: an ask taken in one statement from a guess of its tape is
the ask taken plainly, and a wrong or dangling guess takes nothing it should not."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from engine.refs import TapeRef
from engine.resolve_request import ResolveRequest
from resolver.ask_store import bump_branch, load_tape_and_branch
from resolver.errors import InvalidInput, NotFound
from resolver.resolve_tx.opening import TakenAsk, take_ask
from resolver.resolve_tx.units import ReadAhead
from store.db import Store, transaction
from tests.engine.test_asks import _ask, _make_tape, _wire
from tests.support.store_databases import store_of_kind


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    with store_of_kind(request, tmp_path / "guess.sqlite3") as opened:
        yield opened


def _ask_as_guessed(store: Store, guess: TapeRef, wire: ResolveRequest) -> TakenAsk:
    with transaction(store.write) as session:
        return take_ask(session, wire, b"", redaction_key=b"k" * 32, guess=guess)


def test_an_ask_taken_as_guessed_is_the_ask_taken_plainly(any_store: Store) -> None:
    _make_tape(any_store, dependency_model="path", config={"ignore_params": ["ts"]})
    wire = _wire(method="put", query=[["ts", "1"], ["a", "b"]])
    with transaction(any_store.write) as session:
        guess, branch = load_tape_and_branch(session, "t", "root/b0")
        bump_branch(
            session, branch.id, frozenset({"path:https://api.example.com/docs/1"}), "k0", "b0"
        )
    plain = _ask(any_store, wire)
    tape, _branch, guessed, read_ahead = _ask_as_guessed(any_store, guess, wire)
    assert tape == guess and guessed.true_fingerprint != ""
    # Nothing is recorded: PostgreSQL's opening statement read no answer where the address
    # would be had the branch not written (""); SQLite reads none.
    on_postgresql = any_store.engine.dialect.name == "postgresql"
    assert read_ahead == (ReadAhead("", None) if on_postgresql else None)
    assert guessed == replace(plain, occurrence=1)
    assert _ask(any_store, wire).occurrence == 2  # the guessed ask took exactly one


def test_a_wrong_guess_takes_the_ask_from_the_tape_found(any_store: Store) -> None:
    _make_tape(any_store, config={"ignore_params": ["ts"]})
    with transaction(any_store.read) as session:
        tape, _branch = load_tape_and_branch(session, "t", "root/b0")
    # Keys differ by `ts` under the wrong config; the tape's own config ignores it.
    wrong = replace(tape, config={}, config_text="{}")
    first = _ask_as_guessed(any_store, wrong, _wire(query=[["ts", "1"]]))
    second = _ask_as_guessed(any_store, wrong, _wire(query=[["ts", "2"]]))
    assert first.tape == tape and first.tape.config_text == tape.config_text
    assert first.read_ahead is None  # a wrong guess reads no answer
    assert first.ask.key == second.ask.key
    assert (first.ask.occurrence, second.ask.occurrence) == (0, 1)
    assert _ask(any_store, _wire(query=[["ts", "3"]])).occurrence == 2


def test_an_ask_guessed_on_a_missing_tape_or_branch_names_it(any_store: Store) -> None:
    _make_tape(any_store)
    with transaction(any_store.read) as session:
        guess, _branch = load_tape_and_branch(session, "t", "root/b0")
    with pytest.raises(NotFound) as no_branch:
        _ask_as_guessed(any_store, guess, _wire(branch="root/zz"))
    assert no_branch.value.extras == {"tape": "t", "branch": "root/zz"}
    with pytest.raises(NotFound) as no_tape:
        _ask_as_guessed(any_store, guess, _wire(tape="absent"))
    assert no_tape.value.extras == {"tape": "absent"}
    with pytest.raises(InvalidInput):
        _ask_as_guessed(any_store, guess, _wire(branch="trunk"))
    assert _ask(any_store, _wire()).occurrence == 0
