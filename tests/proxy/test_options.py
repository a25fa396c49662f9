"""proxy/options.py: every duration option can be set as mitmdump's `--set` sets it (text),
is read as seconds, and an unusable value is refused naming the option and the fix; the lease
disk tier's byte budget likewise, with 0 for no disk tier."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from mitmproxy.exceptions import OptionsError
from mitmproxy.test import taddons

from engine import failpoints
from proxy.addon import GroundhogAddon
from proxy.options import DEFAULT_LEASE_DISK_BYTES, SECONDS_OPTIONS, seconds
from tests.support.servers import accepting, free_port, wait_until

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", sorted(SECONDS_OPTIONS))
def test_each_duration_takes_a_set_spec_and_reads_as_seconds(name: str) -> None:
    addon = GroundhogAddon()
    with taddons.context(addon) as context:
        context.options.set(f"{name}=2.5")  # the parser mitmdump's --set uses
        assert seconds(context.options, name) == 2.5
        context.options.set(f"{name}=60")
        assert seconds(context.options, name) == 60.0


def test_the_defaults_are_the_documented_seconds() -> None:
    addon = GroundhogAddon()
    with taddons.context(addon) as context:
        for name, (default, _) in SECONDS_OPTIONS.items():
            assert seconds(context.options, name) == default


def test_the_resolver_client_gets_the_seconds_set() -> None:
    addon = GroundhogAddon()
    with taddons.context(addon) as context:
        context.options.set("groundhog_resolve_timeout=60", "groundhog_wait_limit=0.5")
        assert addon.resolver is not None
        assert addon.resolver.resolve_timeout == 60.0
        assert addon.resolver.wait_limit == 0.5


@pytest.mark.parametrize("value", ["soon", "0", "-3", "nan", "inf", ""])
def test_an_unusable_duration_is_refused_naming_the_option(value: str) -> None:
    addon = GroundhogAddon()
    with taddons.context(addon) as context:
        with pytest.raises(OptionsError, match="groundhog_wait_limit must be a number of seconds"):
            context.options.set(f"groundhog_wait_limit={value}")
        assert (
            seconds(context.options, "groundhog_wait_limit")
            == SECONDS_OPTIONS["groundhog_wait_limit"][0]
        )


def test_a_resolve_retry_of_0_turns_retrying_off_and_below_0_is_refused() -> None:
    addon = GroundhogAddon()
    with taddons.context(addon) as context:
        context.options.set("groundhog_resolve_retry=0")
        assert addon.resolver is not None and addon.resolver.resolve_retry == 0.0
        with pytest.raises(OptionsError, match=r"groundhog_resolve_retry must be .* 0 or more"):
            context.options.set("groundhog_resolve_retry=-1")


def test_plain_mitmdump_with_the_addon_takes_durations_from_its_command_line(
    tmp_path: Path,
) -> None:
    port = free_port()
    mitmdump = Path(sys.executable).parent / "mitmdump"
    log = tmp_path / "mitmdump.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [
                str(mitmdump),
                "-s",
                str(REPO / "proxy" / "addon.py"),
                "--listen-host",
                "127.0.0.1",
                "--listen-port",
                str(port),
                "--set",
                f"confdir={tmp_path / 'mitmproxy'}",
                "--set",
                "groundhog_resolver_url=http://127.0.0.1:9",
                "--set",
                "groundhog_resolve_timeout=60",
                "--set",
                "groundhog_upstream_deadline=1.5",
            ],
            cwd=REPO,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_until(
            lambda: process.poll() is not None or accepting(port),
            timeout=60,
            what="mitmdump listening",
        )
        assert process.poll() is None, log.read_text()
        assert "unsupported option type" not in log.read_text()
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def test_failpoints_arm_from_the_option_and_a_bad_name_is_refused() -> None:
    addon = GroundhogAddon()
    with taddons.context(addon) as context:
        try:
            context.options.set("groundhog_failpoints=proxy.lease.batch_sent@2")
            assert failpoints._armed == {"proxy.lease.batch_sent": 2}
            with pytest.raises(OptionsError, match="groundhog_failpoints: unknown failpoint"):
                context.options.set("groundhog_failpoints=proxy.lease.nowhere")
        finally:
            failpoints.arm("")


def test_the_lease_disk_tier_takes_its_budget_and_0_turns_it_off(tmp_path: Path) -> None:
    addon = GroundhogAddon()
    with taddons.context(addon) as context:
        context.options.update(groundhog_branch_leases=True, groundhog_lease_dir=str(tmp_path))
        assert addon.leases is not None
        disk = addon.leases.answers.disk
        assert disk is not None and disk.budget_bytes == DEFAULT_LEASE_DISK_BYTES == 1024**3
        assert disk.directory == tmp_path / "answers"
        context.options.set("groundhog_lease_disk_bytes=4096")  # as --set sets it
        assert addon.leases.answers.disk is disk and disk.budget_bytes == 4096
        context.options.set("groundhog_lease_disk_bytes=0")
        assert addon.leases.answers.disk is None


def test_a_lease_book_made_with_no_disk_bytes_has_no_disk_tier(tmp_path: Path) -> None:
    addon = GroundhogAddon()
    with taddons.context(addon) as context:
        context.options.update(
            groundhog_lease_disk_bytes=0,
            groundhog_branch_leases=True,
            groundhog_lease_dir=str(tmp_path),
        )
        assert addon.leases is not None and addon.leases.answers.disk is None


@pytest.mark.parametrize(
    ("value", "refusal"),
    [
        ("-1", r"groundhog_lease_disk_bytes must be a number of bytes, 0 or more .* not -1"),
        ("1GiB", r"groundhog_lease_disk_bytes: not an integer: 1GiB"),  # mitmproxy's own
    ],
)
def test_an_unusable_disk_budget_is_refused_naming_the_option(value: str, refusal: str) -> None:
    addon = GroundhogAddon()
    with taddons.context(addon) as context:
        with pytest.raises(OptionsError, match=refusal):
            context.options.set(f"groundhog_lease_disk_bytes={value}")
        assert context.options.groundhog_lease_disk_bytes == DEFAULT_LEASE_DISK_BYTES
