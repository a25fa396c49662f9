"""`groundhog tape verify` and `groundhog tape publish`: a tape proven to replay, shared as data.

Kept apart from cli_tape (the tape's everyday admin) because these two check and package a
finished recording; Parquet writing is imported only when `publish` runs, so the worker-side
CLI starts without pyarrow.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from groundhog.cli_common import console, fail, print_json, reporting, settings_of
from groundhog.cli_tape import JsonFlag, TapeName, tape_app

__all__ = ["tape_app"]

DATASETS_HINT = "publishing writes Parquet: pip install 'groundhog-rl[datasets]'"


def print_verification(result: dict[str, Any]) -> None:
    """The per-branch summary and, on failure, the first mismatch with its address.

    Every value from the tape is escaped: rich would read `[sandbox]` in a reason as markup
    and print nothing where `--json` shows it."""
    table = Table("branch", "asks", "replayed", "matched", "skipped", "shim resumes", "ok")
    for branch in result.get("branches", []):
        table.add_row(
            escape(branch["branch"]),
            str(branch["asks"]),
            str(branch["replayed"]),
            str(branch["matched"]),
            str(branch["skipped"]),
            "yes" if branch["shim_counters_resume"] else "NO",
            "ok" if branch["ok"] else "[red]FAILED[/]",
        )
    console.print(table)
    console.print(f"connections towards the world: {result['live_connections']}")
    if result.get("problem"):
        console.print(f"[red]problem:[/] {escape(result['problem'])}")
    mismatch = result.get("first_mismatch")
    if mismatch:
        text = (
            f"branch {mismatch['branch']} event {mismatch['seq']}: "
            f"{mismatch['method']} {mismatch['url']}\n"
            f"  address: key {mismatch['key']!r}, occurrence {mismatch['occurrence']}, "
            f"fingerprint {mismatch['fingerprint']!r} (exchange {mismatch['exchange_id']})\n"
            f"  {mismatch['reason']}"
        )
        console.print(f"[red]first mismatch:[/] {escape(text)}")


@tape_app.command("verify")
def verify(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The tape's name, or a published dataset folder.")],
    as_json: JsonFlag = False,
) -> None:
    """Replay every branch of a sealed copy with the world closed; fail on any difference.

    Given a dataset folder, first check it whole (card, SQLite file and Parquet tables agree),
    then import its SQLite file under a temporary name, verify that, and remove it."""
    folder = Path(name)
    with reporting(), settings_of(ctx).client() as client:
        result = _verify_folder(client, folder) if folder.is_dir() else client.verify(name)
    if as_json:
        print_json(result)
    else:
        print_verification(result)
    if not result["ok"]:
        raise fail(f"tape {name} does not replay as recorded")
    console.print(f"verified {name}: every branch replays byte for byte, world closed")


def _verify_folder(client: Any, folder: Path) -> dict[str, Any]:
    from groundhog.dataset.folder import FolderError
    from groundhog.dataset.folder_check import check_folder

    try:
        export = check_folder(folder)
    except FolderError as error:
        raise fail(str(error)) from None
    temporary = f"verify-{uuid.uuid4().hex[:12]}"
    client.import_tape(export, temporary)
    try:
        return dict(client.verify(temporary))
    finally:
        client.delete_tape(temporary)


@tape_app.command("publish")
def publish(
    ctx: typer.Context,
    name: TapeName,
    folder: Annotated[Path, typer.Argument(help="The dataset folder to write (new or empty).")],
    allow_unscrubbed: Annotated[
        bool,
        typer.Option(
            "--allow-unscrubbed",
            help="Publish even if the secrets audit has findings or the resolver has no audit.",
        ),
    ] = False,
    push_to_hub: Annotated[
        str | None,
        typer.Option("--push-to-hub", help="Also upload the folder to this Hugging Face repo."),
    ] = None,
) -> None:
    """Verify and audit a tape, then write it as a dataset folder (SQLite, Parquet, card)."""
    try:
        from groundhog.dataset.publish import NotVerified
        from groundhog.dataset.publish import publish as publish_folder
    except ImportError as error:
        raise fail(f"{DATASETS_HINT} ({error})") from None
    from groundhog.dataset.audit_gate import AuditRefused
    from groundhog.dataset.hub import HubUnavailable
    from groundhog.dataset.hub import push_to_hub as upload

    with reporting(), settings_of(ctx).client() as client:
        try:
            done = publish_folder(client, name, folder, allow_unscrubbed=allow_unscrubbed)
        except NotVerified as error:
            print_verification(error.verification)
            raise fail(str(error)) from None
        except (AuditRefused, FileExistsError) as error:
            raise fail(str(error)) from None
    console.print(
        f"published {name} to {folder}: {done.counts.exchanges} exchanges, "
        f"{done.counts.events} events, digest {done.digest}; audit: {done.audit.summary}"
    )
    if push_to_hub:
        try:
            url = upload(folder, push_to_hub)
        except HubUnavailable as error:
            raise fail(str(error)) from None
        console.print(f"uploaded to {url}")
