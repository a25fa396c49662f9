"""The verify table prints what the tape holds, brackets included (rich markup ate them)."""

from __future__ import annotations

from groundhog.cli_common import console
from groundhog.cli_dataset import print_verification


def test_a_mismatch_naming_the_sandbox_marker_prints_it() -> None:
    mismatch = {
        "branch": "root/[b0]", "seq": 3, "method": "POST", "url": "http://h/mcp",
        "key": "POST http://h/mcp", "occurrence": 0, "fingerprint": "", "exchange_id": 7,
        "reason": "header 'mcp-session-id' was served 'x', the branch was served '[sandbox]'",
    }  # fmt: skip
    branch = {
        "branch": "root/[b0]", "asks": 1, "replayed": 1, "matched": 0, "skipped": 0,
        "shim_counters_resume": True, "ok": False,
    }  # fmt: skip
    result = {
        "live_connections": 0, "problem": "[damaged] row", "first_mismatch": mismatch,
        "branches": [branch],
    }  # fmt: skip
    with console.capture() as captured:
        print_verification(result)
    printed = captured.get()
    assert "'[sandbox]'" in printed and "[damaged] row" in printed
    assert printed.count("root/[b0]") == 2
