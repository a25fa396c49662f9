"""`groundhog tape rules T --from-openapi SPEC` (and `tape advise T`): rules a user need not type.

The import (groundhog/openapi_rules.py) judges every operation of an API's OpenAPI document;
this command shows the judgement, lists the POSTs inferred to read for the user to confirm
(`--accept-inferred`), and opens the tape with the rules under the `rules` model — or writes them
to a config file to review and open later (`--out`, then `tape open T --config FILE`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from groundhog.cli_common import console, errors, fail, reporting, settings_of
from groundhog.openapi_rules import Imported, OpenAPIError, import_openapi

TapeName = Annotated[str, typer.Argument(help="The tape's name.", show_default=False)]


def _parse_document(text: str, source: str) -> Any:
    """JSON, or else YAML (most published OpenAPI documents are YAML). PyYAML comes with the
    services install; a worker-side install without it is told what to do."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        import yaml
    except ImportError:
        raise fail(
            f"--from-openapi {source} is not JSON, and reading YAML needs PyYAML "
            "(`pip install pyyaml`, or convert it with `yq -o=json`)"
        ) from None
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise fail(f"--from-openapi {source} is neither JSON nor YAML: {error}") from None
    if not isinstance(document, dict):
        raise fail(f"--from-openapi {source} holds no OpenAPI document (not a mapping)")
    return document


def _load_document(source: str) -> Any:
    """The parsed document (JSON or YAML) of a file path or an http(s) URL."""
    if source.startswith(("http://", "https://")):
        import httpx

        try:
            answer = httpx.get(source, timeout=30, follow_redirects=True)
            answer.raise_for_status()
        except httpx.HTTPError as error:
            raise fail(f"cannot fetch --from-openapi {source}: {error}") from None
        text = answer.text
    else:
        try:
            text = Path(source).read_text(encoding="utf-8")
        except OSError as error:
            raise fail(f"cannot read --from-openapi {source}: {error}") from None
    return _parse_document(text, source)


def _judgement_table(imported: Imported, accepted: bool) -> Table:
    table = Table("method", "path", "operationId", "kind", "why", title=imported.origin)
    for operation in imported.operations:
        kind = operation.kind
        if operation.inferred:
            kind = "read (inferred, accepted)" if accepted else "write (inferred read: confirm)"
        table.add_row(
            operation.method, escape(operation.path), operation.operation_id, kind, operation.why
        )
    return table


def rules(
    ctx: typer.Context,
    name: TapeName,
    from_openapi: Annotated[
        str,
        typer.Option(
            "--from-openapi",
            metavar="SPEC",
            help="An OpenAPI 3.x document (JSON or YAML): a path or an http(s) URL.",
        ),
    ],
    server: Annotated[
        str | None,
        typer.Option(help="The API's base URL, when the document's servers[0] is not it."),
    ] = None,
    read_extension: Annotated[
        list[str] | None,
        typer.Option(
            "--read-extension",
            help="An x- extension whose operations read when set (repeatable), e.g. x-readonly.",
        ),
    ] = None,
    accept_inferred: Annotated[
        bool,
        typer.Option(
            "--accept-inferred",
            help="Make the POSTs the document's conventions mark as reads (listed) reads.",
        ),
    ] = False,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", help="Write the tape config to FILE (for `tape open T --config FILE`)."
        ),
    ] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="The new tape's world seed.")] = None,
) -> None:
    """Turn an API's OpenAPI document into the tape's rules (safe methods read)."""
    try:
        imported = import_openapi(
            _load_document(from_openapi), server=server, read_extensions=read_extension or ()
        )
    except OpenAPIError as error:
        raise fail(f"--from-openapi {from_openapi}: {error.detail}") from None
    console.print(_judgement_table(imported, accept_inferred))
    inferred = imported.inferred
    if inferred and not accept_inferred:
        errors.print(
            f"{len(inferred)} POST operation(s) look like reads by the document's conventions "
            "and stay writes until you confirm them: rerun with --accept-inferred (a wrong read "
            "rule serves stale answers after a write)",
            soft_wrap=True,
        )
    found = imported.rules(accept_inferred=accept_inferred)
    config = {"dependency_model": "rules", "rules": found}
    if out is not None:
        out.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        console.print(
            f"wrote {out}: open the tape with `groundhog tape open {name} --config {out}`"
        )
        return
    conflict = "the tape exists with other settings: write them with --out FILE and open a new tape"
    with reporting({409: conflict}), settings_of(ctx).client() as client:
        tape = client.open_tape(name, seed, dependency_model="rules", rules=found)
    console.print(f"tape {tape.name}: {len(found)} rules under the rules model")


def _advice_table(advice: dict[str, Any]) -> Table:
    table = Table("operation", "live calls", "could share", "verdict", "evidence")
    for item in advice.get("operations", []):
        verdict = "shareable" if item["shareable"] else f"keep a write: {item['why_not']}"
        table.add_row(
            escape(item["operation"]),
            str(item["live_calls"]),
            str(item["could_share"]),
            escape(verdict),
            escape("\n".join(item["evidence"])),
        )
    return table


def advise(
    ctx: typer.Context,
    name: TapeName,
    out: Annotated[
        Path | None, typer.Option("--out", help="Write the rules file to FILE instead of stdout.")
    ] = None,
) -> None:
    """Print the rules that would have shared what the tape's groups sent as writes.

    Nothing is applied: review the file, then open a tape with it
    (`groundhog tape open NEW --config FILE`). The evidence goes to stderr.
    """
    with reporting(), settings_of(ctx).client() as client:
        report = client.report(name)
    advice = report.advice
    if not advice:
        raise fail("the resolver's report has no advice section: upgrade the resolver")
    errors.print(_advice_table(advice))
    config = {"dependency_model": "rules", "rules": advice["rules"]}
    text = json.dumps(config, indent=2)
    if out is not None:
        out.write_text(text + "\n", encoding="utf-8")
        errors.print(f"wrote {out}: review it, then `groundhog tape open NEW --config {out}`")
        return
    typer.echo(text)


def register(tape_app: typer.Typer) -> None:
    tape_app.command("rules")(rules)
    tape_app.command("advise")(advise)
