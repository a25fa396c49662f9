"""What every `groundhog` command shares: consoles, the client, and how errors are shown.

A command that fails must say what went wrong and how to fix it, then exit 1 — never dump a
traceback at a newcomer. Every command that talks to the resolver goes through `reporting()`.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.markup import escape

from groundhog.errors import GroundhogError, ResolverUnreachable

if TYPE_CHECKING:
    from rich.progress import Progress

    from groundhog.client import Groundhog

# Where the store and the CA live unless --data or GROUNDHOG_DATA_DIR says otherwise.
DEFAULT_DATA = Path(".groundhog")

# No emoji codes: `:name:` in a URL or a tape name is text, and the code table costs ~30 ms of
# every command's start-up (bench/cli_speed.py).
console = Console(highlight=False, emoji=False)
errors = Console(stderr=True, highlight=False, emoji=False)


@dataclass
class CliSettings:
    """Root options (`groundhog --resolver-url … COMMAND`), kept on typer's context."""

    resolver_url: str | None = None
    token: str | None = None
    proxy_url: str | None = None

    def client(self) -> Groundhog:
        # Imported on use: `groundhog --help` and the server commands never pay for httpx.
        from groundhog.client import Groundhog

        return Groundhog(self.resolver_url, token=self.token, proxy_url=self.proxy_url)


def settings_of(ctx: typer.Context) -> CliSettings:
    root = ctx.find_root()
    if not isinstance(root.obj, CliSettings):
        root.obj = CliSettings()
    return root.obj


def fail(message: str, code: int = 1) -> typer.Exit:
    # The message is escaped: `[services]` or `[::1]` in it are text, not rich markup.
    errors.print(f"[bold red]error:[/] {escape(message)}", markup=True, soft_wrap=True)
    return typer.Exit(code)


def show_problem(error: GroundhogError) -> None:
    if isinstance(error, ResolverUnreachable):
        errors.print(f"[bold red]error:[/] {error.detail}", soft_wrap=True)
        return
    heading = f"{error.status} {error.title}" if error.status else error.title
    errors.print(f"[bold red]error:[/] {heading}", soft_wrap=True)
    if error.detail:
        errors.print(f"  {error.detail}", markup=False, soft_wrap=True)
    for key, value in error.extras.items():
        rendered = value if isinstance(value, str) else json.dumps(value)
        errors.print(f"  {key}: {rendered}", markup=False, soft_wrap=True)


@contextlib.contextmanager
def reporting(hints: dict[int, str] | None = None) -> Iterator[None]:
    """Turn client errors into a printed problem and exit code 1.

    `hints` maps an HTTP status to what a CLI user should do (the API's detail speaks of the
    HTTP request, not of this command's flags).
    """
    try:
        yield
    except GroundhogError as error:
        show_problem(error)
        hint = (hints or {}).get(error.status or 0)
        if hint:
            errors.print(f"  hint: {hint}", markup=False, soft_wrap=True)
        raise typer.Exit(1) from None


def print_json(document: Any) -> None:
    console.print_json(json.dumps(document, default=str))


def transfer_progress() -> Progress:
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TransferSpeedColumn,
    )

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeElapsedColumn(),
        console=errors,
        transient=False,
    )
