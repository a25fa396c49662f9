"""Unit tests of groundhog/cli_common.py: root settings, failures and printed problems."""

from __future__ import annotations

import typer
from typer.testing import CliRunner

from groundhog.cli_common import CliSettings, fail, print_json, reporting, settings_of, show_problem
from groundhog.errors import GroundhogError, ResolverUnreachable

runner = CliRunner()


def _app(body: typer.models.CommandFunctionType) -> typer.Typer:
    app = typer.Typer()
    app.command()(body)

    @app.callback()
    def root() -> None:
        """Root."""

    return app


def test_settings_of_creates_and_keeps_one_settings_object() -> None:
    seen: list[CliSettings] = []

    def command(ctx: typer.Context) -> None:
        first = settings_of(ctx)
        first.resolver_url = "http://127.0.0.1:1"
        seen.extend([first, settings_of(ctx)])

    assert runner.invoke(_app(command), ["command"]).exit_code == 0
    assert seen[0] is seen[1] and seen[1].resolver_url == "http://127.0.0.1:1"


def test_settings_build_a_client_with_their_urls() -> None:
    settings = CliSettings("http://127.0.0.1:9/", token="t", proxy_url="http://127.0.0.1:8")
    with settings.client() as client:
        assert client.transport.url == "http://127.0.0.1:9"


def test_fail_prints_the_message_and_exits_with_its_code() -> None:
    def command() -> None:
        raise fail("the file is missing: pass --config PATH", code=2)

    result = runner.invoke(_app(command), ["command"])
    assert result.exit_code == 2
    assert "error: the file is missing: pass --config PATH" in result.stderr
    assert result.stdout == ""


def test_reporting_prints_a_problem_with_extras_and_exits_1() -> None:
    def command() -> None:
        with reporting():
            raise GroundhogError(
                409,
                "Conflict",
                "world_seed differs [not markup]",
                extras={"tape": "t", "fields": ["world_seed"]},
            )

    result = runner.invoke(_app(command), ["command"])
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert lines[0] == "error: 409 Conflict"
    assert lines[1] == "  world_seed differs [not markup]"
    assert "  tape: t" in lines and '  fields: ["world_seed"]' in lines
    assert "Traceback" not in result.output


def test_reporting_lets_other_errors_through() -> None:
    def command() -> None:
        with reporting():
            raise KeyError("not ours")

    result = runner.invoke(_app(command), ["command"])
    assert isinstance(result.exception, KeyError)


def test_a_local_problem_has_no_status_and_unreachable_is_one_line() -> None:
    def command(which: str) -> None:
        with reporting():
            if which == "local":
                raise GroundhogError(None, "Bad file", "")
            raise ResolverUnreachable("http://127.0.0.1:1", "refused")

    local = runner.invoke(_app(command), ["command", "local"])
    assert local.exit_code == 1 and local.stderr.strip() == "error: Bad file"
    unreachable = runner.invoke(_app(command), ["command", "down"])
    assert unreachable.exit_code == 1
    assert unreachable.stderr.startswith("error: cannot reach the resolver at http://127.0.0.1:1")
    assert len(unreachable.stderr.strip().splitlines()) == 1


def test_show_problem_and_print_json_write_to_their_streams() -> None:
    def command() -> None:
        print_json({"b": 1, "when": object.__new__(object).__class__})
        show_problem(GroundhogError(404, "Not found", "gone"))

    result = runner.invoke(_app(command), ["command"])
    assert result.exit_code == 0
    assert '"b": 1' in result.stdout and "<class 'object'>" in result.stdout
    assert "404 Not found" in result.stderr and "404" not in result.stdout
