"""Unit tests of engine/asks.py: loading a tape and branch, building one ask, bumping versions."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.asks import (
    Ask,
    classify_draft,
    cooperative_headers,
    draft_ask,
    finish_ask,
    true_fingerprint_of,
)
from engine.dependencies import Classification
from engine.fingerprint import unknown_version
from engine.policy import DependencyModel, Mode
from engine.refs import BranchRef, Hint, TapeRef
from engine.resolve_request import ResolveRequest
from resolver.ask_store import bump_branch, find_tape_and_branch, load_tape_and_branch
from resolver.errors import InvalidInput, NotFound
from resolver.resolve_tx.opening import take_ask
from store.branches import fork_branch, get_branch
from store.db import Store, open_store, transaction
from store.hints import set_hint
from store.tapes import create_tape
from store.versions import branch_versions


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = open_store(f"sqlite:///{tmp_path / 'asks.sqlite3'}")
    yield opened
    opened.dispose()


def _make_tape(store: Store, name: str = "t", **fields: Any) -> None:
    values: dict[str, Any] = {
        "world_seed": 42,
        "mode": "groundhog",
        "online": True,
        "dependency_model": "closure",
        "config": {},
    }
    values.update(fields)
    with transaction(store.write) as session:
        tape = create_tape(session=session, name=name, **values)
        root = get_branch(tape.id, "root", session=session)
        assert root is not None
        fork_branch(root, "root/b0", {}, session=session)


def _wire(**fields: Any) -> ResolveRequest:
    values: dict[str, Any] = {
        "tape": "t",
        "branch": "root/b0",
        "method": "get",
        "scheme": "https",
        "host": "API.example.com",
        "port": 443,
        "path": "/docs/1",
    }
    values.update(fields)
    return ResolveRequest(**values)


def _ask(store: Store, wire: ResolveRequest, body: bytes = b"") -> Ask:
    with transaction(store.write) as session:
        return take_ask(session, wire, body, redaction_key=b"k" * 32).ask


def test_load_names_the_missing_tape_then_the_missing_branch(store: Store) -> None:
    _make_tape(store)
    with transaction(store.read) as session:
        tape, branch = load_tape_and_branch(session, "t", "root/b0")
        assert (tape.name, branch.path) == ("t", "root/b0")
        with pytest.raises(NotFound) as no_tape:
            load_tape_and_branch(session, "absent", "root")
        assert no_tape.value.extras == {"tape": "absent"}
        assert "tape 'absent' does not exist" in no_tape.value.detail
        with pytest.raises(NotFound) as no_branch:
            load_tape_and_branch(session, "t", "root/zz")
        assert no_branch.value.extras == {"tape": "t", "branch": "root/zz"}
        assert no_branch.value.detail == "branch 'root/zz' does not exist on tape 't'"


@pytest.mark.parametrize(("tape", "branch"), [("bad name", "root"), ("t", "trunk/b0")])
def test_load_rejects_malformed_names_before_the_store(
    store: Store, tape: str, branch: str
) -> None:
    with transaction(store.read) as session, pytest.raises(InvalidInput):
        load_tape_and_branch(session, tape, branch)


def test_take_ask_normalises_the_request_and_counts_occurrences(store: Store) -> None:
    _make_tape(store)
    first = _ask(store, _wire(headers=[["Authorization", "Bearer s"], ["Accept", "x"]]))
    second = _ask(store, _wire(headers=[["Authorization", "Bearer s"], ["Accept", "x"]]))
    other = _ask(store, _wire(headers=[["Authorization", "Bearer t"], ["Accept", "x"]]))
    assert first.request.method == "GET"
    assert first.request.headers[0][1].startswith("Bearer [redacted:name-authorization:")
    assert first.request.headers[1] == ("Accept", "x")
    # The same credential keys the same way (occurrences count on); another one does not.
    assert (first.occurrence, second.occurrence, other.occurrence) == (0, 1, 0)
    assert first.key == second.key != other.key
    assert [f.rule for f in first.findings] == ["name-authorization"]
    assert first.body_sha == hashlib.sha256(b"").hexdigest()
    assert first.mode is Mode.GROUNDHOG and first.model is DependencyModel.CLOSURE
    assert first.classification.is_write is False


def test_empty_path_becomes_slash_and_params_are_redacted(store: Store) -> None:
    _make_tape(store, config={"redact_params": ["token"]})
    ask = _ask(store, _wire(path="", query=[["token", "abc"], ["q", "1"]]))
    assert ask.request.path == "/"
    assert dict(ask.request.query)["q"] == "1"
    assert dict(ask.request.query)["token"] != "abc"


def test_a_write_changes_the_next_reads_fingerprint(store: Store) -> None:
    _make_tape(store)
    write = _ask(store, _wire(method="POST"), body=b"new text")
    assert write.classification.is_write
    assert write.body_sha == hashlib.sha256(b"new text").hexdigest()
    with transaction(store.write) as session:
        bump_branch(
            session,
            write.branch_id,
            write.classification.writes,
            write.key.hash,
            write.body_sha,
        )
    read = _ask(store, _wire())
    expected_version = hashlib.sha256(
        "\x1f".join(("", write.key.hash, write.body_sha)).encode()
    ).hexdigest()
    expected = hashlib.sha256(
        f"origin:https://api.example.com\x1f{expected_version}".encode()
    ).hexdigest()
    assert read.true_fingerprint == expected
    assert read.fingerprint == expected
    # A sibling that did not write still reads the base recording.
    sibling = _ask(store, _wire(branch="root"))
    assert sibling.fingerprint == ""


def test_a_branch_that_wrote_under_per_host_names_keeps_its_fingerprint(store: Store) -> None:
    """A tape recorded before resources were per origin: its writer is never served the base."""
    _make_tape(store)
    branch_id = _ask(store, _wire()).branch_id
    with transaction(store.write) as session:
        bump_branch(session, branch_id, frozenset({"host:api.example.com"}), "k", "b")
        version = branch_versions(branch_id, session=session)["host:api.example.com"]
    read = _ask(store, _wire())
    before = hashlib.sha256(f"host:api.example.com\x1f{version}".encode()).hexdigest()
    assert read.fingerprint == before, "the address it was recorded at, so a sealed tape replays"


def test_bump_branch_chains_versions(store: Store) -> None:
    _make_tape(store)
    ask = _ask(store, _wire())
    with transaction(store.write) as session:
        bump_branch(session, ask.branch_id, {"r"}, "k", "b")
        once = branch_versions(ask.branch_id, session=session)["r"]
        bump_branch(session, ask.branch_id, {"r"}, "k", "b")
        twice = branch_versions(ask.branch_id, session=session)["r"]
    assert once == hashlib.sha256(b"\x1fk\x1fb").hexdigest()
    assert twice == hashlib.sha256(f"{once}\x1fk\x1fb".encode()).hexdigest()


def test_naive_mode_reads_at_a_private_address(store: Store) -> None:
    _make_tape(store, mode="naive")
    ask = _ask(store, _wire())
    assert ask.true_fingerprint == ""
    assert ask.fingerprint == "naive:" + hashlib.sha256(b"root/b0").hexdigest()[:16]


def test_hints_model_uses_a_recorded_hint(store: Store) -> None:
    _make_tape(store, dependency_model="hints")
    unhinted = _ask(store, _wire())
    assert "origin:https://api.example.com" in unhinted.classification.reads
    with transaction(store.write) as session:
        set_hint(unhinted.tape_id, unhinted.key.hash, "doc:1", "", session=session)
    hinted = _ask(store, _wire())
    assert hinted.classification.reads == frozenset({"doc:1"})


def test_cooperative_headers_only_for_listed_hosts(store: Store) -> None:
    _make_tape(store, config={"cooperative_hosts": ["api.EXAMPLE.com"]})
    cooperative = _ask(store, _wire())
    assert cooperative.cooperative
    assert cooperative_headers(cooperative) == [
        ["X-Groundhog-Branch", "root/b0"],
        ["X-Groundhog-Seed", "42"],
        ["X-Groundhog-Occurrence", "0"],
    ]
    other = _ask(store, _wire(host="other.example.com"))
    assert not other.cooperative and cooperative_headers(other) == []


def test_naive_cooperative_seed_is_salted_per_branch(store: Store) -> None:
    _make_tape(store, mode="naive", config={"cooperative_hosts": ["api.example.com"]})
    ask = _ask(store, _wire())
    salted = hashlib.sha256(b"42/root/b0").digest()
    headers = dict((name, value) for name, value in cooperative_headers(ask))
    assert headers["X-Groundhog-Seed"] == str(int.from_bytes(salted[:4], "big"))
    assert headers["X-Groundhog-Seed"] != "42"


def test_find_answers_none_for_a_missing_tape_or_branch(store: Store) -> None:
    _make_tape(store)
    with transaction(store.read) as session:
        found = find_tape_and_branch(session, "t", "root/b0")
        assert found is not None
        tape, branch = found
        assert (tape.name, tape.world_seed, tape.mode, branch.path) == (
            "t",
            42,
            "groundhog",
            "root/b0",
        )
        assert find_tape_and_branch(session, "t", "root/zz") is None
        assert find_tape_and_branch(session, "absent", "root") is None
        with pytest.raises(InvalidInput):
            find_tape_and_branch(session, "t", "trunk")


def test_drafting_and_finishing_an_ask_touch_no_store() -> None:
    """Only `take_ask` writes (the occurrence); the steps around it are pure."""
    tape = TapeRef(7, "t", 42, "groundhog", True, "closure", {"ignore_params": ["ts"]})
    branch = BranchRef(3, "root/b0")
    draft = draft_ask(tape, branch, _wire(query=[["ts", "1"]]), b"", redaction_key=b"k" * 32)
    again = draft_ask(tape, branch, _wire(query=[["ts", "2"]]), b"", redaction_key=b"k" * 32)
    assert draft.key == again.key  # ignored parameters do not change the key
    classification = classify_draft(draft, None)
    ask = finish_ask(draft, classification, occurrence=5, versions={})
    assert (ask.tape_id, ask.branch_id, ask.occurrence, ask.fingerprint) == (7, 3, 5, "")
    assert ask == finish_ask(draft, classification, occurrence=5, versions={})


def test_a_draft_is_classified_once_per_hint_and_its_copies_share_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Siblings ask with one remembered draft: the first classifies, the rest look it up; a
    hint that differs is classified anew, and gives its own answer."""
    import engine.asks as asks_module

    calls: list[object] = []
    real = asks_module.classify

    def counted(*arguments: Any, **keywords: Any) -> Classification:
        calls.append(keywords.get("hinted_reads"))
        return real(*arguments, **keywords)

    monkeypatch.setattr(asks_module, "classify", counted)
    tape = TapeRef(7, "t", 42, "groundhog", True, "hints", {})
    draft = draft_ask(tape, BranchRef(3, "root/b0"), _wire(), b"", redaction_key=b"k" * 32)
    sibling = dataclasses.replace(draft, branch=BranchRef(4, "root/b1"))
    unhinted = classify_draft(draft, None)
    assert classify_draft(sibling, None) is unhinted
    hinted = classify_draft(sibling, Hint("doc:1", ""))
    assert hinted.reads == frozenset({"doc:1"}) != unhinted.reads
    assert classify_draft(draft, Hint("doc:1", "")) is hinted
    assert classify_draft(draft, Hint("doc:2", "")).reads == frozenset({"doc:2"})
    assert calls == [None, "doc:1", "doc:2"]


def test_a_read_counts_a_resource_a_write_left_unknown_and_only_while_unknown() -> None:
    # Write-ahead: an unknown version (a write in flight, or one whose record never landed)
    # makes the read's fingerprint non-empty, so it is refetched and never served the base.
    hinted = Classification(False, frozenset({"doc:1"}), frozenset())
    host = "host:api.example.com"
    assert true_fingerprint_of(hinted, {host: "ab" * 32}) == ""  # recorded: hints stay precise
    unknown = {host: unknown_version(3, "k" * 64, 0, host)}
    assert true_fingerprint_of(hinted, unknown) != ""
    other_write = {host: unknown_version(3, "k" * 64, 1, host)}
    assert true_fingerprint_of(hinted, unknown) != true_fingerprint_of(hinted, other_write)
