"""`groundhog proxy` and `groundhog up` pass how the proxy reaches the world to the proxy.

`--upstream-ca` (repeatable), `--insecure-upstream`, `--upstream-proxy` and
`--tcp-passthrough-host` reach `python -m proxy`; end to end, `groundhog up` with an egress
proxy and a private CA records through the egress proxy and verifies the private upstream.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import requests
from typer.testing import CliRunner

from groundhog import cli_servers
from groundhog.cli import app
from tests.proxy.clients import proxy_url
from tests.proxy.upstream_server import Upstream
from tests.support.certs import write_private_ca
from tests.support.forward_proxy import ForwardProxy
from tests.support.servers import REPO_ROOT, free_port, free_ports, wait_until

runner = CliRunner()


def test_proxy_passes_egress_flags_to_the_proxy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, default_ports_taken: list[int]
) -> None:
    started: list[list[str]] = []
    monkeypatch.setattr(cli_servers, "_run_module", lambda _module, args: started.append(args))
    result = runner.invoke(
        app,
        [
            "proxy", "--port", str(free_port()), "--data", str(tmp_path),
            "--upstream-ca", "one.pem", "--upstream-ca", "two.pem", "--insecure-upstream",
            "--upstream-proxy", "http://egress:3128", "--tcp-passthrough-host", "db.internal",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    args = started[0]
    cas = [args[i + 1] for i, arg in enumerate(args) if arg == "--upstream-ca"]
    assert cas == [str((Path("one.pem")).resolve()), str(Path("two.pem").resolve())]
    assert "--insecure-upstream" in args
    assert args[args.index("--upstream-proxy") + 1] == "http://egress:3128"
    assert args[args.index("--tcp-passthrough-host") + 1] == "db.internal"


def test_proxy_without_egress_flags_adds_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, default_ports_taken: list[int]
) -> None:
    started: list[list[str]] = []
    monkeypatch.setattr(cli_servers, "_run_module", lambda _module, args: started.append(args))
    proxy = ["proxy", "--port", str(free_port()), "--data", str(tmp_path)]
    assert runner.invoke(app, proxy).exit_code == 0
    assert not any(arg.startswith(("--upstream", "--insecure", "--tcp")) for arg in started[0])


def test_up_records_through_an_egress_proxy_and_trusts_a_private_ca(tmp_path: Path) -> None:
    ca, cert, key = write_private_ca(tmp_path, ["127.0.0.1"])
    resolver_port, proxy_port = free_ports(2)
    data = tmp_path / "data"
    output = tmp_path / "up.log"
    with (
        ForwardProxy() as egress,
        Upstream(name="plain") as plain,
        Upstream(name="private", cert=(cert, key)) as private,
        output.open("w") as sink,
    ):
        process = subprocess.Popen(
            [
                sys.executable, "-m", "groundhog.cli", "up",
                "--resolver-port", str(resolver_port), "--proxy-port", str(proxy_port),
                "--data", str(data), "--upstream-proxy", egress.url, "--upstream-ca", str(ca),
            ],
            stdout=sink,
            stderr=subprocess.STDOUT,
            env={**os.environ, "COLUMNS": "200", "PYTHONUNBUFFERED": "1"},
            cwd=REPO_ROOT,
        )  # fmt: skip
        try:
            wait_until(
                lambda: process.poll() is not None or "Ctrl-C stops both" in output.read_text(),
                timeout=90,
                what="groundhog up",
            )
            assert process.poll() is None, output.read_text()
            resolver = f"http://127.0.0.1:{resolver_port}"
            httpx.post(f"{resolver}/v1/tapes", json={"name": "egress"}, trust_env=False)
            with requests.Session() as session:
                session.trust_env = False
                proxies = {s: proxy_url(proxy_port, "egress", "root") for s in ("http", "https")}
                verify = str(data / "ca" / "mitmproxy-ca-cert.pem")
                recorded = session.get(f"{plain.url}/up", proxies=proxies, verify=verify)
                secure = session.get(f"{private.url}/up", proxies=proxies, verify=verify)
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=30)
        seen = egress.seen
    assert recorded.status_code == 200, recorded.text
    assert recorded.headers["x-groundhog-decision"] == "recorded"
    assert secure.status_code == 200, secure.text
    assert seen == [f"GET {plain.url}/up", f"CONNECT 127.0.0.1:{private.port}"]


@pytest.mark.parametrize(
    ("command", "flag"),
    [
        ("up", "--proxy-port"),
        ("up", "--resolver-port"),
        ("proxy", "--port"),
        ("resolver", "--port"),
    ],
)
def test_a_port_out_of_range_is_refused_naming_the_flag(command: str, flag: str) -> None:
    result = runner.invoke(app, [command, flag, "99999"])
    assert result.exit_code == 2, result.output
    assert f"Invalid value for '{flag}'" in result.output and "65535" in result.output
    assert not isinstance(result.exception, OverflowError)
    assert "Traceback" not in result.output


def test_proxy_takes_the_default_tape_and_branch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, default_ports_taken: list[int]
) -> None:
    started: list[list[str]] = []
    monkeypatch.setattr(cli_servers, "_run_module", lambda _module, args: started.append(args))
    command = ["proxy", "--port", str(free_port()), "--data", str(tmp_path)]
    result = runner.invoke(app, [*command, "--tape", "demo", "--branch", "root/b0"])
    assert result.exit_code == 0, result.output
    args = started[0]
    assert args[args.index("--tape") + 1] == "demo"
    assert args[args.index("--branch") + 1] == "root/b0"
