"""The publish-time audit gate against a resolver answering the audit route as issue 31 does."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from groundhog.client import Groundhog
from groundhog.dataset.audit_gate import AuditRefused, audit_gate
from groundhog.errors import GroundhogError
from groundhog.protocol.problems import problem_bytes
from tests.support.threaded_server import ThreadedServer

FINDING = {"exchange": 3, "where": "response body", "rule": "github-token"}


@contextmanager
def audit_answering(answers: dict[str, tuple[int, bytes]]) -> Iterator[str]:
    """A resolver stand-in whose GET /v1/tapes/{t}/audit answers `answers[t]`."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            tape = self.path.split("/")[3]
            status, body = answers.get(tape, (404, problem_bytes(404, "not-found", "x", "x")))
            self.send_response(status)
            kind = "application/json" if status == 200 else "application/problem+json"
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with ThreadedServer(server):
        yield f"http://127.0.0.1:{server.server_port}"


def _audit(tape: str, clean: bool, findings: list[dict[str, object]]) -> tuple[int, bytes]:
    return 200, json.dumps({"tape": tape, "clean": clean, "findings": findings}).encode()


def test_a_clean_audit_passes_and_findings_refuse_unless_allowed() -> None:
    detail = "tape 'gone' does not exist"
    missing = problem_bytes(404, "not-found", "Not found", detail, tape="gone")
    answers = {
        "clean": _audit("clean", True, []),
        "dirty": _audit("dirty", False, [FINDING]),
        "gone": (404, missing),
    }
    with audit_answering(answers) as url, Groundhog(url, token="") as client:
        assert audit_gate(client, "clean", allow_unscrubbed=False).clean is True
        with pytest.raises(AuditRefused, match="found 1 stored value"):
            audit_gate(client, "dirty", allow_unscrubbed=False)
        allowed = audit_gate(client, "dirty", allow_unscrubbed=True)
        assert allowed.clean is False and allowed.findings == 1
        assert "published unscrubbed" in allowed.summary
        # A missing tape is the tape's problem, not a missing audit: no --allow-unscrubbed hides it.
        with pytest.raises(GroundhogError, match="does not exist"):
            audit_gate(client, "gone", allow_unscrubbed=True)
        # The route itself missing (the framework's 404, naming no tape): the audit is unavailable.
        with pytest.raises(AuditRefused, match="no secrets audit"):
            audit_gate(client, "other", allow_unscrubbed=False)
        assert audit_gate(client, "other", allow_unscrubbed=True).clean is None
