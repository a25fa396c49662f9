"""The `groundhog` command line: servers, tapes, worker environments, the benchmark.

    groundhog up                                   # resolver + proxy on ./.groundhog
    groundhog tape open demo --seed 7
    groundhog tape fork demo --children 4
    groundhog run --tape demo --branch root/b0 --shim -- python rollout.py
    groundhog tape report demo

Typer builds the help from the command functions, which live in cli_servers, cli_tape and
cli_worker; this module only assembles them and the root options.
"""

from __future__ import annotations

from typing import Annotated

import typer

from groundhog import cli_migrate, cli_servers, cli_worker
from groundhog.cli_common import CliSettings
from groundhog.cli_tape import tape_app

app = typer.Typer(
    name="groundhog",
    help=(
        "Groundhog records the outside world once and serves every branch of an RL fork the "
        "same exogenous noise. Start with `groundhog up`, then `groundhog tape open NAME`."
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


@app.callback()
def root(
    ctx: typer.Context,
    resolver_url: Annotated[
        str | None,
        typer.Option(
            envvar="GROUNDHOG_RESOLVER_URL",
            help="The resolver's admin API (default http://127.0.0.1:8070).",
        ),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(envvar="GROUNDHOG_ADMIN_TOKEN", help="Bearer token for the admin API."),
    ] = None,
    proxy_url: Annotated[
        str | None,
        typer.Option(
            envvar="GROUNDHOG_PROXY_URL",
            help="The proxy workers use (default http://127.0.0.1:8080).",
        ),
    ] = None,
) -> None:
    """Options that apply to every command talking to the resolver."""
    ctx.obj = CliSettings(resolver_url=resolver_url, token=token, proxy_url=proxy_url)


app.command(rich_help_panel="Servers")(cli_servers.up)
app.command(rich_help_panel="Servers")(cli_servers.resolver)
app.command(rich_help_panel="Servers")(cli_servers.proxy)
app.command(rich_help_panel="Servers")(cli_servers.worldsim)
app.command(
    rich_help_panel="Servers",
    add_help_option=False,  # `groundhog bench --help` shows the benchmark's own options
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)(cli_servers.bench)
app.command(rich_help_panel="Servers")(cli_migrate.migrate)
app.add_typer(tape_app, name="tape", rich_help_panel="Tapes")
app.command(rich_help_panel="Workers")(cli_worker.env)
app.command(rich_help_panel="Workers")(cli_worker.run)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
