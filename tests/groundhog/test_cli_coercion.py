"""groundhog/cli_coercion.py: plain values skip pydantic; anything else keeps typer's own rules."""

from __future__ import annotations

from typing import Annotated

import pytest
import typer
from typer.testing import CliRunner

from groundhog import cli_coercion
from groundhog.cli_coercion import _NOT_PLAIN, _plain_value


@pytest.mark.parametrize(
    ("annotation", "value", "expected"),
    [
        (str, "root/b0", "root/b0"),
        (int, "12", 12),
        (int, " -3 ", -3),
        (int, 7, 7),
        (bool, True, True),
        (list[str], ("a", "b"), ["a", "b"]),
    ],
)
def test_plain_values_are_taken_as_they_are(
    annotation: object, value: object, expected: object
) -> None:
    assert _plain_value(annotation, value) == expected


@pytest.mark.parametrize(
    ("annotation", "value"),
    [(int, "abc"), (int, "1.5"), (int, True), (bool, "yes"), (list[str], ("a", 1)), (float, "1")],
)
def test_anything_else_goes_to_typer(annotation: object, value: object) -> None:
    assert _plain_value(annotation, value) is _NOT_PLAIN


def test_a_patched_typer_parses_as_before() -> None:
    cli_coercion.install()
    cli_coercion.install()  # idempotent: the second call patches nothing twice
    app = typer.Typer()
    seen: list[object] = []

    @app.command()
    def run(
        name: str,
        count: Annotated[int, typer.Option()] = 1,
        ratio: Annotated[float, typer.Option()] = 0.5,
        tag: Annotated[list[str] | None, typer.Option()] = None,
    ) -> None:
        seen.append((name, count, ratio, tag))

    runner = CliRunner()
    done = runner.invoke(app, ["x", "--count", "3", "--ratio", "2.5", "--tag", "a", "--tag", "b"])
    assert done.exit_code == 0, done.output
    assert seen == [("x", 3, 2.5, ["a", "b"])]
    bad = runner.invoke(app, ["x", "--count", "many"])
    assert bad.exit_code == 2 and "valid integer" in bad.output
