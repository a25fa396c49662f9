"""`groundhog tape …`: open, list, show, fork, report, seal, unseal, digest, export, import,
audit (verify and publish: cli_dataset).

The admin API is JSON over HTTP; these commands make it usable from a shell with readable
tables by default and `--json` for scripts.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table
from rich.tree import Tree

from groundhog.cli_audit import audit
from groundhog.cli_common import (
    console,
    errors,
    fail,
    print_json,
    reporting,
    settings_of,
    transfer_progress,
)
from groundhog.cli_costs import cost_table
from groundhog.dataset.folder import FolderError
from groundhog.dataset.folder_check import check_folder
from groundhog.models import BranchInfo, DecisionCounts, TapeInfo
from groundhog.protocol.report_notes import CANNOT_SEE, LIES

tape_app = typer.Typer(
    help="Create and inspect tapes (recorded worlds) on the resolver.", no_args_is_help=True
)

JsonFlag = Annotated[bool, typer.Option("--json", help="Print the raw JSON instead of a table.")]
TapeName = Annotated[str, typer.Argument(help="The tape's name.", show_default=False)]


def _as_json(value: Any) -> Any:
    """The server's shape: the known fields plus any it added (`extra`)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {**dataclasses.asdict(value), **getattr(value, "extra", {})}
    return value


def _tape_table(tapes: list[TapeInfo]) -> Table:
    table = Table("name", "seed", "mode", "online", "dependencies", "exchanges", "branches")
    for tape in tapes:
        table.add_row(
            tape.name,
            str(tape.world_seed),
            tape.mode,
            "online" if tape.online else "sealed",
            tape.dependency_model,
            str(tape.exchanges),
            str(tape.branches),
        )
    return table


def _load_config(config_file: Path | None) -> dict[str, Any]:
    if config_file is None:
        return {}
    try:
        document = json.loads(config_file.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise fail(f"cannot read --config {config_file}: {error}") from None
    if not isinstance(document, dict):
        raise fail(f"--config {config_file} must hold a JSON object of tape settings")
    return document


@tape_app.command("open")
def open_tape(
    ctx: typer.Context,
    name: TapeName,
    seed: Annotated[
        int | None, typer.Option("--seed", help="The world seed the shim keys on (default 0).")
    ] = None,
    mode: Annotated[
        str | None, typer.Option(help="naive, replay or groundhog (default groundhog).")
    ] = None,
    dependency_model: Annotated[
        str | None,
        typer.Option("--dependency-model", help="closure, path, rules or hints (default closure)."),
    ] = None,
    online: Annotated[
        bool | None,
        typer.Option(
            "--online/--sealed", help="Open it online (default) or sealed (no live calls)."
        ),
    ] = None,
    cooperative_host: Annotated[
        list[str] | None,
        typer.Option("--cooperative-host", help="A host that gets X-Groundhog-* (repeatable)."),
    ] = None,
    config_file: Annotated[
        Path | None,
        typer.Option("--config", help="JSON file of further settings (rules, redaction, …)."),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Create a tape, or show it if it exists with the same settings (only those given count)."""
    config = _load_config(config_file)
    if cooperative_host:
        config["cooperative_hosts"] = cooperative_host
    with reporting(), settings_of(ctx).client() as client:
        tape = client.open_tape(
            name,
            seed,
            mode=mode,
            online=online,
            dependency_model=dependency_model,
            **config,
        )
    if as_json:
        print_json(_as_json(tape))
    else:
        console.print(_tape_table([tape]))


@tape_app.command("ls")
def list_tapes(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """List the tapes on the resolver."""
    with reporting(), settings_of(ctx).client() as client:
        tapes = client.list_tapes()
    if as_json:
        print_json([_as_json(tape) for tape in tapes])
    elif not tapes:
        console.print("no tapes yet: create one with `groundhog tape open NAME --seed N`")
    else:
        console.print(_tape_table(tapes))


def _branch_tree(tape: TapeInfo, branches: list[BranchInfo]) -> Tree:
    by_path = {branch.path: branch for branch in branches}
    tree = Tree(f"[bold]{tape.name}[/] (seed {tape.world_seed}, {tape.mode})")

    def add(node: Tree, path: str) -> None:
        branch = by_path[path]
        child = node.add(f"{path}  [dim]{branch.events} events[/]")
        for name in sorted(branch.children):
            if name in by_path:
                add(child, name)

    for root in sorted(path for path, branch in by_path.items() if branch.parent is None):
        add(tree, root)
    return tree


@tape_app.command("show")
def show(ctx: typer.Context, name: TapeName, as_json: JsonFlag = False) -> None:
    """Show a tape's settings and its branch tree."""
    with reporting(), settings_of(ctx).client() as client:
        tape = client.get_tape(name)
        branches = client.list_branches(name)
    if as_json:
        print_json({"tape": _as_json(tape), "branches": [_as_json(b) for b in branches]})
        return
    console.print(_tape_table([tape]))
    console.print(_branch_tree(tape, branches))


@tape_app.command("fork")
def fork(
    ctx: typer.Context,
    name: TapeName,
    parent: Annotated[str, typer.Option(help="The branch to fork from.")] = "root",
    children: Annotated[int, typer.Option(help="How many children (named bN).")] = 2,
    child: Annotated[
        list[str] | None, typer.Option("--name", help="Name a child instead (repeatable).")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Fork a branch into children at its current state."""
    with reporting(), settings_of(ctx).client() as client:
        result = client.fork(name, parent, child or children, shim_counters=None, warn=False)
    for message in result.warnings:
        errors.print(f"[bold yellow]warning:[/] {escape(message)}", soft_wrap=True)
    if as_json:
        print_json(_as_json(result))
        return
    for path in result.branches:
        console.print(path)


def _counts_row(label: str, counts: DecisionCounts) -> list[str]:
    decisions = ", ".join(f"{k} {v}" for k, v in sorted(counts.decisions.items()) if v)
    return [
        label,
        str(counts.reads),
        str(counts.reads_shared),
        str(counts.live_calls),
        str(counts.lies),
        f"{counts.lie_rate:.3f}",
        str(counts.possibly_contaminated),
        decisions or "-",
    ]


@tape_app.command("report")
def report(ctx: typer.Context, name: TapeName, as_json: JsonFlag = False) -> None:
    """What each branch was served: shared reads, live calls, lies."""
    with reporting(), settings_of(ctx).client() as client:
        result = client.report(name)
    if as_json:
        print_json(_as_json(result))
        return
    table = Table(
        "branch", "reads", "shared", "live calls", "lies", "lie rate", "possibly contaminated",
        "decisions",
        title=f"{result.tape} ({result.mode})",
    )  # fmt: skip
    for path, counts in sorted(result.branches.items()):
        table.add_row(*_counts_row(path, counts))
    table.add_row(*_counts_row("[bold]total[/]", result.totals))
    console.print(table)
    if result.costs:
        console.print(cost_table(result.costs))
    for note in (LIES, CANNOT_SEE):
        console.print(note, style="dim", markup=False, soft_wrap=True)


@tape_app.command("seal")
def seal(ctx: typer.Context, name: TapeName) -> None:
    """Seal a tape: from now on a miss is refused (502), nothing goes live."""
    with reporting(), settings_of(ctx).client() as client:
        client.seal(name)
    console.print(f"sealed {name}: misses are refused, nothing goes live")


@tape_app.command("unseal")
def unseal(ctx: typer.Context, name: TapeName) -> None:
    """Unseal a tape: misses may be fetched live and recorded again."""
    with reporting(), settings_of(ctx).client() as client:
        client.unseal(name)
    console.print(f"unsealed {name}: misses are fetched live and recorded")


@tape_app.command("digest")
def digest(ctx: typer.Context, name: TapeName, as_json: JsonFlag = False) -> None:
    """Print the SHA-256 digest of a tape's content (equal for identical recordings)."""
    with reporting(), settings_of(ctx).client() as client:
        result = client.digest(name)
    if as_json:
        print_json(_as_json(result))
    else:
        # One line at any terminal width: scripts cut the digest from it (`cut -d' ' -f1`).
        line = f"{result.digest}  {result.tape} ({result.exchanges} exchanges)"
        console.print(line, markup=False, soft_wrap=True)


@tape_app.command("export")
def export(
    ctx: typer.Context,
    name: TapeName,
    destination: Annotated[Path, typer.Argument(help="Where to write the SQLite file.")],
    allow_unscrubbed: Annotated[
        bool,
        typer.Option(
            "--allow-unscrubbed", help="Export even when `tape audit` finds secrets in the tape."
        ),
    ] = False,
) -> None:
    """Export a tape to one standalone SQLite file (refused if `tape audit` finds secrets)."""
    with reporting(), settings_of(ctx).client() as client, transfer_progress() as progress:
        task = progress.add_task(f"export {name}", total=None)

        def advance(done: int, total: int | None) -> None:
            progress.update(task, completed=done, total=total)

        client.export_tape(name, destination, progress=advance, allow_unscrubbed=allow_unscrubbed)
    console.print(f"exported {name} to {destination}")


@tape_app.command("import")
def import_tape(
    ctx: typer.Context,
    source: Annotated[
        Path,
        typer.Argument(
            help="A file made by `groundhog tape export`, or a folder by `groundhog tape publish`."
        ),
    ],
    name: Annotated[str, typer.Option("--name", help="The new tape's name.")],
) -> None:
    """Import an exported SQLite file (or a published dataset folder) as a new tape."""
    if source.is_dir():
        try:
            source = check_folder(source)
        except FolderError as error:
            raise fail(str(error)) from None
    if not source.is_file():
        raise fail(f"{source} is not a file: give the path `groundhog tape export` wrote")
    conflict = f"choose another name: groundhog tape import {source} --name NEW_NAME"
    with (
        reporting({409: conflict}),
        settings_of(ctx).client() as client,
        transfer_progress() as progress,
    ):
        task = progress.add_task(f"import {source.name}", total=source.stat().st_size)

        def advance(done: int, total: int | None) -> None:
            progress.update(task, completed=done, total=total)

        tape = client.import_tape(source, name, progress=advance)
    console.print(f"imported {source} as {tape.name} ({tape.exchanges} exchanges)")


@tape_app.command("rm")
def remove(
    ctx: typer.Context,
    name: TapeName,
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask for confirmation.")] = False,
) -> None:
    """Delete a tape and everything recorded on it."""
    if not yes:
        typer.confirm(f"delete tape {name} and all its recordings?", abort=True)
    with reporting(), settings_of(ctx).client() as client:
        client.delete_tape(name)
    console.print(f"deleted {name}")


tape_app.command("audit")(audit)
