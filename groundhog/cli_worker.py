"""`groundhog env` and `groundhog run`: make a shell or a command a worker of one branch.

A worker is an ordinary process with the right environment; printing the exports (`env`) or
setting them for one command (`run`) avoids hand-written proxy URLs with un-encoded branch
paths, which would silently record under the wrong branch.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Annotated

import typer

from groundhog import capture_net
from groundhog.capture_net import Loopback
from groundhog.capture_registry import (
    CAPTURE_DIR_ENV,
    DEFAULT_CAPTURE_DIR,
    RegistryError,
    sidecar,
)
from groundhog.capture_run import run_captured
from groundhog.cli_common import console, fail, print_json, reporting, settings_of
from groundhog.worker_env import shell_exports

SITECUSTOMIZE_DIR = Path(__file__).resolve().parent / "sitecustomize_dir"
PACKAGE_ROOT = Path(__file__).resolve().parent.parent

TapeOption = Annotated[str, typer.Option("--tape", help="The tape to record on.")]
BranchOption = Annotated[str, typer.Option("--branch", help="The branch path, e.g. root/b0.")]
NoProxy = Annotated[
    list[str] | None,
    typer.Option("--no-proxy", help="A host that bypasses the proxy, e.g. the model server."),
]


def branch_env(
    ctx: typer.Context, tape: str, branch: str, no_proxy: list[str] | None
) -> dict[str, str]:
    with reporting(), settings_of(ctx).client() as client:
        return client.tape(tape).branch(branch).env(no_proxy=no_proxy)


def env(
    ctx: typer.Context,
    tape: TapeOption,
    branch: BranchOption = "root",
    no_proxy: NoProxy = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON object instead.")] = False,
) -> None:
    """Print the exports for a worker of one branch: eval "$(groundhog env --tape T)"."""
    exports = branch_env(ctx, tape, branch, no_proxy)
    if as_json:
        print_json(exports)
    else:
        console.print(shell_exports(exports), markup=False, soft_wrap=True)


def shim_env(base: dict[str, str]) -> dict[str, str]:
    """PYTHONPATH and flags so a Python worker installs the shim at start-up."""
    python_path = [str(SITECUSTOMIZE_DIR)]
    if base.get("PYTHONPATH"):
        python_path.append(base["PYTHONPATH"])
    return {
        "PYTHONPATH": os.pathsep.join(python_path),
        "GROUNDHOG_SHIM": "1",
        "GROUNDHOG_PACKAGE_ROOT": str(PACKAGE_ROOT),
    }


def run(
    ctx: typer.Context,
    command: Annotated[list[str], typer.Argument(help="The command, after `--`.")],
    tape: TapeOption,
    branch: BranchOption = "root",
    shim: Annotated[
        bool, typer.Option("--shim", help="Key time/random/uuid in a Python command.")
    ] = False,
    no_proxy: NoProxy = None,
    capture: Annotated[
        bool,
        typer.Option(
            "--capture",
            help="Run CMD in a network namespace whose every connection goes through the "
            "sidecar (no proxy variables needed; needs root).",
        ),
    ] = False,
    capture_dir: Annotated[
        Path,
        typer.Option(
            "--capture-dir",
            envvar=CAPTURE_DIR_ENV,
            help="The sidecar's capture directory (the proxy's --capture-dir).",
        ),
    ] = DEFAULT_CAPTURE_DIR,
    loopback: Annotated[
        Loopback,
        typer.Option(
            "--loopback",
            help="With --capture: where CMD's 127.0.0.0/8 goes. local: its own loopback (a "
            "server it starts itself); sidecar: through the proxy to the sidecar machine's "
            "loopback (a world listening there).",
        ),
    ] = Loopback.LOCAL,
) -> None:
    """Run a command as a worker of one branch: groundhog run --tape T --branch B -- CMD."""
    if capture:
        # Checked before the resolver is asked anything: never a silent uncaptured run.
        try:
            capture_net.check_privileges()
            sidecar(capture_dir)
        except (capture_net.CaptureUnavailable, RegistryError) as error:
            raise fail(str(error)) from None
    environment = {**os.environ, **branch_env(ctx, tape, branch, no_proxy)}
    if shim:
        environment.update(shim_env(environment))
    try:
        if capture:
            status = run_captured(
                command,
                environment,
                tape=tape,
                branch=branch,
                capture_dir=capture_dir,
                loopback=loopback,
            )
        else:
            status = subprocess.run(command, env=environment, check=False).returncode
    except FileNotFoundError:
        raise fail(f"command not found: {command[0]}") from None
    except PermissionError:
        raise fail(f"not executable: {command[0]}") from None
    except (capture_net.CaptureUnavailable, RegistryError) as error:
        raise fail(str(error)) from None
    raise typer.Exit(status)
