"""Cloud metadata addresses are refused unless the tape opts out (engine/forbidden_targets)."""

from __future__ import annotations

import pytest

from engine.forbidden_targets import (
    OPT_OUT_FIELD,
    ForbiddenTarget,
    is_metadata_host,
    metadata_refusal,
    refuse_metadata,
)
from engine.tape_settings import TapeSettings


@pytest.mark.parametrize(
    "host",
    [
        "169.254.169.254",
        "[fd00:ec2::254]",
        "fd00:ec2::254",
        "metadata.google.internal",
        "METADATA.google.internal.",
        "169.254.170.2",
        "::ffff:169.254.169.254",
    ],
)
def test_metadata_hosts_are_known(host: str) -> None:
    assert is_metadata_host(host)


@pytest.mark.parametrize(
    "host", ["169.254.169.253", "127.0.0.1", "metadata.example.com", "google.internal", "fd00::1"]
)
def test_other_hosts_are_not_metadata(host: str) -> None:
    assert not is_metadata_host(host)


def test_the_refusal_names_the_target_and_the_opt_out() -> None:
    reason = metadata_refusal("169.254.169.254", 80, TapeSettings())
    assert reason is not None and "169.254.169.254:80" in reason and OPT_OUT_FIELD in reason
    assert (
        metadata_refusal("169.254.169.254", 80, TapeSettings(allow_metadata_addresses=True)) is None
    )
    with pytest.raises(ForbiddenTarget):
        refuse_metadata("metadata.google.internal", 80, TapeSettings())
