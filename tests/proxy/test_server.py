"""The mitmproxy options Groundhog runs with, and the readiness helper."""

from __future__ import annotations

from pathlib import Path

import pytest

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
