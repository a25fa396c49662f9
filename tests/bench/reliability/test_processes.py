"""Unit tests for the reliability child processes: RSS parsing, logs per start, argument lists."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench.reliability import processes
from bench.reliability.processes import Child, Children, proxy_args, resolver_args, rss_kib

STATUS_TEXT = """Name:\tpython
State:\tS (sleeping)
Pid:\t4242
VmPeak:\t  900000 kB
VmSize:\t  800000 kB
VmRSS:\t   123456 kB
RssAnon:\t  100000 kB
"""


def fake_proc(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, text: str | None) -> None:
    """Point the module's /proc reads at a file holding `text` (absent when None)."""
    status = tmp_path / "status"
    if text is not None:
        status.write_text(text)
    real_path = processes.Path
    monkeypatch.setattr(
        processes,
        "Path",
        lambda value: status if str(value).startswith("/proc/") else real_path(value),
    )


def test_rss_is_read_from_the_vmrss_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake_proc(monkeypatch, tmp_path, STATUS_TEXT)
    assert rss_kib(4242) == 123456


def test_rss_without_a_vmrss_line_is_none(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Kernel threads and zombies have no VmRSS line.
    fake_proc(monkeypatch, tmp_path, "Name:\tkthreadd\nState:\tZ (zombie)\n")
    assert rss_kib(4242) is None


def test_rss_with_a_garbled_value_is_none(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake_proc(monkeypatch, tmp_path, "VmRSS:\tlots kB\n")
    assert rss_kib(4242) is None


def test_rss_of_an_exited_process_is_none(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake_proc(monkeypatch, tmp_path, None)
    assert rss_kib(4242) is None


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
def test_rss_of_this_process_matches_proc() -> None:
    line = next(
        line for line in Path("/proc/self/status").read_text().splitlines() if "VmRSS" in line
    )
    expected = int(line.split(":")[1].strip().removesuffix("kB").strip())
    measured = rss_kib(os.getpid())
    assert measured is not None and measured > 0
    # Resident memory moves between the two reads; it must be the same order of magnitude.
    assert expected / 2 < measured < expected * 2


def make_child(tmp_path: Path) -> Child:
    return Child(
        name="tap", module_args=["bench.reliability.tap"], port=4321, log_path=tmp_path / "tap.log"
    )


def test_child_url_is_loopback_on_its_port(tmp_path: Path) -> None:
    assert make_child(tmp_path).url == "http://127.0.0.1:4321"


def test_unstarted_child_is_not_alive_and_has_no_rss(tmp_path: Path) -> None:
    child = make_child(tmp_path)
    assert child.alive() is False
    assert child.rss_kib() is None
    assert child.log() == ""
    assert child.log_of_this_start() == ""
    child.kill_hard()  # nothing to kill: must not raise
    child.stop()


def test_log_of_this_start_skips_earlier_starts(tmp_path: Path) -> None:
    child = make_child(tmp_path)
    earlier = "first run\nit crashed\n"
    child.log_path.write_text(earlier)
    child.log_offset = len(earlier.encode())
    with child.log_path.open("a") as handle:
        handle.write("second run ready\n")
    assert child.log_of_this_start() == "second run ready\n"
    assert child.log() == earlier + "second run ready\n"


def test_children_close_stops_newest_first(tmp_path: Path) -> None:
    stopped: list[str] = []

    class Recorder:
        def __init__(self, name: str) -> None:
            self.name = name

        def stop(self) -> None:
            stopped.append(self.name)

    group = Children(tmp_path)
    group.started.extend([Recorder("upstream"), Recorder("resolver"), Recorder("proxy0")])  # type: ignore[list-item]
    group.close()
    assert stopped == ["proxy0", "resolver", "upstream"]


def test_children_context_closes_even_on_error(tmp_path: Path) -> None:
    stopped: list[str] = []

    class Recorder:
        name = "upstream"

        def stop(self) -> None:
            stopped.append(self.name)

    with (
        pytest.raises(RuntimeError, match="scenario failed"),
        processes.children(tmp_path) as group,
    ):
        group.started.append(Recorder())  # type: ignore[arg-type]
        raise RuntimeError("scenario failed")
    assert stopped == ["upstream"]


def test_scenario_children_uses_the_given_root(tmp_path: Path) -> None:
    with processes.scenario_children("gh-test-", tmp_path) as (base, group):
        assert base == tmp_path
        assert group.log_dir == tmp_path


def test_scenario_children_without_root_removes_its_scratch() -> None:
    with processes.scenario_children("gh-test-") as (base, _group):
        assert base.is_dir()
        assert base.name.startswith("gh-test-")
    assert not base.exists()


def test_resolver_args_add_the_database_only_when_given(tmp_path: Path) -> None:
    plain = resolver_args(tmp_path)
    assert plain[0] == "resolver"
    assert plain[plain.index("--data") + 1] == str(tmp_path)
    assert "--database-url" not in plain
    url = "postgresql+psycopg://postgres@127.0.0.1/test"
    with_db = resolver_args(tmp_path, url)
    assert with_db[with_db.index("--database-url") + 1] == url


def test_proxy_args_carry_resolver_data_and_timeout(tmp_path: Path) -> None:
    args = proxy_args("http://127.0.0.1:9", tmp_path, upstream_timeout=2.5)
    assert args[0] == "proxy"
    assert args[args.index("--resolver-url") + 1] == "http://127.0.0.1:9"
    assert args[args.index("--data") + 1] == str(tmp_path)
    assert float(args[args.index("--upstream-timeout") + 1]) == 2.5


def test_real_child_restarts_on_the_same_port_after_kill(tmp_path: Path) -> None:
    """One cheap real process: the counting upstream, killed hard and restarted in place."""
    with processes.children(tmp_path) as group:
        child = group.start("upstream", ["bench.reliability.upstream"])
        port, first_pid = child.port, child.pid
        assert child.alive()
        rss = child.rss_kib()
        assert rss is not None and rss > 0
        child.kill_hard()
        assert not child.alive()
        assert child.rss_kib() is None
        child.start()
        assert child.alive()
        assert child.port == port
        assert child.pid != first_pid
        assert child.starts == 2
