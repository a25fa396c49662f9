"""One verify run: a sealed copy of an exported tape replayed in process, and a verdict.

Without this module `tape verify` would have no single place that decides pass or fail: every
branch replayed and matched, the shim counters resumed, and not one answer that would have gone
to the world. The copy lives in a private temporary SQLite store of its own, so any number of
runs go side by side on one resolver and none changes the tape it checks; the store and its
directory are gone when the run returns. A run never raises for what it finds in the tape: a
damaged row, an ask the resolve path fails on or a run past its deadline is a finding.
"""

from __future__ import annotations

import logging
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import select

from resolver.import_scrub import scrub_imported
from resolver.resolution import Resolver
from resolver.verify.conversation import Conversation, fresh_start, read_conversation
from resolver.verify.replay import (
    BranchSummary,
    DeadlinePassed,
    Mismatch,
    Replay,
    replay_branch,
)
from store.branches import fork_branch, get_branch
from store.db import Store, open_store, transaction
from store.models import Branch
from store.transfer import DamagedTape, TransferError, import_tape

logger = logging.getLogger(__name__)

# A verify answers within this, whatever the tape holds: what is left is reported unreplayed.
DEFAULT_DEADLINE_S = 600.0
MAX_BODY_BYTES = 1 << 62  # the copy replays what the tape holds, whatever its size


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


def _forker(store: Store, tape_id: int) -> Any:
    def fork(parent_path: str, child_path: str, counters: dict[str, Any]) -> None:
        with transaction(store.write) as session:
            parent = get_branch(tape_id, parent_path, session=session)
            if parent is None:
                raise TransferError(f"branch {child_path!r} forks from a missing {parent_path!r}")
            fork_branch(parent, child_path, counters, session=session)

    return fork


def _check_shim_counters(replay: Replay, store: Store, tape_id: int) -> None:
    """Each branch's stored shim counters are as the tape holds them after the forks, so a
    process started as that branch resumes its sequences (DESIGN §5)."""
    with transaction(store.read) as session:
        rows = session.execute(
            select(Branch.path, Branch.shim_counters).where(Branch.tape_id == tape_id)
        )
        stored = {path: counters or {} for path, counters in rows}
    for path, branch in replay.conversation.branches.items():
        summary = replay.summaries.setdefault(path, BranchSummary(path))
        summary.shim_counters_resume = stored.get(path) == branch.shim_counters


def _replay(conversation: Conversation, store: Store, fresh: Path, deadline: float) -> Replay:
    with transaction(store.write) as session:
        tape = import_tape(fresh, conversation.tape, session=session)
        session.flush()
        resolver = Resolver(store, max_body_bytes=MAX_BODY_BYTES, claim_seconds=30.0)
        scrub_imported(tape.id, resolver.redaction_key, session=session)
        tape_id = tape.id
    replay = Replay(conversation, resolver, _forker(store, tape_id), deadline)
    if "root" in conversation.branches:
        replay_branch(replay, conversation.branches["root"])
    _check_shim_counters(replay, store, tape_id)
    return replay


def verify_export(export: Path, *, deadline_s: float = DEFAULT_DEADLINE_S) -> VerifyReport:
    """Replay every branch of the tape in the export file at `export`, world closed."""
    deadline = time.monotonic() + deadline_s
    try:
        conversation = read_conversation(export)
    except Exception as error:  # an unreadable file is the verdict, not a crash
        report = VerifyReport(tape="")
        report.problem = f"the tape does not read: {type(error).__name__}: {error}"
        return report
    report = VerifyReport(conversation.tape)
    with tempfile.TemporaryDirectory(prefix="groundhog-verify-") as name:
        directory = Path(name)
        fresh = directory / "fresh.sqlite3"
        store = open_store(f"sqlite:///{directory / 'copy.sqlite3'}")
        try:
            fresh_start(export, fresh)
            replay = _replay(conversation, store, fresh, deadline)
            report.branches = [replay.summaries[path] for path in sorted(replay.summaries)]
            report.live_connections = replay.live_attempts
        except DamagedTape as error:
            report.problem = f"the tape does not import: the tape is damaged: {error}"
        except TransferError as error:
            report.problem = f"the tape does not import: {error}"
        except DeadlinePassed:
            report.problem = f"verify did not finish within its deadline ({deadline_s:.0f} s)"
        except Exception as error:  # a broken tape is a finding, never a 500
            logger.exception("verify of tape %s failed", conversation.tape)
            report.problem = f"verify could not replay the tape: {type(error).__name__}: {error}"
        finally:
            store.dispose()
    logger.info("verified tape %s: %s", report.tape, "ok" if report.ok else "FAILED")
    return report
