"""Cloud metadata addresses are refused unless the tape opts out (resolver/forbidden_targets)."""

from __future__ import annotations

import pytest

from engine.tape_settings import TapeSettings
from resolver.forbidden_targets import (
    OPT_OUT_FIELD,
    ForbiddenTarget,
    is_metadata_host,
    metadata_refusal,
    refuse_metadata,
)
from tests.resolver.proxy_double import ProxyDouble


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


def test_the_resolver_refuses_a_metadata_ask_before_anything_is_taken(
    proxy: ProxyDouble, tape_name: str
) -> None:
    proxy.open(tape_name)
    answer = proxy.resolve(tape_name, "root", "GET", "/latest/meta-data/", host="169.254.169.254")
    assert answer.status_code == 403
    problem = answer.json()
    assert problem["type"].endswith("forbidden-target") and OPT_OUT_FIELD in problem["detail"]
    events = proxy.http.get(f"/v1/tapes/{tape_name}/events", params={"branch": "root"}).json()
    assert events["events"] == []
    assert proxy.http.get(f"/v1/tapes/{tape_name}").json()["exchanges"] == 0


def test_a_tape_may_opt_out(proxy: ProxyDouble, tape_name: str) -> None:
    proxy.open(tape_name, **{OPT_OUT_FIELD: True})
    served = proxy.ask(tape_name, "root", "GET", "/latest/meta-data/", host="169.254.169.254")
    assert served.decision == "recorded"
