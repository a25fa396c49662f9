"""`groundhog catalog`: the shipped read/write catalog of well-known tool APIs (engine/catalog).

A user deciding whether their search API's POSTs will be shared needs to see what Groundhog
believes about it, and the documentation each belief was written from, without a server.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from groundhog.cli_common import console, print_json


def catalog(
    as_json: Annotated[bool, typer.Option("--json", help="Print the raw JSON.")] = False,
) -> None:
    """List the tool endpoints Groundhog knows read or write (applied under closure and rules).

    A tape switches entries off or overrides them with its `catalog` setting
    (`{"entries": {"tavily-search": "off"}}`); chat-completion entries apply only to hosts it
    names in `catalog.world_model_hosts`.
    """
    from engine.catalog import shipped

    entries = shipped()
    if as_json:
        print_json([entry.as_json() for entry in entries])
        return
    table = Table("id", "host", "operation", "kind", "query", "noise", "credential")
    table.add_column("docs", overflow="fold")
    for entry in entries:
        kind = f"{entry.kind} (world model)" if entry.world_model else str(entry.kind)
        table.add_row(
            entry.id,
            "\n".join(entry.hosts),
            "\n".join(f"{entry.method} {path}" for path in entry.paths),
            kind,
            ", ".join(entry.query),
            ", ".join(entry.noise) or "-",
            entry.credential,
            entry.docs,
        )
    console.print(table)
