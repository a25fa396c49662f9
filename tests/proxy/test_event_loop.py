"""The proxy's event loop: uvloop by default where installed, asyncio's on request.

Unit checks of the choice (proxy/event_loop.py) and the command line, and both loops end to
end: a record and a sibling's hit through the real proxy process, over HTTP and HTTPS, the
process having loaded uvloop only when it runs on it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from proxy import __main__ as proxy_main
from proxy import event_loop
from proxy.event_loop import EventLoop, loop_factory, resolved
from tests.proxy.clients import proxy_url, with_requests
from tests.proxy.stack import running_stack
from tests.proxy.upstream_server import Upstream


def test_an_unknown_loop_is_refused_with_the_choices() -> None:
    with pytest.raises(ValueError, match="'auto', 'asyncio', 'uvloop'"):
        EventLoop("trio")


def test_auto_is_uvloop_where_installed_and_asyncio_elsewhere(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert event_loop.uvloop_installed()  # uvicorn[standard] brings it on Linux
    assert resolved("auto") is EventLoop.UVLOOP
    monkeypatch.setattr(event_loop, "uvloop_installed", lambda: False)
    assert resolved("auto") is EventLoop.ASYNCIO
    with pytest.raises(ValueError, match="pip install uvloop"):
        resolved("uvloop")


@pytest.mark.parametrize(("choice", "module"), [("asyncio", "asyncio"), ("uvloop", "uvloop")])
def test_the_factory_builds_the_chosen_loop(choice: str, module: str) -> None:
    async def running_module() -> str:
        return type(asyncio.get_running_loop()).__module__.partition(".")[0]

    assert asyncio.run(running_module(), loop_factory=loop_factory(choice)) == module


def test_a_bad_loop_in_the_environment_exits_naming_the_setting(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GROUNDHOG_PROXY_LOOP", "trio")
    with pytest.raises(SystemExit) as exited:
        proxy_main.main(["--data", "/nonexistent"])
    assert exited.value.code == 2
    assert "GROUNDHOG_PROXY_LOOP" in capsys.readouterr().err


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_each_loop_records_and_shares_end_to_end(
    tmp_path: Path, loop: str, upstream: Upstream, tls_upstream: Upstream
) -> None:
    with running_stack(tmp_path, "--loop", loop) as stack:
        # uvloop's extension is loaded only by a proxy that runs on it.
        maps = Path(f"/proc/{stack.proxy.process.pid}/maps").read_text()
        assert ("uvloop/loop" in maps) is (loop == "uvloop")
        tape = stack.open_tape(dependency_model="closure")
        first, second = stack.fork(tape, 2)
        for origin in (upstream, tls_upstream):
            url = f"{origin.url}/doc/1"
            recorded = with_requests(proxy_url(stack.proxy.port, tape, first), url, stack.ca, {})
            shared = with_requests(proxy_url(stack.proxy.port, tape, second), url, stack.ca, {})
            assert (recorded.status, recorded.decision) == (200, "recorded")
            assert (shared.decision, shared.body) == ("shared", recorded.body)
            assert origin.state.count("/doc/1", method="GET") == 1
