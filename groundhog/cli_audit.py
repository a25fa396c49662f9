"""`groundhog tape audit TAPE`: where a tape's stored bytes still look like secrets.

A tape recorded before a redaction rule existed can hold a credential in its URLs, headers,
bodies or events; before it is exported or published, someone must be able to ask where, by
which rule, and never see the value. Exits 1 when there are findings, so a script can gate an
export or a publish on it.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from groundhog.cli_common import console, print_json, reporting, settings_of


def audit(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The tape's name.", show_default=False)],
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the raw JSON instead of a table.")
    ] = False,
) -> None:
    """Scan a tape's stored bytes for anything that still looks like a secret (exit 1 if so)."""
    with reporting(), settings_of(ctx).client() as client:
        result = client.audit(name)
    findings = result.get("findings") or []
    if as_json:
        print_json(result)
    elif not findings:
        console.print(f"{name}: clean, nothing on the tape looks like a secret")
    else:
        table = Table(title=f"{name}: {len(findings)} place(s) still look like secrets")
        for column in ("exchange", "where", "rule"):
            table.add_column(column)
        for finding in findings:
            table.add_row(str(finding.get("exchange")), finding["where"], finding["rule"])
        console.print(table)
        console.print(
            "re-record or re-import the tape (import scrubs it), or export with "
            "--allow-unscrubbed to carry these as they are"
        )
    if findings:
        raise typer.Exit(1)
