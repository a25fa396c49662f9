"""proxy/http2_refusals.py's refusal head and body, as a pure function."""

from __future__ import annotations

import json

from proxy.http2_refusals import refusal_fields


def test_a_refusal_is_a_problem_with_a_decision_in_http2_form() -> None:
    head, body = refusal_fields(400, "Invalid request scheme: CONNECT")
    assert head[0] == (b":status", b"400")
    names = [name for name, _ in head]
    assert names == [name.lower() for name in names]  # HTTP/2 forbids uppercase field names
    fields = dict(head)
    assert fields[b"x-groundhog-decision"] == b"refused"
    assert fields[b"content-type"] == b"application/problem+json"
    assert int(fields[b"content-length"]) == len(body)
    problem = json.loads(body)
    assert problem["type"].endswith("/problems/proxy-refused")
    assert "Invalid request scheme: CONNECT" in problem["detail"]
