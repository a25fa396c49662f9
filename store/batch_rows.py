"""Many rows in one statement, read from one JSON parameter on both databases.

A lease holder ships a hundred hits at once (store/branch_leases.py), each an event row and a
counter upsert. Handed a list of parameter sets, psycopg sends them one protocol message per
row (a pipeline, but still a bind and an execute each), about 80 µs of resolver CPU per event,
and SQLAlchemy's many-row insert on SQLite costs about 50 µs per row in Python: the largest
cost a leased hit leaves on the shared resolver. One statement reading the rows from a JSON
array (`jsonb_to_recordset` on PostgreSQL, `json_each` on SQLite) costs one `json.dumps` in C
whatever the batch size. (One array per column, `unnest`, would be dumped element by element
in Python by psycopg, which costs more than the statement itself.) Without this module each
batched writer would build its rows' statement per dialect itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import JSON, Select, Table, bindparam, column, func, select
from sqlalchemy.dialects import postgresql
from sqlalchemy.sql.elements import ColumnElement

_ROWS = "batch_rows"


def batch_select(
    dialect: str,
    table: Table,
    columns: Sequence[str],
    constants: Mapping[str, ColumnElement[Any]] = {},
) -> Select[Any]:
    """A SELECT of the rows `rows_parameter` holds, `columns` in order (typed as `table`'s)
    and then `constants` (the same value in every row), for `INSERT … FROM SELECT`."""
    if dialect == "postgresql":
        typed = [column(name, table.c[name].type) for name in columns]
        rows = (
            func.jsonb_to_recordset(bindparam(_ROWS, type_=postgresql.JSONB))
            .table_valued(*typed)
            .render_derived(name="batch", with_types=True)
        )
        values: list[ColumnElement[Any]] = [rows.c[name] for name in columns]
    else:
        each = func.json_each(bindparam(_ROWS, type_=JSON)).table_valued("value", name="batch")
        values = [
            func.json_extract(each.c.value, f"$.{name}", type_=table.c[name].type)
            for name in columns
        ]
    return select(*values, *constants.values())


def rows_parameter(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> dict[str, Any]:
    """The parameter `batch_select(…, columns)` reads: the rows' `columns`, rows in order."""
    return {_ROWS: [{name: row[name] for name in columns} for row in rows]}
