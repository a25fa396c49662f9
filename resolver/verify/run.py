"""One verify run: a sealed copy of an exported tape replayed in a closed sandbox, and a verdict.

Without this module `tape verify` would have no single place that decides pass or fail: every
branch replayed and matched, the shim counters resumed, and not one connection opened towards
the world. The sandbox (its servers, its store, the copy) is gone when the run returns.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from groundhog.client import Groundhog
from groundhog.errors import GroundhogError
from resolver.verify.conversation import fresh_start, read_conversation
from resolver.verify.replay import (
    BranchSummary,
    Mismatch,
    Replay,
    check_shim_counters,
    proxied_client,
    replay_branch,
)
from resolver.verify.sandbox import sandbox

logger = logging.getLogger(__name__)


@dataclass
class VerifyReport:
    tape: str
    live_connections: int = 0
    branches: list[BranchSummary] = field(default_factory=list)
    problem: str | None = None

    @property
    def first_mismatch(self) -> Mismatch | None:
        return next((b.first_mismatch for b in self.branches if b.first_mismatch), None)

    @property
    def ok(self) -> bool:
        return (
            self.problem is None
            and self.live_connections == 0
            and all(branch.ok for branch in self.branches)
        )

    def as_json(self) -> dict[str, Any]:
        mismatch = self.first_mismatch
        return {
            "tape": self.tape,
            "ok": self.ok,
            "live_connections": self.live_connections,
            "problem": self.problem,
            "first_mismatch": asdict(mismatch) if mismatch else None,
            "branches": [branch.as_json() for branch in self.branches],
        }


def verify_export(export: Path) -> VerifyReport:
    """Replay every branch of the tape in the export file at `export`, world closed."""
    conversation = read_conversation(export)
    report = VerifyReport(conversation.tape)
    with sandbox() as box:
        fresh = box.directory / "fresh.sqlite3"
        fresh_start(export, fresh)
        with Groundhog(
            box.resolver_url, token="", proxy_url=box.proxy_url, ca_file=box.directory / "ca.pem"
        ) as admin:
            try:
                admin.import_tape(fresh, conversation.tape)
            except GroundhogError as error:
                report.problem = f"the tape does not import: {error.detail}"
                report.live_connections = box.world.connections
                return report
            ca_file = str(admin.ca_files().ca_file)
            with proxied_client(box.proxy_url, ca_file) as http:
                replay = Replay(conversation, admin, http)
                if "root" in conversation.branches:
                    replay_branch(replay, conversation.branches["root"])
                check_shim_counters(replay, box.resolver_url)
            report.branches = [replay.summaries[path] for path in sorted(replay.summaries)]
        report.live_connections = box.world.connections
    logger.info("verified tape %s: %s", report.tape, "ok" if report.ok else "FAILED")
    return report
