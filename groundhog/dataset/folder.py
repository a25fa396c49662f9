"""The layout of a published dataset folder, and the check `tape import DIR` makes of it.

One place names the files a dataset folder holds, so the writer (`tape publish`) and the reader
(`tape import DIR`) cannot drift apart. Standard library only: importing a folder back needs
only the SQLite export in it, not the Parquet tooling that wrote the tables.
"""

from __future__ import annotations

from pathlib import Path

from groundhog.errors import LocalProblem

SQLITE_NAME = "tape.sqlite3"
CARD_NAME = "README.md"
# Each table in its own directory: `load_dataset("parquet", data_dir=DIR/<table>)` loads one
# table (files of different schemas in one directory cannot load as one split).
TABLES = ("exchanges", "bodies", "events", "branches")


def table_file(folder: Path, table: str) -> Path:
    return folder / table / f"{table}.parquet"


class FolderError(LocalProblem, ValueError):
    """The folder is not a complete dataset written by `groundhog tape publish`."""

    title = "Not a dataset folder"


def checked_export(folder: Path) -> Path:
    """The folder's SQLite export, once every part of the dataset is there; else which is not."""
    missing = [SQLITE_NAME] if not (folder / SQLITE_NAME).is_file() else []
    missing += [
        str(table_file(folder, table).relative_to(folder))
        for table in TABLES
        if not table_file(folder, table).is_file()
    ]
    if missing:
        raise FolderError(
            f"{folder} is not a complete Groundhog dataset: missing {', '.join(missing)} "
            "(write it again with `groundhog tape publish TAPE DIR`)"
        )
    return folder / SQLITE_NAME
