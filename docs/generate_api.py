"""Write docs/api.md, the HTTP API reference, from the resolver's own OpenAPI schema.

A hand-written reference drifts from the routes the day someone adds a parameter; generating it
from `create_app(...).openapi()` keeps one source of truth, and tests/docs/test_api_doc.py fails
when the committed page no longer matches the code.

    python docs/generate_api.py           # rewrite docs/api.md
    python docs/generate_api.py --check   # exit 1 if docs/api.md is stale
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
API_DOC = REPO_ROOT / "docs" / "api.md"
METHODS = ("get", "post", "put", "patch", "delete")

INTRO = """\
# HTTP API reference

Generated from the resolver's OpenAPI schema by `docs/generate_api.py`; do not edit by hand.
After changing a route, run `python docs/generate_api.py` (tests/docs/test_api_doc.py fails
while this page is stale). The live schema is at `GET /openapi.json`, and an interactive view
at `/docs`, on any running resolver.

- Everything under `/v1` speaks JSON. Errors are RFC 9457 `application/problem+json` with
  `type`, `title`, `status`, `detail` and extra fields naming what was wrong (422 for invalid
  input, listing each field; 404 for an unknown tape, branch or exchange; 409 for a conflict).
- With `GROUNDHOG_ADMIN_TOKEN` set, admin routes need `Authorization: Bearer <token>`; with
  `GROUNDHOG_PROXY_TOKEN` set, so do the internal routes (the proxy's token).
- The JSON shapes of the answers (tape, branch, report, events, exchange) are described in
  [internals.md](internals.md#the-admin-api-shapes); the words in them in
  [concepts.md](concepts.md).
- The tape viewer (`/ui`) serves HTML pages and is not part of this schema.
"""


# What each route is for, where its handler has no docstring of its own (the schema's summary
# is then only the function name). A route missing here still gets documented, by its summary.
PURPOSES = {
    ("get", "/healthz"): 'Liveness: `200 {"status": "ok"}` once the resolver is ready.',
    ("get", "/metrics"): "Prometheus metrics (text exposition format): decisions by type, live "
    "calls, single-flight waits, resolve latency, exchanges per tape.",
    ("get", "/v1/ca.pem"): "The proxy's interception CA certificate (PEM), created on first "
    "use; workers must trust it. The private key is never served.",
    ("get", "/v1/tapes"): 'Every tape: `{"tapes": [tape, …]}`.',
    ("post", "/v1/tapes"): "Open a tape: `201` creating it, `200` returning the existing one "
    "with the same config, `409` naming the fields that differ.",
    ("get", "/v1/tapes/{tape}"): "One tape: its config, exchange and branch counts.",
    ("delete", "/v1/tapes/{tape}"): "Delete a tape and everything on it (`204`).",
    ("post", "/v1/tapes/{tape}/seal"): "Seal the tape: misses are refused (`502` problem+json "
    "naming the address), nothing goes upstream.",
    ("post", "/v1/tapes/{tape}/unseal"): "Put the tape back online: misses are fetched live.",
    ("post", "/v1/tapes/{tape}/fork"): "Fork `parent` into children at its current state: "
    '`"children": 4` takes the next free `bN` names, a list names them; `201` with the new '
    "branch paths.",
    ("get", "/v1/tapes/{tape}/branches"): "Every branch: path, parent, children, fork point, "
    "event count, resource versions, shim counters.",
    ("get", "/v1/tapes/{tape}/branches/{branch}"): "One branch (path URL-encoded: `root%2Fb0`).",
    ("post", "/v1/resolve"): "Internal (proxy → resolver): serve this request from the tape, "
    "tell the proxy to forward it, or (answering at once) to wait on another asker; see "
    "internals.md.",
    ("post", "/v1/wait"): "Internal: long-poll an address another asker is fetching, until it "
    "is recorded (`serve`), its holder's claim lapses (`forward`) or the window ends (`wait`).",
    ("post", "/v1/renew"): "Internal: extend a forward ticket's single-flight claim while its "
    "fetch runs; `409` once the ticket no longer holds its address.",
    ("post", "/v1/record"): "Internal (proxy → resolver): record what upstream answered for a "
    "ticket; answers, only after the commit, the response the worker must be served.",
    ("get", "/v1/tapes/{tape}/exchanges/{exchange_id}"): "One recorded exchange: address, "
    "request and response (bodies base64, redacted as stored) or the upstream error.",
    ("get", "/v1/tapes/{tape}/report"): "Decision counts in total and per branch, with reads "
    "shared, live calls, upstream errors and failures, unrecorded live calls (listed), lies "
    "and the lie rate.",
    ("get", "/v1/tapes/{tape}/digest"): "SHA-256 over the tape's canonical content: equal for "
    "two recordings of the same world by the same workflow.",
    ("get", "/v1/tapes/{tape}/export"): "The tape as one standalone SQLite file "
    "(`application/vnd.sqlite3`).",
    ("post", "/v1/tapes/import"): "Import an exported tape (the file as the body) under "
    "`?name=`; `201` with the tape, whose digest equals the exported one's.",
}


def load_schema() -> dict[str, Any]:
    """The resolver's OpenAPI document, from an app on a throwaway store."""
    sys.path.insert(0, str(REPO_ROOT))
    from resolver.app import create_app
    from resolver.settings import load_settings

    with tempfile.TemporaryDirectory(prefix="groundhog-openapi-") as data:
        app = create_app(load_settings(data_dir=Path(data), admin_token=None, proxy_token=None))
        return app.openapi()


def _anchor(name: str) -> str:
    return name.lower()


def type_of(schema: dict[str, Any]) -> str:
    """A short readable type for a JSON schema fragment."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{_anchor(name)})"
    if "anyOf" in schema or "oneOf" in schema:
        return " \\| ".join(type_of(part) for part in schema.get("anyOf", schema.get("oneOf")))
    if "enum" in schema:
        return " \\| ".join(f"`{value}`" for value in schema["enum"])
    if "const" in schema:
        return f"`{schema['const']}`"
    kind = schema.get("type")
    if kind == "array":
        if "prefixItems" in schema:
            return "[" + ", ".join(type_of(item) for item in schema["prefixItems"]) + "]"
        return f"list of {type_of(schema.get('items', {}))}"
    if kind == "object":
        extra = schema.get("additionalProperties")
        return f"object of {type_of(extra)}" if isinstance(extra, dict) else "object"
    if kind is None:
        return "any"
    return str(kind) + (f" ({schema['format']})" if "format" in schema else "")


def constraints(schema: dict[str, Any]) -> str:
    words = []
    for key, label in (
        ("minimum", "≥"),
        ("exclusiveMinimum", ">"),
        ("maximum", "≤"),
        ("exclusiveMaximum", "<"),
        ("minLength", "length ≥"),
        ("maxLength", "length ≤"),
        ("pattern", "matches"),
    ):
        if key in schema:
            value = schema[key]
            words.append(f"{label} `{value}`" if key == "pattern" else f"{label} {value}")
    if "default" in schema:
        words.append(f"default `{_inline(schema['default'])}`")
    return "; ".join(words)


def _inline(value: Any) -> str:
    import json

    return json.dumps(value, sort_keys=True)


def _cell(text: str) -> str:
    return " ".join(text.replace("|", "\\|").split())


def _table(headings: list[str], rows: Iterable[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(headings) + " |", "|" + "---|" * len(headings)]
    lines += ["| " + " | ".join(_cell(cell) for cell in row) + " |" for row in rows]
    return lines


def _media(status: str, answer: dict[str, Any]) -> str:
    # The resolver renders every error as problem+json, whatever FastAPI's schema declares.
    if status[:1] in ("4", "5"):
        return "application/problem+json"
    return ", ".join(sorted(answer.get("content", {}))) or "—"


def _operation(path: str, method: str, operation: dict[str, Any]) -> list[str]:
    lines = [f"### `{method.upper()} {path}`", ""]
    summary = (
        operation.get("description")
        or PURPOSES.get((method, path))
        or operation.get("summary")
        or ""
    )
    if summary:
        lines += [summary.strip(), ""]
    parameters = operation.get("parameters", [])
    if parameters:
        rows = [
            [
                f"`{p['name']}`",
                p["in"],
                type_of(p.get("schema", {})),
                "yes" if p.get("required") else "no",
                constraints(p.get("schema", {})) or p.get("description", ""),
            ]
            for p in parameters
        ]
        lines += [*_table(["parameter", "in", "type", "required", "notes"], rows), ""]
    body = operation.get("requestBody")
    if body:
        for media, content in body.get("content", {}).items():
            lines += [f"Request body ({media}): {type_of(content.get('schema', {}))}", ""]
    responses = operation.get("responses", {})
    rows = [
        [
            status,
            answer.get("description", ""),
            _media(status, answer),
        ]
        for status, answer in responses.items()
    ]
    lines += [*_table(["status", "meaning", "media type"], rows), ""]
    return lines


def _schema(name: str, schema: dict[str, Any]) -> list[str]:
    lines = [f"### {name}", ""]
    if schema.get("description"):
        lines += [" ".join(schema["description"].split()), ""]
    if "enum" in schema:
        return [*lines, "One of " + ", ".join(f"`{v}`" for v in schema["enum"]) + ".", ""]
    required = set(schema.get("required", []))
    rows = [
        [
            f"`{field}`",
            type_of(spec),
            "yes" if field in required else "no",
            constraints(spec) or spec.get("description", ""),
        ]
        for field, spec in schema.get("properties", {}).items()
    ]
    return lines + _table(["field", "type", "required", "notes"], rows) + [""]


def render(schema: dict[str, Any]) -> str:
    """The whole page, deterministically (route order, then schemas by name)."""
    by_tag: dict[str, list[tuple[str, str, dict[str, Any]]]] = {}
    for path, item in schema.get("paths", {}).items():
        for method in METHODS:
            if method in item:
                tag = (item[method].get("tags") or ["other"])[0]
                by_tag.setdefault(tag, []).append((path, method, item[method]))
    info = schema.get("info", {})
    lines = [INTRO, f"API version {info.get('version', '?')} (OpenAPI {schema['openapi']}).", ""]
    lines += ["## Routes", ""]
    for tag, operations in by_tag.items():
        links = ", ".join(f"`{method.upper()} {path}`" for path, method, _ in operations)
        lines.append(f"- **{tag}**: {links}")
    lines.append("")
    for tag, operations in by_tag.items():
        lines += [f"## {tag}", ""]
        for path, method, operation in operations:
            lines += _operation(path, method, operation)
    lines += ["## Schemas", ""]
    for name, spec in sorted(schema.get("components", {}).get("schemas", {}).items()):
        lines += _schema(name, spec)
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Generate docs/api.md from the OpenAPI schema.")
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/api.md is stale")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    page = render(load_schema())
    if args.check:
        current = API_DOC.read_text() if API_DOC.exists() else ""
        if current != page:
            sys.stderr.write("docs/api.md is stale: run `python docs/generate_api.py`\n")
            return 1
        return 0
    API_DOC.write_text(page)
    return 0


if __name__ == "__main__":
    sys.exit(main())
