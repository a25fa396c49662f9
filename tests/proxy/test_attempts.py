"""proxy/attempts.py: a retry of an unanswered request is the same attempt; nothing else is."""

from __future__ import annotations

from groundhog.protocol.wire import ResolveAsk
from proxy.attempts import Attempts, request_identity
from tests.resolver.test_schemas import wire_ask


def ask(**changes: object) -> ResolveAsk:
    """A resolve body as the proxy builds one before it has an attempt id."""
    payload = {**wire_ask(), "headers": [["X-Retry-Count", "0"]], **changes}
    del payload["attempt"]
    return payload  # type: ignore[return-value]


def test_each_new_request_is_a_new_attempt() -> None:
    attempts = Attempts()
    made = {attempts.attempt_for(ask()) for _ in range(50)}
    assert len(made) == 50 and all(12 <= len(a) <= 64 for a in made)


def test_the_retry_of_an_unanswered_request_is_its_attempt_once() -> None:
    attempts = Attempts()
    first = ask()
    first["attempt"] = attempts.attempt_for(first)
    attempts.unanswered(first)
    # The client's retry changed a header: still the same request.
    retry = ask(headers=[["X-Retry-Count", "1"]])
    assert attempts.attempt_for(retry) == first["attempt"]
    assert attempts.attempt_for(retry) != first["attempt"]  # answered or not, reused once


def test_another_request_does_not_take_an_unanswered_attempt() -> None:
    attempts = Attempts()
    first = ask()
    first["attempt"] = attempts.attempt_for(first)
    attempts.unanswered(first)
    others = [
        ask(branch="root/b1"),
        ask(path="/other"),
        ask(query=[["q", "wind"]]),
        ask(method="POST"),
        ask(body="eA=="),
        ask(port=8443),
        ask(tape="u"),
    ]
    assert all(attempts.attempt_for(other) != first["attempt"] for other in others)
    assert len({request_identity(other) for other in others} | {request_identity(first)}) == 8
    assert attempts.attempt_for(ask()) == first["attempt"]


def test_the_memory_forgets_the_oldest_first() -> None:
    attempts = Attempts(limit=2)
    payloads = [ask(path=f"/{n}") for n in range(3)]
    for payload in payloads:
        payload["attempt"] = attempts.attempt_for(payload)
        attempts.unanswered(payload)
    assert len(attempts) == 2
    assert attempts.attempt_for(payloads[0]) != payloads[0]["attempt"]
    assert attempts.attempt_for(payloads[2]) == payloads[2]["attempt"]


def test_a_request_of_bytes_that_are_not_utf8_is_remembered_too() -> None:
    """mitmproxy hands on a non-UTF-8 method or path byte as a surrogate escape (issue 53)."""
    attempts = Attempts()
    odd = ask(method="\udc80", path="/a\udcff")
    odd["attempt"] = attempts.attempt_for(odd)
    attempts.unanswered(odd)
    assert request_identity(odd) != request_identity(ask(method="\udc81", path="/a\udcff"))
    assert attempts.attempt_for(ask(method="\udc80", path="/a\udcff")) == odd["attempt"]
