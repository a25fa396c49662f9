"""Crash consistency end to end (issue 29): a real resolver killed with SIGKILL of its process
group at the wrong moment and restarted on the same SQLite file, behind a real proxy.

Each test reproduces one defect as a user would meet it: occurrences lost to a 503, a hit
committed by a resolver that died before answering it, siblings piling up behind an upstream
that never answers, a write that went live but was never recorded.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.proxy.clients import Reply
from tests.proxy.stack import Stack, running_stack
from tests.proxy.test_end_to_end import ask
from tests.proxy.upstream_server import Upstream
from tests.resolver.test_resolution import single_flight_waits
from tests.support.servers import wait_until

BRANCHES = 16


# A proxy that answers 503 as soon as the resolver is gone (the worker retries), and one that
# keeps asking a resolver that is gone, long enough for any restart here.
ANSWERS_503_AT_ONCE = ("--set", "groundhog_resolve_retry=0")
KEEPS_ASKING = ("--set", "groundhog_resolve_retry=120")
# A hit the resolver commits: with branch leases (the default) the sidecar serves a sibling's
# recording itself, and its own crash windows are tests/proxy/test_crash_state_machine.py's.
# Leases off, every hit is the resolver's, as for a branch no sidecar holds.
RESOLVER_HITS = ("--set", "groundhog_branch_leases=false")


@pytest.fixture
def crashable(tmp_path: Path) -> Iterator[Stack]:
    with running_stack(tmp_path, *ANSWERS_503_AT_ONCE) as stack:
        yield stack


@pytest.fixture
def patient(tmp_path: Path) -> Iterator[Stack]:
    with running_stack(tmp_path, *KEEPS_ASKING) as stack:
        yield stack


@pytest.fixture
def crashable_resolver_hits(tmp_path: Path) -> Iterator[Stack]:
    with running_stack(tmp_path, *ANSWERS_503_AT_ONCE, *RESOLVER_HITS) as stack:
        yield stack


@pytest.fixture
def patient_resolver_hits(tmp_path: Path) -> Iterator[Stack]:
    with running_stack(tmp_path, *KEEPS_ASKING, *RESOLVER_HITS) as stack:
        yield stack


def die_after_the_next_commit(stack: Stack) -> None:
    """Restart the resolver so that the next resolve dies once its transaction committed,
    before its answer is written: the commit-to-answer window."""
    stack.crash_resolver()
    stack.restart_resolver(env={"GROUNDHOG_FAILPOINTS": "resolve.committed@1"})


def test_a_hit_committed_by_a_resolver_that_died_is_asked_again_at_its_occurrence(
    patient_resolver_hits: Stack, upstream: Upstream
) -> None:
    """b0's hit commits (its lineage advanced) and the resolver dies before answering; the
    proxy asks again with the same attempt once the resolver is back, and b0 is served at
    occurrence 0 the bytes b1 recorded there, not a new live call at occurrence 1."""
    stack = patient_resolver_hits
    tape = stack.open_tape()
    b0, b1 = stack.fork(tape, 2)
    item = f"{upstream.url}/item/r"
    base = ask(stack, tape, b1, item)
    assert (base.status, base.decision) == (200, "recorded")
    die_after_the_next_commit(stack)
    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(ask, stack, tape, b0, item)
        wait_until(
            lambda: stack.resolver.process.poll() is not None,
            what="the resolver dying after its commit",
        )
        assert not pending.done()  # the proxy is still asking, the worker still waiting
        stack.restart_resolver(env={})
        served = pending.result(timeout=120)
    assert (served.status, served.decision) == (200, "shared")
    assert served.headers["x-groundhog-occurrence"] == "0"
    assert served.body == base.body
    assert upstream.state.count("/item/r") == 1
    again = ask(stack, tape, b0, item)  # the lineage advanced once: this is its second read
    assert (again.decision, again.headers["x-groundhog-occurrence"]) == ("recorded", "1")


def test_the_workers_retry_of_a_503_is_the_same_attempt(
    crashable_resolver_hits: Stack, upstream: Upstream
) -> None:
    """The same window with a proxy that answers 503 at once: the worker's retry of the same
    request (a new flow, with a header changed) is asked as the unanswered attempt."""
    stack = crashable_resolver_hits
    tape = stack.open_tape()
    b0, b1 = stack.fork(tape, 2)
    item = f"{upstream.url}/item/r"
    base = ask(stack, tape, b1, item)
    die_after_the_next_commit(stack)
    lost = ask(stack, tape, b0, item, headers={"X-Try": "1"})
    assert lost.status == 503
    wait_until(
        lambda: stack.resolver.process.poll() is not None,
        what="the resolver dying after its commit",
    )
    stack.restart_resolver(env={})
    retried = ask(stack, tape, b0, item, headers={"X-Try": "2"})
    assert (retried.status, retried.decision) == (200, "shared")
    assert retried.headers["x-groundhog-occurrence"] == "0"
    assert retried.body == base.body
    assert upstream.state.count("/item/r") == 1


def test_siblings_that_got_a_503_meet_at_one_occurrence_after_a_crash(
    crashable: Stack, upstream: Upstream
) -> None:
    """Half the branches ask before the kill (one holds the claim, the rest wait), half while
    the resolver is down; all get 503 but the holder, and all retry after the restart. Every
    branch ends at occurrence 0 with the same bytes, and the world was called once."""
    stack = crashable
    tape = stack.open_tape()
    branches = stack.fork(tape, BRANCHES)
    early, late = branches[: BRANCHES // 2], branches[BRANCHES // 2 :]
    url = f"{upstream.url}/gated?q=1"
    upstream.state.gate.clear()
    with ThreadPoolExecutor(BRANCHES) as pool:
        first: dict[str, Future[Reply]] = {b: pool.submit(ask, stack, tape, b, url) for b in early}
        wait_until(lambda: upstream.state.count("/gated") == 1, what="the holder's live call")
        wait_until(
            lambda: single_flight_waits(stack.resolver.url) >= len(early) - 1,
            what="the other early branches waiting",
        )
        stack.crash_resolver()
        wait_until(
            lambda: sum(f.done() for f in first.values()) == len(early) - 1,
            what="the waiters' 503s",
        )
        answered = [b for b, f in first.items() if f.done()]
        assert {first[b].result().status for b in answered} == {503}
        (holder,) = set(early) - set(answered)
        late_first = [ask(stack, tape, b, url) for b in late]  # nothing to ask: 503 at once
        assert {reply.status for reply in late_first} == {503}

        stack.restart_resolver()
        retried = [b for b in branches if b != holder]
        again = {b: pool.submit(ask, stack, tape, b, url) for b in retried}
        wait_until(
            lambda: (
                single_flight_waits(stack.resolver.url) >= len(retried)
                or upstream.state.count("/gated") > 1
            ),
            what="every retry waiting on the holder (or a second live call)",
        )
        upstream.state.gate.set()
        replies = {holder: first[holder].result(timeout=60)}
        replies.update({b: f.result(timeout=60) for b, f in again.items()})

    assert {b: r.status for b, r in replies.items()} == dict.fromkeys(branches, 200)
    occurrences = {b: r.headers["x-groundhog-occurrence"] for b, r in replies.items()}
    assert occurrences == dict.fromkeys(branches, "0")
    assert len({r.body for r in replies.values()}) == 1
    assert upstream.state.count("/gated") == 1
    assert sorted(r.decision for r in replies.values()) == ["recorded"] + ["shared"] * (
        BRANCHES - 1
    )
    report = stack.admin("GET", f"/v1/tapes/{tape}/report").json()
    assert report["totals"]["live_calls"] == 1
    assert json.loads(replies[holder].body)["number"] == 1


def test_a_read_recorded_by_a_resolver_that_died_before_answering_is_retried_at_it(
    crashable: Stack, upstream: Upstream
) -> None:
    """The record commits (the lineage advances in the ask's attempt's name) and the resolver
    dies before the proxy hears of it: the worker gets 503, and its retry is asked as the same
    attempt, so it is served the recorded answer at occurrence 0 with no second live call."""
    stack = crashable
    tape = stack.open_tape()
    (b0,) = stack.fork(tape, 1)
    item = f"{upstream.url}/item/r"
    stack.crash_resolver()
    stack.restart_resolver(env={"GROUNDHOG_FAILPOINTS": "record.committed@1"})
    lost = ask(stack, tape, b0, item)
    assert lost.status == 503 and upstream.state.count("/item/r") == 1
    wait_until(lambda: stack.resolver.process.poll() is not None, what="the resolver dying")
    stack.restart_resolver(env={})
    retried = ask(stack, tape, b0, item)
    assert retried.status == 200
    assert retried.headers["x-groundhog-occurrence"] == "0"
    assert upstream.state.count("/item/r") == 1
    again = ask(stack, tape, b0, item)
    assert again.headers["x-groundhog-occurrence"] == "1"


def test_a_read_whose_record_died_is_listed_and_its_address_tried_again_at_once(
    crashable: Stack, upstream: Upstream
) -> None:
    """The world answered b0's read and the resolver died before its record committed (issue
    53): b0 gets 503. Once the resolver is back, the proxy's report settles the read: the
    report lists it as an unrecorded read and its claim is released, so b1's ask of the same
    address is fetched again at once (one more live call), not refused for a lease length."""
    stack = crashable
    tape = stack.open_tape()
    b0, b1 = stack.fork(tape, 2)
    item = f"{upstream.url}/item/unlanded"
    stack.crash_resolver()
    stack.restart_resolver(env={"GROUNDHOG_FAILPOINTS": "record.before_commit@1"})
    lost = ask(stack, tape, b0, item)
    assert lost.status == 503 and upstream.state.count("/item/unlanded") == 1
    wait_until(lambda: stack.resolver.process.poll() is not None, what="the resolver dying")
    stack.restart_resolver(env={})

    def listed() -> list[dict]:
        report = stack.admin("GET", f"/v1/tapes/{tape}/report").json()
        return [call for call in report["unrecorded"] if call["url"].endswith("/unlanded")]

    # Within the claim's 30 s: a report that never comes (the pending row left behind,
    # as before) fails here, whatever the lease does meanwhile.
    wait_until(lambda: bool(listed()), timeout=20, what="the unrecorded read in the report")
    (call,) = listed()
    assert (call["branch"], call["kind"], call["decision"]) == (b0, "read", "recorded")
    sibling = ask(stack, tape, b1, item)
    assert (sibling.status, sibling.decision) == (200, "recorded"), sibling.body[:300]
    assert upstream.state.count("/item/unlanded") == 2
    again = ask(stack, tape, b0, item)  # b0's retry: served the tape's bytes, no third call
    assert again.status == 200 and upstream.state.count("/item/unlanded") == 2


# The proxy's read timeout for the siblings' test: long enough for all three to be waiting on
# the holder before its live call fails (the test checks they were), short enough to be quick.
UPSTREAM_TIMEOUT_SECONDS = "4"


@pytest.fixture
def impatient(tmp_path: Path) -> Iterator[Stack]:
    with running_stack(tmp_path, "--upstream-timeout", UPSTREAM_TIMEOUT_SECONDS) as stack:
        yield stack


def test_siblings_behind_an_upstream_that_never_answers_cost_one_live_call(
    impatient: Stack, upstream: Upstream
) -> None:
    """Failures fly single: the waiters on a claim whose live call timed out get that
    `upstream-failed` at once, and the next asks of the group try again once."""
    stack = impatient
    tape = stack.open_tape()
    siblings = stack.fork(tape, 3)
    url = f"{upstream.url}/hang"

    def ask_together() -> list[Reply]:
        waits_before = single_flight_waits(stack.resolver.url)
        with ThreadPoolExecutor(len(siblings)) as pool:
            futures = [pool.submit(ask, stack, tape, b, url) for b in siblings]
            wait_until(
                lambda: single_flight_waits(stack.resolver.url) - waits_before >= 2,
                what="two siblings waiting on the holder",
            )
            assert not any(f.done() for f in futures)  # all were in before the timeout
            return [f.result(timeout=60) for f in futures]

    first = ask_together()
    assert upstream.state.count("/hang") == 1
    assert [r.decision for r in first] == ["upstream-failed"] * 3
    assert {r.status for r in first} == {502}
    assert len({r.body for r in first}) == 1  # the holder's problem, to every waiter
    assert {r.headers["x-groundhog-occurrence"] for r in first} == {"0"}

    again = ask_together()
    assert upstream.state.count("/hang") == 2
    assert [r.decision for r in again] == ["upstream-failed"] * 3
    assert {r.headers["x-groundhog-occurrence"] for r in again} == {"0"}  # nothing answered


def test_a_write_whose_record_never_landed_leaves_its_branch_refetching(
    crashable: Stack, upstream: Upstream
) -> None:
    """Write-ahead: b0's write goes live, the resolver dies before its record, and after the
    restart b0's read of what the write may have changed is refetched, not the base b1
    recorded; the report lists the write as unrecorded with what it invalidated."""
    stack = crashable
    tape = stack.open_tape(dependency_model="closure")
    b0, b1 = stack.fork(tape, 2)
    item = f"{upstream.url}/item/r"
    base = ask(stack, tape, b1, item)
    assert base.decision == "recorded"

    upstream.state.gate.clear()
    with ThreadPoolExecutor(1) as pool:
        write = pool.submit(ask, stack, tape, b0, f"{upstream.url}/gated", "POST", b"w")
        wait_until(lambda: upstream.state.count("/gated") == 1, what="the write in flight")
        stack.crash_resolver()
        upstream.state.gate.set()  # the world answers; its record meets a dead resolver
        written = write.result(timeout=60)
    assert (written.status, written.decision) == (200, "write")
    assert "x-groundhog-record-error" in written.headers
    stack.restart_resolver()

    after = ask(stack, tape, b0, item)
    assert after.status == 200
    assert after.decision == "refetched"
    assert after.headers["x-groundhog-fingerprint"] != ""
    assert after.body != base.body
    report = stack.admin("GET", f"/v1/tapes/{tape}/report").json()
    (unrecorded,) = report["unrecorded"]
    assert (unrecorded["branch"], unrecorded["method"], unrecorded["decision"]) == (
        b0,
        "POST",
        "write",
    )
    assert unrecorded["url"].endswith("/gated")
    assert unrecorded["invalidated"] == [f"origin:{upstream.url}"]
