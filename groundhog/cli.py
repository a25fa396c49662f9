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

from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:  # typer's vendored click and parameter base exist from typer 0.29 only
    from typer import _click
    from typer.core import _TyperParameter

from groundhog import (
    cli_catalog,
    cli_coercion,
    cli_inspect,
    cli_migrate,
    cli_rules,
    cli_servers,
    cli_worker,
)
from groundhog.cli_common import CliSettings
from groundhog.cli_dataset import tape_app  # cli_tape's, with verify and publish added

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


DISTRIBUTION = "groundhog-rl"


def _print_version(value: bool) -> None:
    if not value:
        return
    from importlib.metadata import PackageNotFoundError, version

    try:
        number = version(DISTRIBUTION)
    except PackageNotFoundError:  # run from a source tree that was never installed
        number = "unknown (not installed)"
    typer.echo(f"groundhog {number}")
    raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    show_version: Annotated[
        bool,
        typer.Option(
            "--version",
            is_eager=True,
            callback=_print_version,
            help="Print the installed version and exit.",
        ),
    ] = False,
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
cli_inspect.register(tape_app)
cli_rules.register(tape_app)
app.add_typer(tape_app, name="tape", rich_help_panel="Tapes")
app.command(rich_help_panel="Tapes")(cli_catalog.catalog)
app.command(rich_help_panel="Workers")(cli_worker.env)
# Options end at the command: `groundhog run --tape T python3 -c ...` hands `-c` to python3 (it
# was refused as an option of `run`), and `--` before the command still works.
app.command(rich_help_panel="Workers", context_settings={"allow_interspersed_args": False})(
    cli_worker.run
)


def _plain_type_label(self: _TyperParameter, ctx: _click.Context) -> str | None:
    """TEXT / INTEGER / PATH, and nothing for a flag, instead of `<str>` / `<bool>` / `<list[str]>`.

    Typer 0.29 labels every parameter with its Python annotation, which reads as a placeholder
    to fill in; click's type names are what command-line users expect. It replaces a method, so
    its first parameter is `self`, of the class both patched methods are declared on.
    """
    if getattr(self, "is_flag", False) or getattr(self, "count", False):
        return None
    if getattr(self, "param_type_name", "") == "option" and self.metavar is not None:
        return str(self.metavar)
    label = str(self.display_type(ctx)).strip("<>")
    repeated = label.startswith("list[")
    if repeated:
        label = label.removeprefix("list[").removesuffix("]")
    label = _TYPE_LABELS.get(label, label.upper() if label.isidentifier() else label)
    return f"{label}..." if repeated or self.nargs != 1 else label


_TYPE_LABELS = {
    "str": "TEXT",
    "int": "INTEGER",
    "float": "FLOAT",
    "Path": "PATH",
    "bool": "BOOLEAN",
}


# Typer has no hook for its type labels, so the method is replaced; mypy flags any assignment to
# a method, however well the types match.
typer.core.TyperOption.display_type_rich = _plain_type_label  # type: ignore[method-assign]
typer.core.TyperArgument.display_type_rich = _plain_type_label  # type: ignore[method-assign]


cli_coercion.install()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
