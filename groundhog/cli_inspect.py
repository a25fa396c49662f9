"""`groundhog tape diff` and `groundhog tape events`: why two branches differ, what one was served.

Without them the only way to find where two rollouts diverged is to click through the viewer
one address at a time, or to page `/v1/tapes/{t}/events` with curl. Registered on the `tape`
group by `groundhog.cli`; tables by default, `--json` for scripts.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

from groundhog.cli_common import console, print_json, reporting, settings_of
from groundhog.cli_tape import JsonFlag, TapeName, _as_json

Branch = Annotated[str, typer.Argument(help="A branch path, e.g. root/b0.", show_default=False)]


def _event_line(event: dict[str, Any] | None) -> str:
    if event is None:
        return "(asked nothing more)"
    where = f"{event['branch']} #{event['seq']}"
    return f"{where} {event['method']} {event['url']}  {event['decision']}"


def _request(item: dict[str, Any]) -> str:
    event = item["a"] or item["b"]
    return f"{event['method']} {event['url']} (occurrence {event['occurrence']})"


def _side(event: dict[str, Any] | None) -> str:
    if event is None:
        return "-"
    exchange = f" → #{event['exchange_id']}" if event["exchange_id"] is not None else ""
    return f"#{event['seq']} {event['decision']}{exchange}"


def _print_diff(diff: dict[str, Any]) -> None:
    a, b = diff["a"], diff["b"]
    console.print(
        f"[bold]A[/] {a}  vs  [bold]B[/] {b}: both inherit {diff['shared_prefix']} event(s) "
        f"of {diff['common']}; then A asked {diff['events']['a']}, B {diff['events']['b']}"
    )
    first = diff["first_divergence"]
    if first is None:
        console.print("no divergent request: both asked the same requests in the same order")
    else:
        console.print(f"first divergent request, {first['position'] + 1} after the split:")
        console.print(f"  A {_event_line(first['a'])}", markup=False, soft_wrap=True)
        console.print(f"  B {_event_line(first['b'])}", markup=False, soft_wrap=True)
    shared = Table("request", "A", "B", title=f"reads shared ({len(diff['reads_shared'])})")
    for item in diff["reads_shared"]:
        shared.add_row(_request(item), _side(item["a"]), _side(item["b"]))
    console.print(shared)
    not_shared = Table(
        "request", "A", "B", "why", "detail",
        title=f"reads not shared ({len(diff['reads_not_shared'])})",
    )  # fmt: skip
    for item in diff["reads_not_shared"]:
        not_shared.add_row(
            _request(item), _side(item["a"]), _side(item["b"]), item["why"], item["detail"]
        )
    console.print(not_shared)
    writes = Table("branch", "write", "why", title=f"writes ({len(diff['writes'])})")
    for item in diff["writes"]:
        event = item["event"]
        writes.add_row(
            item["side"], f"#{event['seq']} {event['method']} {event['url']}", item["why"]
        )
    console.print(writes)
    if diff["truncated"]:
        console.print("[yellow]cut: a branch has more events than the diff reads[/]")


def diff(
    ctx: typer.Context, name: TapeName, a: Branch, b: Branch, as_json: JsonFlag = False
) -> None:
    """Where two branches diverged: the first divergent request, then the reads they share and
    those they don't, with why (fingerprint, occurrence, write)."""
    with reporting(), settings_of(ctx).client() as client:
        result = client.diff(name, a, b)
    if as_json:
        print_json(result)
    else:
        _print_diff(result)


def events(
    ctx: typer.Context,
    name: TapeName,
    branch: Branch,
    after: Annotated[int, typer.Option(help="Show events after this seq (the page cursor).")] = 0,
    limit: Annotated[int, typer.Option(help="Events per page (1-1000).")] = 50,
    as_json: JsonFlag = False,
) -> None:
    """What one branch was served, in its order, one page at a time."""
    with reporting(), settings_of(ctx).client() as client:
        page, cursor = client.events(name, branch=branch, after=after, limit=limit)
    if as_json:
        print_json({"events": [_as_json(event) for event in page], "next_after": cursor})
        return
    table = Table(
        "seq", "method", "url", "decision", "occurrence", "fingerprint", "status", "exchange",
        title=f"{name} {branch}",
    )  # fmt: skip
    for event in page:
        table.add_row(
            str(event.seq), event.method, event.url, event.decision, str(event.occurrence),
            event.fingerprint[:12] or "-", str(event.status or "-"),
            "-" if event.exchange_id is None else f"#{event.exchange_id}",
        )  # fmt: skip
    console.print(table)
    if cursor is not None:
        console.print(f"more: groundhog tape events {name} {branch} --after {cursor}")


def register(tape_app: typer.Typer) -> None:
    tape_app.command("diff")(diff)
    tape_app.command("events")(events)
