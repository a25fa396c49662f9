"""The admin shapes: one declaration for the resolver's schemas and the client's results."""

from __future__ import annotations

import dataclasses

from groundhog.protocol.admin import BranchInfo, TapeInfo


def test_unknown_fields_are_kept_aside_not_refused() -> None:
    tape = TapeInfo.from_json(
        {
            "name": "t",
            "world_seed": 1,
            "mode": "groundhog",
            "online": True,
            "dependency_model": "closure",
            "added_later": 3,
        }
    )
    assert tape.name == "t" and tape.extra == {"added_later": 3}
    assert "extra" not in {field.name for field in dataclasses.fields(TapeInfo)}
    assert TapeInfo("t", 1, "naive", False, "path").extra == {}


def test_a_branch_without_counters_reads_as_empty_counters() -> None:
    branch = BranchInfo.from_json({"path": "root", "parent": None, "shim_counters": None})
    assert branch.shim_counters == {} and branch.extra == {}
