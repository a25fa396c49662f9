"""The mitmproxy options Groundhog runs with, and the readiness helper."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from proxy import __main__ as proxy_main
from proxy import server
from proxy.__main__ import build_parser
from proxy.server import ProxyConfig, ca_cert_path, groundhog_options, mitmproxy_options, wait_ready
from tests.support.servers import free_port


def test_options_never_open_a_connection_for_a_hit(tmp_path: Path) -> None:
    config = ProxyConfig(host="127.0.0.1", port=1234, data_dir=tmp_path, tape="t", branch="root")
    options = mitmproxy_options(config)
    assert options["connection_strategy"] == "lazy"
    assert options["upstream_cert"] is False
    assert options["confdir"] == str(tmp_path / "ca")
    assert options["ssl_insecure"] is False
    assert groundhog_options(config)["groundhog_tape"] == "t"
    assert ca_cert_path(tmp_path) == tmp_path / "ca" / "mitmproxy-ca-cert.pem"


def test_wait_ready_gives_up_with_a_clear_error() -> None:
    port = free_port()
    with pytest.raises(TimeoutError, match=str(port)):
        wait_ready("127.0.0.1", port, timeout=0.3)


def test_command_line_names_everything_the_cli_wraps() -> None:
    args = build_parser().parse_args(
        ["--resolver-url", "http://r:1", "--data", "/d", "--tape", "t", "--proxy-token", "x"]
    )
    assert (args.resolver_url, args.data, args.tape, args.proxy_token) == (
        "http://r:1",
        "/d",
        "t",
        "x",
    )


def test_a_taken_port_exits_with_a_message(tmp_path: Path) -> None:
    import socket
    import subprocess
    import sys

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "proxy", "--port", str(port), "--data", str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode != 0
    assert "address already in use" in done.stdout + done.stderr


def test_the_ca_comes_from_ensure_ca_before_mitmproxy_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[Path] = []

    def unwritable(ca_dir: Path) -> Path:
        asked.append(ca_dir)
        raise PermissionError(13, "Permission denied", str(ca_dir))

    def too_early() -> None:
        raise AssertionError("mitmproxy was built before the CA existed")

    monkeypatch.setattr(server, "ensure_ca", unwritable)
    monkeypatch.setattr(server, "build_master", too_early)
    config = ProxyConfig(port=free_port(), data_dir=tmp_path, ca_directory=tmp_path / "shared")
    with pytest.raises(server.CAUnavailable, match="--ca-dir"):
        asyncio.run(server.serve(config))
    assert asked == [tmp_path / "shared"]


def test_ca_dir_defaults_to_data_ca_and_follows_groundhog_ca_dir(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("GROUNDHOG_CA_DIR", raising=False)
    plain = build_parser().parse_args(["--data", "/d"])
    assert ProxyConfig(data_dir=Path(plain.data), ca_directory=plain.ca_dir).ca_dir == Path("/d/ca")
    monkeypatch.setenv("GROUNDHOG_CA_DIR", "/shared/ca")
    assert build_parser().parse_args(["--data", "/d"]).ca_dir == "/shared/ca"
    assert build_parser().parse_args(["--ca-dir", "/x"]).ca_dir == "/x"
    assert ca_cert_path("/d", "/x") == Path("/x/mitmproxy-ca-cert.pem")


def test_upstream_timeout_sets_both_addon_timeouts(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(proxy_main, "run", lambda *args, **kwargs: calls.append(kwargs))
    proxy_main.main(["--data", "/d", "--ca-dir", "/c", "--upstream-timeout", "2.5"])
    (kwargs,) = calls
    assert kwargs["ca_dir"] == "/c"
    assert kwargs["extra_options"]["groundhog_upstream_connect_timeout"] == "2.5"
    assert kwargs["extra_options"]["groundhog_upstream_read_timeout"] == "2.5"
    proxy_main.main(["--data", "/d"])
    assert "groundhog_upstream_read_timeout" not in calls[1]["extra_options"]
    with pytest.raises(SystemExit):
        proxy_main.main(["--upstream-timeout", "0"])


def test_a_ca_dir_that_cannot_be_made_is_refused_in_one_line(tmp_path: Path) -> None:
    import subprocess
    import sys

    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    command = [sys.executable, "-m", "proxy", "--port", str(free_port()), "--data", str(tmp_path)]
    done = subprocess.run(
        [*command, "--ca-dir", str(blocker / "ca")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "--ca-dir" in done.stderr and "Traceback" not in done.stderr
