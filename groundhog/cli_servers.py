"""`groundhog up | resolver | proxy | worldsim | bench`: run Groundhog's servers and benchmark.

Each server is its package's own `python -m …` entry point; the CLI only supplies defaults
(ports 8070/8080/8090, data under ./.groundhog) so a newcomer needs no flags to start. The
launcher is imported by the commands that use it: every `groundhog` command loads this module
to build its help, and `groundhog tape ls` must not pay for starting servers.
"""

from __future__ import annotations

import importlib.util
import os
import runpy
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from groundhog.cli_common import DEFAULT_DATA, console, errors, fail
from groundhog.errors import GroundhogError
from groundhog.lifetime import tied_command

if TYPE_CHECKING:
    from groundhog import launcher

Host = Annotated[str, typer.Option(help="Address to listen on (loopback by default).")]
# A TCP port: click refuses anything else with a message naming the flag (99999 once reached
# the socket layer as an OverflowError traceback).
PORT_RANGE = {"min": 1, "max": 65535}
Data = Annotated[
    Path,
    typer.Option(
        "--data", envvar="GROUNDHOG_DATA_DIR", help="Directory for the SQLite store and the CA."
    ),
]
UpstreamCA = Annotated[
    list[Path] | None,
    typer.Option(
        "--upstream-ca",
        help="Also trust this PEM CA for upstream TLS (repeatable); SSL_CERT_FILE and "
        "REQUESTS_CA_BUNDLE are added when set.",
    ),
]
InsecureUpstream = Annotated[
    bool,
    typer.Option(
        "--insecure-upstream", help="Do not verify upstream certificates (logged loudly)."
    ),
]
UpstreamProxy = Annotated[
    str | None,
    typer.Option(
        "--upstream-proxy", help="Reach the world through this HTTP(S) proxy (http://host:port)."
    ),
]
TcpPassthroughHost = Annotated[
    list[str] | None,
    typer.Option(
        "--tcp-passthrough-host",
        help="Relay raw (non-HTTP, non-TLS) tunnels to this host unrecorded while the tape is "
        "online (repeatable); other raw tunnels are closed.",
    ),
]
MapHost = Annotated[
    list[str] | None,
    typer.Option(
        "--map-host",
        metavar="HOST=ADDR:PORT",
        help="Connect to ADDR:PORT for HOST, as curl's --resolve (repeatable): a local stand-in "
        "or staging under a real host name; the Host header, TLS name and request key keep HOST.",
    ),
]

CaptureDir = Annotated[
    Path | None,
    typer.Option(
        "--capture-dir",
        help="Accept captured workers (groundhog run --capture --capture-dir DIR): a "
        "transparent and a DNS listener, announced in DIR with each worker's tape and branch.",
    ),
]

BranchLeases = Annotated[
    bool,
    typer.Option(
        "--branch-leases/--no-branch-leases",
        help="Take each branch's lease and answer its recorded reads in the proxy, shipping "
        "their events to the resolver behind (docs/internals.md, 'Branch leases'); "
        "--no-branch-leases asks the resolver for every hit.",
    ),
]


def lease_args(branch_leases: bool) -> list[str]:
    """The proxy's flags for branch leases, as `python -m proxy` takes them."""
    return ["--set", f"groundhog_branch_leases={'true' if branch_leases else 'false'}"]


def capture_args(capture_dir: Path | None) -> list[str]:
    """The proxy's flag for captured workers (`groundhog run --capture`)."""
    return ["--capture-dir", str(capture_dir.resolve())] if capture_dir is not None else []


def egress_args(
    upstream_ca: list[Path] | None,
    insecure_upstream: bool,
    upstream_proxy: str | None,
    tcp_passthrough_host: list[str] | None,
    map_host: list[str] | None = None,
) -> list[str]:
    """The proxy's flags for how it reaches the world, as `python -m proxy` takes them."""
    args: list[str] = []
    for path in upstream_ca or []:
        args += ["--upstream-ca", str(path.resolve())]
    if insecure_upstream:
        args.append("--insecure-upstream")
    if upstream_proxy:
        args += ["--upstream-proxy", upstream_proxy]
    for host in tcp_passthrough_host or []:
        args += ["--tcp-passthrough-host", host]
    for entry in map_host or []:
        args += ["--map-host", entry]
    if map_host:
        from proxy.host_map import HostMapError, parse_host_map

        try:
            parse_host_map(map_host)
        except HostMapError as error:
            raise fail(str(error)) from None
    return args


_LOCAL_PACKAGES = {"groundhog", "resolver", "store", "proxy", "worldsim", "bench"}


def _run_module(module: str, args: list[str]) -> None:
    """Run `python -m module args` in this process, as if started from a shell."""
    if importlib.util.find_spec(f"{module}.__main__") is None:
        raise fail(f"cannot run `python -m {module}`: it is not installed in {sys.executable}")
    saved = sys.argv
    sys.argv = [module, *args]
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except ModuleNotFoundError as error:
        if error.name and error.name.split(".")[0] in _LOCAL_PACKAGES:
            raise
        # A worker-side install: the servers' packages come with an extra.
        raise fail(
            f"`groundhog {module}` needs {error.name}, which the worker-side install leaves out: "
            "pip install 'groundhog-rl[services]'"
        ) from None
    except KeyboardInterrupt:
        pass  # Ctrl-C is how a foreground server is stopped
    finally:
        sys.argv = saved


def _require_free_port(host: str, port: int) -> None:
    from groundhog import launcher

    try:
        launcher.check_ports(host, {"--port": port})
    except launcher.LaunchError as error:
        raise fail(str(error)) from None


def resolver(
    host: Host = "127.0.0.1",
    port: Annotated[
        int, typer.Option(help="Port for the admin API and /v1/resolve.", **PORT_RANGE)
    ] = 8070,
    data: Data = DEFAULT_DATA,
    proxy_url: Annotated[
        str | None,
        typer.Option(
            "--proxy-url",
            metavar="URL",
            help="The proxy workers use; `groundhog env` reads it from here instead of guessing.",
        ),
    ] = None,
) -> None:
    """Run the resolver (the FastAPI service the proxies ask) in the foreground."""
    _require_free_port(host, port)
    args = ["--host", host, "--port", str(port), "--data", str(data)]
    if proxy_url:
        args += ["--proxy-url", proxy_url]
    _run_module("resolver", args)


def proxy(
    host: Host = "127.0.0.1",
    port: Annotated[
        int, typer.Option(help="Port workers use as HTTP(S)_PROXY.", **PORT_RANGE)
    ] = 8080,
    resolver_url: Annotated[
        str, typer.Option(envvar="GROUNDHOG_RESOLVER_URL", help="Where the resolver answers.")
    ] = "http://127.0.0.1:8070",
    data: Data = DEFAULT_DATA,
    upstream_ca: UpstreamCA = None,
    insecure_upstream: InsecureUpstream = False,
    upstream_proxy: UpstreamProxy = None,
    tcp_passthrough_host: TcpPassthroughHost = None,
    map_host: MapHost = None,
    branch_leases: BranchLeases = True,
    capture_dir: CaptureDir = None,
    tape: Annotated[
        str | None,
        typer.Option(
            "--tape",
            help="Pin the proxy to one tape (a sidecar of one worker): requests naming another "
            "are refused.",
        ),
    ] = None,
    branch: Annotated[
        str | None,
        typer.Option("--branch", help="Pin it to this branch of --tape (default root)."),
    ] = None,
    capability: Annotated[
        str | None,
        typer.Option(
            "--capability",
            envvar="GROUNDHOG_CAPABILITY",
            help="The pinned branch's capability, presented for its worker (`groundhog tape "
            "fork --json` prints it; `groundhog env` exports it as GROUNDHOG_CAPABILITY).",
        ),
    ] = None,
) -> None:
    """Run the recording proxy (mitmproxy with the Groundhog addon) in the foreground."""
    _require_free_port(host, port)
    args = ["--host", host, "--port", str(port), "--resolver-url", resolver_url]
    args += capture_args(capture_dir)
    if branch and not tape:
        raise fail("--branch pins the proxy to a branch of --tape: give --tape too")
    if tape:
        args += ["--tape", tape, "--branch", branch or "root"]
        if capability:
            args += ["--capability", capability]
    egress = egress_args(
        upstream_ca, insecure_upstream, upstream_proxy, tcp_passthrough_host, map_host
    )
    _run_module("proxy", [*args, "--data", str(data), *egress, *lease_args(branch_leases)])


def worldsim(
    host: Host = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port of the simulated world.", **PORT_RANGE)] = 8090,
    seed: Annotated[int, typer.Option(help="The world's seed.")] = 0,
    uncooperative: Annotated[
        bool,
        typer.Option(
            "--uncooperative",
            help="Ignore X-Groundhog-* headers, draw noise per call, announce no hints.",
        ),
    ] = False,
    world: Annotated[
        str, typer.Option(help="Which world: research, shop or mcp (always uncooperative).")
    ] = "research",
) -> None:
    """Run worldsim, the seeded world (research, shop or mcp) the benchmark records."""
    from groundhog import launcher

    _require_free_port(host, port)
    # worldsim logs only warnings; without this line a newcomer sees a silent terminal.
    # The MCP world reads no X-Groundhog-* header whatever the flag says: say so.
    mode = "uncooperative" if uncooperative or world == "mcp" else "cooperative"
    console.print(
        f"worldsim ({world}, {mode}, seed {seed}) on {launcher.url_for(host, port)}; "
        "Ctrl-C stops it"
    )
    arguments = ["--host", host, "--port", str(port), "--seed", str(seed), "--world", world]
    _run_module("worldsim", [*arguments, "--uncooperative"] if uncooperative else arguments)


def _download_ca(resolver_url: str, data: Path) -> Path | None:
    from groundhog.client import Groundhog

    try:
        with Groundhog(resolver_url, ca_file=data / "worker-ca.pem") as client:
            return client.ca_files(refresh=True).ca_file
    except GroundhogError as error:
        errors.print(f"warning: could not fetch the CA ({error}); workers must trust it by hand")
        return None


def _print_exports(
    host: str,
    resolver_port: int,
    proxy_port: int,
    data: Path,
    resolver_child: launcher.Service,
    proxy_child: launcher.Service,
) -> None:
    from groundhog import launcher
    from groundhog.worker_env import shell_exports

    resolver_url = launcher.url_for(host, resolver_port)
    exports = {
        "GROUNDHOG_RESOLVER_URL": resolver_url,
        "GROUNDHOG_PROXY_URL": launcher.url_for(host, proxy_port),
    }
    ca_file = _download_ca(resolver_url, data)
    if ca_file is not None:
        exports["GROUNDHOG_CA_FILE"] = str(ca_file)
    console.print(f"resolver {resolver_url}  (log {resolver_child.log_path})", soft_wrap=True)
    console.print(
        f"proxy    {exports['GROUNDHOG_PROXY_URL']}  (log {proxy_child.log_path})", soft_wrap=True
    )
    console.print(f"store    {data}", soft_wrap=True)
    console.print("\n# for the CLI and the Python client:")
    console.print(shell_exports(exports), markup=False, soft_wrap=True)
    console.print(
        "\n# then, for a worker of tape T at branch B:\n"
        "#   groundhog tape open T --seed 7\n"
        '#   eval "$(groundhog env --tape T --branch root)"\n'
        "# Ctrl-C stops both.",
        markup=False,
    )


def up(
    host: Host = "127.0.0.1",
    resolver_port: Annotated[
        int, typer.Option("--resolver-port", help="Port of the resolver's admin API.", **PORT_RANGE)
    ] = 8070,
    proxy_port: Annotated[
        int, typer.Option("--proxy-port", help="Port workers use as HTTP(S)_PROXY.", **PORT_RANGE)
    ] = 8080,
    data: Data = DEFAULT_DATA,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for each to start.")] = 60.0,
    upstream_ca: UpstreamCA = None,
    insecure_upstream: InsecureUpstream = False,
    upstream_proxy: UpstreamProxy = None,
    tcp_passthrough_host: TcpPassthroughHost = None,
    map_host: MapHost = None,
    branch_leases: BranchLeases = True,
    capture_dir: CaptureDir = None,
) -> None:
    """Start the resolver and the proxy together on an embedded SQLite store.

    Prints the exports a worker needs; Ctrl-C (or SIGTERM) stops both.
    """
    from groundhog import launcher

    data = data.resolve()
    try:
        launcher.check_ports(host, {"--resolver-port": resolver_port, "--proxy-port": proxy_port})
        with (
            launcher.sigterm_as_interrupt(),
            launcher.stack(
                host=host,
                resolver_port=resolver_port,
                proxy_port=proxy_port,
                data=data,
                timeout=timeout,
                proxy_args=[
                    *egress_args(
                        upstream_ca,
                        insecure_upstream,
                        upstream_proxy,
                        tcp_passthrough_host,
                        map_host,
                    ),
                    *lease_args(branch_leases),
                    *capture_args(capture_dir),
                ],
            ) as (resolver_child, proxy_child),
        ):
            _print_exports(host, resolver_port, proxy_port, data, resolver_child, proxy_child)
            died = launcher.wait_for_exit((resolver_child, proxy_child))
            raise fail(
                f"the {died.name} exited with code {died.process.returncode}; "
                f"its log ({died.log_path}):\n{died.log_tail()}"
            )
    except KeyboardInterrupt:
        console.print("stopped resolver and proxy")
    except launcher.LaunchError as error:
        raise fail(str(error)) from None


def bench(ctx: typer.Context) -> None:
    """Run the benchmark (`python -m bench`); all arguments pass through (--quick, --help)."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    command = [sys.executable, "-m", "bench", *ctx.args]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with Progress(
        SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=errors
    ) as progress:
        progress.add_task("python -m bench " + " ".join(ctx.args), total=None)
        try:
            process = subprocess.Popen(
                tied_command(command), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env
            )
        except OSError as error:
            raise fail(f"cannot start the benchmark: {error}") from None
        assert process.stdout is not None
        for line in process.stdout:
            progress.console.print(line.decode(errors="replace").rstrip("\n"), markup=False)
        code = process.wait()
    if code != 0:
        raise typer.Exit(code)
