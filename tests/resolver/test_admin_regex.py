"""Admin regular expressions run on RE2 (engine/admin_regex.py) or a tape is refused with a 422."""

from __future__ import annotations

import httpx
import pytest

from engine.admin_regex import compile_admin_regex
from engine.errors import InvalidSpec
from engine.redaction import Policy
from tests.support.servers import ServerProcess


@pytest.mark.parametrize("pattern", [r"(?<=k)ey", r"(a)\1", r"a(?!b)"])
def test_a_pattern_re2_cannot_run_is_refused_naming_it(pattern: str) -> None:
    with pytest.raises(InvalidSpec, match="linear-time") as refused:
        compile_admin_regex(pattern)
    assert repr(pattern) in str(refused.value)


def test_a_catastrophic_pattern_scans_in_linear_time() -> None:
    """`(a+)+b` over a run of `a`s: Python's `re` backtracks 2^n steps (n=64 would not end)."""
    policy = Policy(patterns=[r"(a+)+b", r"ACME-\d{6}"])
    found = policy.scanner.find("a" * 64 + " ACME-123456 " + "a" * 63 + "b")
    rules = [rule for _start, _end, rule in found]
    assert rules == ["tape-pattern-1", "tape-pattern-0"]


def test_the_api_refuses_an_unsupported_pattern_with_422(resolver_server: ServerProcess) -> None:
    with httpx.Client(base_url=resolver_server.url, trust_env=False) as http:
        refused = http.post(
            "/v1/tapes",
            json={"name": "regex-lookbehind", "world_seed": 1, "redact_patterns": [r"(?<=k)ey"]},
        )
        assert refused.status_code == 422, refused.text
        assert refused.headers["content-type"].startswith("application/problem+json")
        assert "linear-time" in refused.text and "(?<=k)ey" in refused.text
        kept = http.post(
            "/v1/tapes",
            json={"name": "regex-nested", "world_seed": 1, "redact_patterns": [r"(a+)+b"]},
        )
        assert kept.status_code < 300, kept.text
