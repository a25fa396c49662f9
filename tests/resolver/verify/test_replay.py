"""Unit tests of resolver/verify/replay.py: rebuilding a recorded request, comparing an answer
with what the branch was served, and walking a branch tree in its order.

`groundhog tape verify` (tests/groundhog/test_tape_verify.py) and the proxy's end-to-end verify
test run the whole replay over real exports; a mismatch there says only that something differs.
These tests take the module's pieces one at a time: `recorded_request` against hand-made asks,
`compare` against hand-made resolutions (each reason it can give), `ask_again` against a real
in-process resolver on a sealed tape, and `replay_branch` with `ask_again` replaced, so the
order of forks and asks, the skipping and the first-mismatch bookkeeping are seen directly.
"""

from __future__ import annotations

import base64
import hashlib
import time
from dataclasses import replace
from typing import Any

import pytest
from sqlalchemy import select

from engine.policy import Action, Decision
from engine.resolve_results import Resolution, Waiting
from engine.sandbox_identity import MARKER
from groundhog.protocol.wire import WireResponse
from resolver.recording import Recorder
from resolver.resolution import Resolver
from resolver.schemas import RecordRequest, ResponseIn
from resolver.verify import replay as replay_module
from resolver.verify.conversation import Ask, BranchConversation, Conversation
from resolver.verify.replay import (
    QUOTED_PROBLEM_BYTES,
    BranchSummary,
    DeadlinePassed,
    Mismatch,
    Replay,
    ask_again,
    compare,
    recorded_request,
    replay_branch,
)
from store.db import Store, transaction
from store.models import Blob, Exchange
from store.tapes import get_tape, set_online
from tests.engine.test_facts import make_ask
from tests.resolver.test_hit_path import ask as resolve_request

BODY = b'{"answer": 42}'
SANDBOX = MARKER


def recorded_ask(seq: int = 1, **changes: Any) -> Ask:
    ask = Ask(
        seq=seq,
        decision="recorded",
        key_readable="v4 GET https://api.example.com/x",
        occurrence=0,
        fingerprint="",
        exchange_id=seq,
        method="GET",
        url="https://api.example.com/x?q=1",
        headers=[["Accept", "application/json"], ["X-B", "2"], ["X-A", "1"]],
        body=b"",
        status=200,
        response_headers=[["Content-Type", "application/json"]],
        response_body_sha=hashlib.sha256(BODY).hexdigest(),
    )
    return replace(ask, **changes)


def refused_ask(seq: int, decision: str = "refused") -> Ask:
    return recorded_ask(seq, decision=decision, exchange_id=None, status=None)


def served(
    status: int = 200, headers: list[list[str]] | None = None, body: bytes = BODY
) -> WireResponse:
    pairs = [["Content-Type", "application/json"]] if headers is None else headers
    return {"status": status, "headers": pairs, "body": base64.b64encode(body).decode()}


def resolution(
    decision: Decision = Decision.SHARED,
    response: WireResponse | None = None,
    *,
    action: Action = Action.SERVE,
    occurrence: int = 0,
) -> Resolution:
    return Resolution(
        action=action,
        decision=decision,
        ask=make_ask(occurrence=occurrence),
        response=served() if response is None and action is Action.SERVE else response,
    )


def empty_replay(**changes: Any) -> Replay:
    conversation = Conversation("t", 1, {}, {"root": BranchConversation("root", None, 0, {})})
    made = Replay(conversation, resolver=None, fork=None, deadline=time.monotonic() + 60)  # type: ignore[arg-type]
    return replace(made, **changes)


# recorded_request


def test_a_recorded_request_keeps_method_url_header_order_and_body() -> None:
    ask = recorded_ask(method="POST", body=b"\x00raw bytes", headers=[["B", "2"], ["a", "1"]])
    request = recorded_request(ask, {})
    assert request.method == "POST" and request.url == ask.url
    assert [[n.decode(), v.decode()] for n, v in request.headers.fields] == [["B", "2"], ["a", "1"]]
    assert request.raw_content == b"\x00raw bytes"
    assert "content-length" not in request.headers  # nothing added the recording lacked


def test_a_recorded_request_loses_the_proxys_private_headers() -> None:
    ask = recorded_ask(
        headers=[["X-Groundhog-Tape", "t"], ["Proxy-Authorization", "x"], ["A", "1"]]
    )
    assert [n.decode() for n, _ in recorded_request(ask, {}).headers.fields] == ["A"]


def test_held_identities_fill_the_marker_or_join_only_on_their_origin() -> None:
    ask = recorded_ask(headers=[["Mcp-Session-Id", SANDBOX], ["X-Kept", "mine"]])
    identities = {
        ("https://api.example.com", "mcp-session-id"): "session-7",
        ("https://api.example.com", "x-kept"): "not-used",  # a real value is never replaced
        ("https://api.example.com", "x-added"): "added-9",  # absent: added
        ("https://elsewhere.example", "x-other"): "never",  # another origin's
    }
    pairs = [[n.decode(), v.decode()] for n, v in recorded_request(ask, identities).headers.fields]
    assert pairs == [["Mcp-Session-Id", "session-7"], ["X-Kept", "mine"], ["x-added", "added-9"]]


# BranchSummary


def test_a_branch_is_ok_only_without_a_mismatch_and_with_its_counters() -> None:
    assert BranchSummary("root").ok
    assert not BranchSummary("root", shim_counters_resume=False).ok
    mismatch = Mismatch("root", 1, "GET", "u", "k", 0, "", None, "why")
    summary = BranchSummary("root", asks=1, replayed=1, first_mismatch=mismatch)
    as_json = summary.as_json()
    assert not summary.ok and as_json["ok"] is False
    assert as_json["first_mismatch"]["reason"] == "why" and as_json["asks"] == 1


# compare


def test_the_same_answer_matches() -> None:
    replay = empty_replay()
    assert compare(replay, "root", recorded_ask(), resolution()) is None
    assert replay.live_attempts == 0


@pytest.mark.parametrize("action", [Action.FORWARD, Action.SERVE])
def test_an_answer_that_would_go_live_is_counted_and_named(action: Action) -> None:
    replay = empty_replay()
    result = resolution(Decision.RECORDED, action=action)
    if action is Action.SERVE:
        result = replace(result, response=None)  # a serve with nothing to serve goes live too
    why = compare(replay, "root", recorded_ask(), result)
    assert why is not None and "would have gone to the world (recorded)" in why
    assert replay.live_attempts == 1


def test_a_refusal_quotes_its_problem_whole_or_cut_with_its_length() -> None:
    problem = b'{"title": "Not on tape"}'
    short = compare(
        empty_replay(),
        "root",
        recorded_ask(),
        resolution(Decision.REFUSED, served(502, [], problem)),
    )
    assert short == f"refused (it missed the tape): {problem.decode()}"
    long_problem = b"x" * (QUOTED_PROBLEM_BYTES + 10)
    long = compare(
        empty_replay(),
        "root",
        recorded_ask(),
        resolution(Decision.REFUSED, served(502, [], long_problem)),
    )
    assert long is not None
    assert long.endswith(f"… ({QUOTED_PROBLEM_BYTES + 10} characters)")
    assert long.count("x") == QUOTED_PROBLEM_BYTES


@pytest.mark.parametrize(
    ("result", "ask", "expected"),
    [
        (resolution(occurrence=1), recorded_ask(), "answered at occurrence 1, served at 0"),
        (resolution(response=served(404)), recorded_ask(), "status 404, the branch was served 200"),
        (
            resolution(response=served(body=b"changed")),
            recorded_ask(),
            f"body hashes to {hashlib.sha256(b'changed').hexdigest()}",
        ),
        (
            resolution(response=served(headers=[["Content-Type", "text/plain"]])),
            recorded_ask(),
            "headers [('Content-Type', 'text/plain')], the branch was served",
        ),
        (
            resolution(response=served(headers=[["Content-Type", "application/json"], ["X", "1"]])),
            recorded_ask(),
            "headers",  # an added header is a difference too
        ),
    ],
)
def test_each_difference_is_named(result: Resolution, ask: Ask, expected: str) -> None:
    why = compare(empty_replay(), "root", ask, result)
    assert why is not None and why.startswith(expected), why


def test_an_ask_without_status_or_body_hash_is_not_held_to_them() -> None:
    ask = recorded_ask(status=None, response_body_sha=None)
    result = resolution(response=served(201, body=b"other"))
    assert compare(empty_replay(), "root", ask, result) is None


# ask_again against a real resolver on a sealed tape


def sealed_recording(store: Store, body: bytes) -> tuple[Resolver, Ask]:
    """`GET http://w.example/x` recorded on root/a, the tape sealed; the ask as an export has it."""
    resolver = Resolver(store, max_body_bytes=1024, claim_seconds=30)
    forward = resolver.resolve(resolve_request("/x", "root/a"))
    assert isinstance(forward, Resolution) and forward.ticket is not None
    response = ResponseIn(
        status=203, headers=[("X-Dup", "1"), ("X-Dup", "2")], body=base64.b64encode(body).decode()
    )
    Recorder(store, max_body_bytes=1024).record(
        RecordRequest(ticket=forward.ticket, response=response)
    )
    with transaction(store.write) as session:
        tape = get_tape("t", session=session)
        assert tape is not None
        set_online(tape, False, session=session)
        exchange = session.scalars(select(Exchange)).one()
        request_body = session.get(Blob, exchange.request_body_sha)
        ask = Ask(
            seq=1, decision="recorded", key_readable=exchange.key_readable,
            occurrence=exchange.occurrence, fingerprint=exchange.fingerprint,
            exchange_id=exchange.id, method=exchange.request_method, url=exchange.request_url,
            headers=[list(p) for p in exchange.request_headers or []],
            body=bytes(request_body.data) if request_body else b"", status=exchange.response_status,
            response_headers=[list(p) for p in exchange.response_headers or []],
            response_body_sha=exchange.response_body_sha,
        )  # fmt: skip
    return resolver, ask


def real_replay(resolver: Resolver, deadline: float) -> Replay:
    conversation = Conversation("t", 1, {}, {})
    return Replay(conversation, resolver, fork=None, deadline=deadline)


def test_a_recorded_ask_asked_again_matches(store: Store) -> None:
    resolver, ask = sealed_recording(store, b"recorded body")
    replay = real_replay(resolver, time.monotonic() + 60)
    assert ask_again(replay, "root/b", ask) is None
    # Its next occurrence was never recorded: asked again it is refused, with the problem.
    again = ask_again(replay, "root/b", ask)
    assert again is not None and again.startswith("refused (it missed the tape)")
    assert replay.live_attempts == 0


def test_a_body_changed_since_the_recording_is_caught(store: Store) -> None:
    resolver, ask = sealed_recording(store, b"recorded body")
    tampered = replace(ask, response_body_sha=hashlib.sha256(b"what was served").hexdigest())
    why = ask_again(real_replay(resolver, time.monotonic() + 60), "root/b", tampered)
    assert why is not None and why.startswith("body hashes to")


def test_a_passed_deadline_stops_before_resolving(store: Store) -> None:
    resolver, ask = sealed_recording(store, b"recorded body")
    replay = real_replay(resolver, time.monotonic() - 1)
    with pytest.raises(DeadlinePassed):
        ask_again(replay, "root/b", ask)
    assert ask_again(replace(replay, deadline=time.monotonic() + 60), "root/b", ask) is None


def test_a_wait_answer_is_a_finding() -> None:
    class Waits:
        max_body_bytes = 1024

        def resolve(self, _wire: Any) -> Waiting:
            return Waiting(ask=make_ask(), decision=Decision.RECORDED)

    replay = Replay(Conversation("t", 1, {}, {}), Waits(), None, time.monotonic() + 60)  # type: ignore[arg-type]
    why = ask_again(replay, "root", recorded_ask())
    assert why is not None and "answered `wait`" in why


# replay_branch, with ask_again replaced


class Script:
    """Stands in for `ask_again`: logs each ask and answers from `answers` by seq."""

    def __init__(self, log: list[str], answers: dict[tuple[str, int], Any] | None = None) -> None:
        self.log = log
        self.answers = answers or {}

    def __call__(self, replay: Replay, branch: str, ask: Ask) -> str | None:
        self.log.append(f"ask {branch} #{ask.seq}")
        answer = self.answers.get((branch, ask.seq))
        if isinstance(answer, BaseException):
            raise answer
        return answer


def tree() -> Conversation:
    """root asks #1..#3; b0 forks after #1 and asks #1; b1 forks after #3 (after every ask);
    b0/c forks from b0 at 0."""
    root = BranchConversation(
        "root", None, 0, {}, [recorded_ask(1), recorded_ask(2), recorded_ask(3)]
    )
    b0 = BranchConversation("root/b0", "root", 1, {"n": 1}, [recorded_ask(1)])
    b1 = BranchConversation("root/b1", "root", 3, {}, [])
    c = BranchConversation("root/b0/c", "root/b0", 0, {}, [recorded_ask(1)])
    return Conversation("t", 1, {}, {b.path: b for b in (root, b0, b1, c)})


def walk(
    monkeypatch: pytest.MonkeyPatch,
    conversation: Conversation,
    answers: dict[tuple[str, int], Any] | None = None,
) -> tuple[Replay, list[str]]:
    log: list[str] = []
    monkeypatch.setattr(replay_module, "ask_again", Script(log, answers))

    def fork(parent: str, child: str, counters: dict[str, Any]) -> None:
        log.append(f"fork {parent} -> {child} {counters}")

    replay = Replay(conversation, None, fork, time.monotonic() + 60)  # type: ignore[arg-type]
    replay_branch(replay, conversation.branches["root"])
    return replay, log


def test_forks_happen_where_the_tree_forked_then_children_replay(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    replay, log = walk(monkeypatch, tree())
    assert log == [
        "ask root #1",
        "fork root -> root/b0 {'n': 1}",  # before the first ask after its fork point
        "ask root #2",
        "ask root #3",
        "fork root -> root/b1 {}",  # after every ask of its parent
        "fork root/b0 -> root/b0/c {}",  # b0's own children, once b0 has replayed
        "ask root/b0 #1",
        "ask root/b0/c #1",
    ]
    assert {
        path: (s.asks, s.replayed, s.matched, s.ok) for path, s in replay.summaries.items()
    } == {
        "root": (3, 3, 3, True),
        "root/b0": (1, 1, 1, True),
        "root/b0/c": (1, 1, 1, True),
        "root/b1": (0, 0, 0, True),
    }


def test_a_child_starts_with_the_sessions_its_parent_held_at_the_fork(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    held = ("https://api.example.com", "mcp-session-id")
    seen: dict[str, dict[tuple[str, str], str]] = {}

    def learning(replay: Replay, branch: str, ask: Ask) -> None:
        seen[f"{branch} #{ask.seq}"] = dict(replay.sessions.get(branch, {}))
        if branch == "root" and ask.seq == 1:
            replay.sessions.setdefault("root", {})[held] = "before-fork"
        if branch == "root" and ask.seq == 2:
            replay.sessions["root"][held] = "after-fork"

    monkeypatch.setattr(replay_module, "ask_again", learning)
    conversation = tree()
    replay = Replay(conversation, None, lambda *_: None, time.monotonic() + 60)  # type: ignore[arg-type]
    replay_branch(replay, conversation.branches["root"])
    assert seen["root/b0 #1"] == {held: "before-fork"}  # forked between root #1 and #2
    assert seen["root/b0/c #1"] == {held: "before-fork"}
    assert replay.sessions["root/b1"] == {held: "after-fork"}


def test_unreplayable_asks_are_skipped_and_only_an_unheld_answer_is_a_mismatch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asks = [
        refused_ask(1),
        refused_ask(2, "upstream-failed"),
        recorded_ask(3),
        refused_ask(4, "passthrough"),
    ]
    root = BranchConversation("root", None, 0, {}, asks)
    replay, log = walk(monkeypatch, Conversation("t", 1, {}, {"root": root}))
    assert log == ["ask root #3"]
    summary = replay.summaries["root"]
    assert (summary.asks, summary.skipped, summary.replayed, summary.matched) == (4, 3, 1, 1)
    assert summary.first_mismatch is not None and summary.first_mismatch.seq == 4
    assert "served (passthrough) an answer the tape does not hold" in summary.first_mismatch.reason
    assert not summary.ok


def test_the_first_mismatch_is_kept_and_a_crash_is_a_finding(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    answers: dict[tuple[str, int], Any] = {
        ("root", 2): ValueError("a broken row"),
        ("root", 3): "a later difference",
    }
    replay, log = walk(monkeypatch, tree(), answers)
    assert "ask root #3" in log and "ask root/b0 #1" in log  # the walk went on
    summary = replay.summaries["root"]
    assert (summary.replayed, summary.matched) == (3, 1)
    assert summary.first_mismatch == Mismatch(
        "root", 2, "GET", "https://api.example.com/x?q=1", "v4 GET https://api.example.com/x",
        0, "", 2, "the resolve path failed on it: ValueError: a broken row",
    )  # fmt: skip
    assert replay.summaries["root/b0"].ok


def test_a_passed_deadline_ends_the_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(DeadlinePassed):
        walk(monkeypatch, tree(), {("root", 2): DeadlinePassed("late")})
