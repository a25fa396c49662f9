"""`groundhog catalog` lists the shipped tool catalog, with no server running."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from engine.catalog import shipped
from groundhog.cli import app

runner = CliRunner()


def test_the_catalog_lists_every_entry_with_its_documentation() -> None:
    done = runner.invoke(app, ["catalog", "--json"])
    assert done.exit_code == 0, done.output
    listed = json.loads(done.output)
    assert [entry["id"] for entry in listed] == [entry.id for entry in shipped()]
    tavily = next(entry for entry in listed if entry["id"] == "tavily-search")
    assert tavily["hosts"] == ["api.tavily.com"] and tavily["kind"] == "read"
    assert tavily["docs"].startswith("https://docs.tavily.com/")


def test_the_table_names_world_model_entries() -> None:
    done = runner.invoke(app, ["catalog"], env={"COLUMNS": "250"})
    assert done.exit_code == 0, done.output
    assert "tavily-search" in done.output and "read (world model)" in done.output
