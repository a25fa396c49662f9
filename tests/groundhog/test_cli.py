"""The `groundhog` CLI against a real resolver: every command, its output and its errors."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from typer.testing import CliRunner

from groundhog import cli_servers
from groundhog.cli import app
from groundhog.client import Groundhog
from groundhog.lifetime import tied_command
from groundhog.shim import shim
from tests.support.servers import (
    REPO_ROOT,
    ServerProcess,
    free_port,
    free_ports,
    running_server,
    wait_until,
)

runner = CliRunner()


@pytest.fixture
def name() -> str:
    return f"cli-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def cli(resolver: ServerProcess, isolated_env: Path):  # type: ignore[no-untyped-def]
    """Invoke the CLI in-process against the session's resolver."""

    def invoke(*args: str, url: str | None = None):  # type: ignore[no-untyped-def]
        env = {"GROUNDHOG_RESOLVER_URL": url or resolver.url, "COLUMNS": "200"}
        return runner.invoke(app, list(args), env=env)

    return invoke


def run_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The CLI as a user runs it: its own process, so child commands' output is captured."""
    return subprocess.run(
        tied_command([sys.executable, "-m", "groundhog.cli", *args]),
        env={**os.environ, "COLUMNS": "200", **env},
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
    )


def test_help_guides_a_newcomer(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("--help")
    assert result.exit_code == 0
    for command in ("up", "resolver", "proxy", "worldsim", "tape", "env", "run", "bench"):
        assert command in result.stdout
    tape_help = cli("tape", "open", "--help")
    assert "--seed" in tape_help.stdout and "--dependency-model" in tape_help.stdout


@pytest.mark.parametrize(
    "command", [["--help"], ["run", "--help"], ["tape", "fork", "--help"], ["up", "--help"]]
)
def test_help_shows_plain_placeholders(cli, command: list[str]) -> None:  # type: ignore[no-untyped-def]
    shown = cli(*command).stdout
    assert not re.search(r"<(bool|str|int|float|list\[\w+\]|path)>", shown), shown
    if command == ["run", "--help"]:
        assert re.search(r"--tape\s+TEXT", shown) and re.search(r"--shim\s+Key", shown), shown


def test_version_names_the_installed_distribution(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("--version")
    assert result.exit_code == 0
    assert re.fullmatch(r"groundhog \d+\.\d+\.\d+\S*\n", result.stdout), result.stdout


def test_tape_lifecycle(cli, name: str) -> None:  # type: ignore[no-untyped-def]
    opened = cli("tape", "open", name, "--seed", "7", "--mode", "replay")
    assert opened.exit_code == 0, opened.output
    assert name in opened.stdout and "replay" in opened.stdout
    assert name in cli("tape", "ls").stdout
    listed = json.loads(cli("tape", "ls", "--json").stdout)
    assert {"name": name, "world_seed": 7} in [
        {"name": tape["name"], "world_seed": tape["world_seed"]} for tape in listed
    ]

    forked = cli("tape", "fork", name, "--children", "2")
    assert forked.exit_code == 0 and forked.stdout.split() == ["root/b0", "root/b1"]
    named = cli("tape", "fork", name, "--parent", "root/b1", "--name", "left")
    assert named.stdout.split() == ["root/b1/left"]
    shown = cli("tape", "show", name)
    assert shown.exit_code == 0
    assert "root/b1/left" in shown.stdout and "seed 7" in shown.stdout

    assert "sealed" in cli("tape", "seal", name).stdout
    assert json.loads(cli("tape", "show", name, "--json").stdout)["tape"]["online"] is False
    assert "unsealed" in cli("tape", "unseal", name).stdout
    assert json.loads(cli("tape", "show", name, "--json").stdout)["tape"]["online"] is True

    report = cli("tape", "report", name)
    assert report.exit_code == 0 and "total" in report.stdout and "root/b1" in report.stdout
    assert json.loads(cli("tape", "report", name, "--json").stdout)["tape"] == name
    digest = cli("tape", "digest", name)
    assert digest.exit_code == 0
    assert len(digest.stdout.split()[0]) == 64 and name in digest.stdout

    reopened = cli("tape", "open", name)
    assert reopened.exit_code == 0, "opening again with no settings returns the tape"
    assert "deleted" in cli("tape", "rm", name, "--yes").stdout
    assert name not in cli("tape", "ls").stdout


def test_export_and_import(cli, name: str, tmp_path: Path, export_route: None) -> None:  # type: ignore[no-untyped-def]
    cli("tape", "open", name, "--seed", "2")
    cli("tape", "fork", name, "--children", "3")
    target = tmp_path / "copy.sqlite"
    exported = cli("tape", "export", name, str(target))
    assert exported.exit_code == 0, exported.output
    assert target.read_bytes()[:15] == b"SQLite format 3"
    imported = cli("tape", "import", str(target), "--name", f"{name}-copy")
    assert imported.exit_code == 0, imported.output
    original = cli("tape", "digest", name, "--json").stdout
    copy = cli("tape", "digest", f"{name}-copy", "--json").stdout
    assert json.loads(original)["digest"] == json.loads(copy)["digest"]
    again = cli("tape", "import", str(target), "--name", f"{name}-copy")
    assert again.exit_code == 1 and "409" in again.stderr
    assert "--name NEW_NAME" in again.stderr and "?name=" not in again.stderr


def test_resolver_down_says_how_to_fix_it(cli) -> None:  # type: ignore[no-untyped-def]
    url = f"http://127.0.0.1:{free_port()}"
    for args in (("tape", "ls"), ("tape", "show", "x"), ("env", "--tape", "x")):
        result = cli(*args, url=url)
        assert result.exit_code == 1
        assert f"cannot reach the resolver at {url}" in result.stderr
        assert "groundhog up" in result.stderr and "GROUNDHOG_RESOLVER_URL" in result.stderr
        assert "Traceback" not in result.output


def test_problems_are_printed_with_their_detail(cli, name: str) -> None:  # type: ignore[no-untyped-def]
    missing = cli("tape", "show", "no-such-tape")
    assert missing.exit_code == 1
    assert "404" in missing.stderr and "'no-such-tape' does not exist" in missing.stderr
    for command in ("report", "digest", "seal", "fork"):
        assert cli("tape", command, "no-such-tape").exit_code == 1
    invalid = cli("tape", "open", name, "--mode", "sometimes")
    assert invalid.exit_code == 1
    assert "422" in invalid.stderr and "'groundhog'" in invalid.stderr
    cli("tape", "open", name, "--seed", "1")
    conflict = cli("tape", "open", name, "--seed", "2")
    assert conflict.exit_code == 1
    assert "409" in conflict.stderr and "world_seed" in conflict.stderr
    not_a_file = cli("tape", "import", str(Path("/nonexistent/tape.sqlite")), "--name", name)
    assert not_a_file.exit_code == 1 and "is not a file" in not_a_file.stderr


def test_env_prints_exports_for_a_branch(cli, name: str, resolver: ServerProcess) -> None:  # type: ignore[no-untyped-def]
    cli("tape", "open", name, "--seed", "5")
    cli("tape", "fork", name, "--children", "1")
    result = cli("env", "--tape", name, "--branch", "root/b0", "--no-proxy", "llm.local")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    with Groundhog(resolver.url) as client:
        capability = client.get_branch(name, "root/b0").capability
    assert f"export HTTPS_PROXY='http://{name}:root%2Fb0:{capability}@127.0.0.1:8080'" in lines
    assert f"export GROUNDHOG_CAPABILITY='{capability}'" in lines
    assert "export GROUNDHOG_WORLD_SEED='5'" in lines
    no_proxy = next(line for line in lines if line.startswith("export NO_PROXY="))
    assert no_proxy.startswith("export NO_PROXY='llm.local,"), no_proxy
    assert urlsplit(resolver.url).netloc in no_proxy and "127.0.0.1:8080" in no_proxy
    exports = json.loads(cli("env", "--tape", name, "--branch", "root/b0", "--json").stdout)
    assert Path(exports["SSL_CERT_FILE"]).is_file()
    unknown = cli("env", "--tape", name, "--branch", "root/b7")
    assert unknown.exit_code == 1 and "404" in unknown.stderr


PROBE = (
    "import json, os, random, time, uuid;"
    "print(json.dumps({'branch': os.environ['GROUNDHOG_BRANCH'],"
    " 'proxy': os.environ['HTTP_PROXY'],"
    " 'draws': [random.random(), random.random()], 'time': time.time(),"
    " 'uuid': str(uuid.uuid4())}))"
)


def test_run_sets_the_worker_env_and_the_opt_in_shim(
    resolver: ServerProcess, isolated_env: Path, name: str
) -> None:
    env = {"GROUNDHOG_RESOLVER_URL": resolver.url}
    with Groundhog(resolver.url) as client:
        tape = client.open(name, world_seed=31)
        with shim(world_seed=31, branch="root"):
            first_parent_draw = __import__("random").random()
            tape.fork("root", 1)  # hands over counters: one draw already taken
    assert first_parent_draw is not None

    plain = run_cli(
        "run", "--tape", name, "--branch", "root/b0", "--", sys.executable, "-c", PROBE, env=env
    )
    assert plain.returncode == 0, plain.stderr
    unshimmed = json.loads(plain.stdout)
    assert unshimmed["branch"] == "root/b0" and f"{name}:root%2Fb0:" in unshimmed["proxy"]
    assert unshimmed["time"] > 1_700_000_000  # the real clock, no shim asked for

    shimmed_run = run_cli(
        "run", "--tape", name, "--branch", "root/b0", "--shim", "--", sys.executable, "-c", PROBE,
        env=env,
    )  # fmt: skip
    assert shimmed_run.returncode == 0, shimmed_run.stderr
    shimmed = json.loads(shimmed_run.stdout)
    with shim(world_seed=31, branch="root"):
        expected = [__import__("random").random() for _ in range(3)]
    assert shimmed["draws"] == expected[1:], "the child resumes where the parent forked"
    assert shimmed["time"] < 1_767_225_600, "the virtual clock of world 31 (in 2025)"

    # Without `--`, options end at the command: python's own `-c` is python's.
    bare = run_cli(
        "run", "--tape", name, "--branch", "root/b0", sys.executable, "-c", PROBE, env=env
    )
    assert bare.returncode == 0, bare.stderr
    assert json.loads(bare.stdout)["branch"] == "root/b0"

    failing = run_cli("run", "--tape", name, "--", sys.executable, "-c", "exit(3)", env=env)
    assert failing.returncode == 3
    missing = run_cli("run", "--tape", name, "--", "no-such-command-xyz", env=env)
    assert missing.returncode == 1 and "command not found: no-such-command-xyz" in missing.stderr


def test_server_commands_start_each_server(data_dir: Path, tmp_path: Path) -> None:
    with running_server(["groundhog.cli", "resolver", "--data", str(tmp_path)]) as resolver:
        assert httpx.get(f"{resolver.url}/v1/tapes", trust_env=False).status_code == 200
        proxy_args = [
            "groundhog.cli",
            "proxy",
            "--resolver-url",
            resolver.url,
            "--data",
            str(tmp_path),
        ]
        with running_server(proxy_args, health_path=None) as proxy:
            assert proxy.process.poll() is None
    with running_server(["groundhog.cli", "worldsim", "--seed", "3"]) as world:
        assert httpx.get(f"{world.url}/healthz", trust_env=False).status_code == 200
        assert f"worldsim (research, cooperative, seed 3) on {world.url};" in world.log()


def test_worldsim_serves_the_mcp_world() -> None:
    """compose's worldsim-mcp runs `groundhog worldsim --world mcp`: the MCP world, healthy.

    tests/deploy/ starts compose services as `python -m worldsim`; this is the entry point the
    container itself goes through, and it must say the world is uncooperative (its only mode).
    """
    with running_server(["groundhog.cli", "worldsim", "--world", "mcp", "--seed", "3"]) as world:
        assert httpx.get(f"{world.url}/healthz", trust_env=False).json() == {"status": "ok"}
        assert f"worldsim (mcp, uncooperative, seed 3) on {world.url};" in world.log()


def test_bench_passes_arguments_through(isolated_env: Path) -> None:
    result = run_cli("bench", "--help", env={})
    assert result.returncode == 0, result.stderr
    assert "usage: python -m bench" in result.stdout + result.stderr


def _lines(stream) -> Iterator[str]:  # type: ignore[no-untyped-def]
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        for line in stream:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    while (line := lines.get(timeout=90)) is not None:
        yield line


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def _interrupt_by_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start_up(tmp_path: Path, *flags: str) -> tuple[subprocess.Popen[str], int, int]:
    """`groundhog up FLAGS` on free ports and `tmp_path/data`, its output a pipe of text."""
    resolver_port, proxy_port = free_ports(2)
    command = [
        sys.executable, "-m", "groundhog.cli", "up", *flags,
        "--resolver-port", str(resolver_port), "--proxy-port", str(proxy_port),
        "--data", str(tmp_path / "data"),
    ]  # fmt: skip
    env = {**os.environ, "COLUMNS": "200", "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        tied_command(command),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=REPO_ROOT,
        # What a terminal gives the command Ctrl-C reaches, whatever this process holds: in a
        # full CI run `up` was started with SIGINT ignored (inherited), and a process keeps an
        # inherited ignore.
        preexec_fn=_interrupt_by_default,
    )
    return process, resolver_port, proxy_port


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "ctrl-c"])
def test_up_starts_both_prints_exports_and_stops_on_signal(
    tmp_path: Path, stop_signal: signal.Signals
) -> None:
    process, resolver_port, proxy_port = _start_up(tmp_path)
    output: list[str] = []
    try:
        for line in _lines(process.stdout):
            output.append(line)
            if "Ctrl-C stops both" in line:
                break
        text = "".join(output)
        assert f"export GROUNDHOG_RESOLVER_URL='http://127.0.0.1:{resolver_port}'" in text, text
        assert f"export GROUNDHOG_PROXY_URL='http://127.0.0.1:{proxy_port}'" in text
        assert "GROUNDHOG_CA_FILE" in text
        health = httpx.get(f"http://127.0.0.1:{resolver_port}/healthz", trust_env=False)
        assert health.status_code == 200
        assert _port_open(proxy_port)
        assert (tmp_path / "data" / "groundhog.sqlite3").exists()
        process.send_signal(stop_signal)
        assert process.wait(timeout=120) == 0  # a hang guard, generous for a loaded machine
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
    wait_until(lambda: not _port_open(resolver_port) and not _port_open(proxy_port), timeout=10)


@pytest.mark.parametrize(("flags", "leased"), [((), True), (("--no-branch-leases",), False)])
def test_up_starts_a_proxy_that_takes_branch_leases_unless_told_not_to(
    tmp_path: Path, flags: tuple[str, ...], leased: bool
) -> None:
    process, _resolver_port, _proxy_port = _start_up(tmp_path, *flags)
    try:
        for line in _lines(process.stdout):
            if "Ctrl-C stops both" in line:
                break
        # A proxy taking leases made its lease holder id at start.
        assert (tmp_path / "data" / "leases" / "holder").exists() is leased
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=120) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)


def test_up_reports_a_server_that_cannot_start(tmp_path: Path) -> None:
    start = time.monotonic()
    resolver_port, proxy_port = free_ports(2)
    result = run_cli(
        "up", "--resolver-port", str(resolver_port), "--proxy-port", str(proxy_port),
        "--data", str(tmp_path / "data"), "--timeout", "600",
        env={"GROUNDHOG_MAX_BODY_BYTES": "0"},  # a setting the resolver refuses at start
    )  # fmt: skip
    assert result.returncode == 1
    assert "the resolver exited with code" in result.stderr, result.stderr
    assert "resolver.log" in result.stderr
    assert "export GROUNDHOG_RESOLVER_URL" not in result.stdout
    assert time.monotonic() - start < 600, "a dead child is reported at once, not at the deadline"


@pytest.mark.parametrize("flag", ["--resolver-port", "--proxy-port"])
def test_up_refuses_a_port_in_use_before_starting(tmp_path: Path, flag: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy_port = taken.getsockname()[1]
        resolver_port, proxy_port = free_ports(2)
        ports = {"--resolver-port": str(resolver_port), "--proxy-port": str(proxy_port)}
        ports[flag] = str(busy_port)
        result = run_cli(
            "up", *[item for pair in ports.items() for item in pair],
            "--data", str(tmp_path / "data"),
            env={},
        )  # fmt: skip
    assert result.returncode == 1
    assert f"port {busy_port} on 127.0.0.1 is already in use" in result.stderr, result.stderr
    assert f"{flag} PORT" in result.stderr and "--listen-port" not in result.stderr
    assert "export" not in result.stdout, "no ready banner for servers that never started"
    assert not (tmp_path / "data" / "logs").exists(), "nothing was started"


def test_open_takes_settings_from_a_config_file(cli, name: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    config = tmp_path / "tape.json"
    config.write_text(json.dumps({"ignore_params": ["ts"], "redact_headers": ["X-Token"]}))
    opened = cli(
        "tape", "open", name, "--config", str(config), "--cooperative-host", "world.local",
        "--sealed", "--json",
    )  # fmt: skip
    assert opened.exit_code == 0, opened.output
    tape = json.loads(opened.stdout)
    assert tape["ignore_params"] == ["ts"] and tape["redact_headers"] == ["X-Token"]
    assert tape["cooperative_hosts"] == ["world.local"] and tape["online"] is False
    config.write_text("[1, 2]")
    refused = cli("tape", "open", f"{name}-2", "--config", str(config))
    assert refused.exit_code == 1 and "must hold a JSON object" in refused.stderr
    unknown = cli("tape", "open", f"{name}-3", "--config", str(tmp_path / "absent.json"))
    assert unknown.exit_code == 1 and "cannot read --config" in unknown.stderr


@pytest.mark.parametrize("command", ["resolver", "proxy"])
def test_server_commands_take_data_from_groundhog_data_dir(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, default_ports_taken: list[int]
) -> None:
    started: list[list[str]] = []
    monkeypatch.setattr(cli_servers, "_run_module", lambda _module, args: started.append(args))
    port = ["--port", str(free_port())]  # never the default: a `make up` may hold it
    from_env = runner.invoke(
        app, [command, *port], env={"GROUNDHOG_DATA_DIR": str(tmp_path / "env")}
    )
    assert from_env.exit_code == 0, from_env.output
    flag = runner.invoke(
        app,
        [command, *port, "--data", str(tmp_path / "flag")],
        env={"GROUNDHOG_DATA_DIR": "ignored"},
    )
    assert flag.exit_code == 0, flag.output
    data = [args[args.index("--data") + 1] for args in started]
    assert data == [str(tmp_path / "env"), str(tmp_path / "flag")]


def test_cli_run_fork_run_continues_the_shim_sequence(
    resolver: ServerProcess, isolated_env: Path, name: str
) -> None:
    """run root --shim, tape fork, run root/b0 --shim: no repeated uuid4, no clock going back."""
    env = {"GROUNDHOG_RESOLVER_URL": resolver.url}
    assert run_cli("tape", "open", name, "--seed", "8", env=env).returncode == 0
    probe = [sys.executable, "-c", PROBE]
    parent = run_cli("run", "--tape", name, "--branch", "root", "--shim", "--", *probe, env=env)
    assert parent.returncode == 0, parent.stderr
    assert run_cli("tape", "fork", name, env=env).returncode == 0
    child = run_cli("run", "--tape", name, "--branch", "root/b0", "--shim", "--", *probe, env=env)
    assert child.returncode == 0, child.stderr
    before, after = json.loads(parent.stdout), json.loads(child.stdout)
    assert after["uuid"] != before["uuid"]
    assert after["time"] > before["time"]
    assert not set(after["draws"]) & set(before["draws"])
    with shim(world_seed=8, branch="root"):
        expected = [__import__("random").random() for _ in range(4)]
    assert before["draws"] + after["draws"] == expected, "the child continues the parent's stream"


def test_env_takes_the_proxy_the_resolver_announces(tmp_path: Path, isolated_env: Path) -> None:
    """On non-default ports `env` points workers at the running proxy, never at :8080."""
    proxy_url = f"http://127.0.0.1:{free_port()}"
    args = ["resolver", "--data", str(tmp_path), "--proxy-url", proxy_url]
    with running_server(args) as announcing:
        env = {"GROUNDHOG_RESOLVER_URL": announcing.url}
        assert run_cli("tape", "open", "t", env=env).returncode == 0
        printed = run_cli("env", "--tape", "t", "--json", env=env)
    assert printed.returncode == 0, printed.stderr
    exports = json.loads(printed.stdout)
    assert exports["GROUNDHOG_PROXY_URL"] == proxy_url
    capability = exports["GROUNDHOG_CAPABILITY"]
    assert exports["HTTP_PROXY"] == proxy_url.replace("http://", f"http://t:root:{capability}@")
    assert urlsplit(proxy_url).netloc in exports["NO_PROXY"].split(",")


def test_a_worker_install_asked_to_run_a_server_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, isolated_env: Path
) -> None:
    def missing(module: str, **_kwargs: object) -> None:
        raise ModuleNotFoundError("No module named 'fastapi'", name="fastapi")

    monkeypatch.setattr(cli_servers.runpy, "run_module", missing)
    result = runner.invoke(app, ["resolver", "--port", str(free_port())])
    assert result.exit_code == 1
    assert "pip install 'groundhog-rl[services]'" in result.stderr and "fastapi" in result.stderr
