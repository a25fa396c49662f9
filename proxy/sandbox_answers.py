"""An answer from the tape, made the asker's own: its session, its JSON-RPC ids.

A recorded answer is one branch's bytes; the resolver keys it without protocol noise (the
JSON-RPC `id`) and without sandbox identity (`Mcp-Session-Id`, tape-named headers), which the
store keeps as a marker (engine/sandbox_identity.py). Served as stored, a sibling would get a
response whose `id` matches none of its pending calls and a session header naming another
branch's sandbox: the MCP client drops the answer or switches sessions. So every answer served
from the tape gets the asker's own values back: a marked header takes the value the asker sent
(or, when it sent none — a sealed replay of `initialize` — one minted for its branch and
occurrence), a stored `Set-Cookie` (a placeholder of another branch's cookie) is not handed on
by a read (a replayed write, the branch's own lineage's recorded answer, keeps it: the asker's
later requests carry the placeholder, which keys as the recorded cookie did), and
each JSON-RPC response (a JSON body, a batch, every SSE event) takes the id of the asker's
call. The live answer of a read the recorder asked for gets the same treatment from its stored
form. Cheap unless the request is a JSON-RPC candidate; nothing here parses other bodies.

`names_foreign_session` is the recording side's guard: an answer that names a session the asker
does not hold (another session's header, or `404` for the session it sent) belongs to that
branch alone and is never recorded for others.
"""

from __future__ import annotations

import json
from typing import Any

from mitmproxy import http

from engine.sandbox_identity import own_sandbox_fields
from groundhog.protocol.surrogates import served_with_surrogates

SESSION_HEADER = "mcp-session-id"
_JSONRPC = b'"jsonrpc"'
ISSUED_MARK = b"[redacted:issued."


def restore_sandbox_headers(
    request: http.Request,
    response: http.Response,
    tape: str,
    branch: str,
    *,
    occurrence: int | None = None,
    replayed_write: bool = False,
) -> None:
    """The answer's headers made the asker's own, in place (engine/sandbox_identity.py
    `own_sandbox_fields`: marked headers take the asker's values, a stored `Set-Cookie` is
    left out of a read)."""
    restored = own_sandbox_fields(
        response.headers.fields,
        request.headers.get,
        tape,
        branch,
        occurrence=occurrence,
        replayed_write=replayed_write,
    )
    if restored is not None:
        response.headers.fields = restored


def request_ids(request: http.Request) -> list[Any] | None:
    """The ids of the asker's JSON-RPC calls in order (notifications skipped), or None when the
    request is not JSON-RPC (the common case, decided without parsing)."""
    body = request.raw_content or b""
    if (
        request.method != "POST"
        or _JSONRPC not in body
        or body[:64].lstrip()[:1] not in (b"{", b"[")
    ):
        return None
    try:
        document = json.loads(request.get_content(strict=False) or b"")
    except ValueError:
        return None
    calls = document if isinstance(document, list) else [document]
    return [call["id"] for call in calls if isinstance(call, dict) and "id" in call]


def _with_ids(message: Any, ids: list[Any], position: list[int]) -> tuple[Any, bool]:
    """`message` (one response or a batch of them) with the asker's ids, in order."""
    if isinstance(message, list):
        changed = False
        items = []
        for item in message:
            item, item_changed = _with_ids(item, ids, position)
            items.append(item)
            changed = changed or item_changed
        return items, changed
    answers = (
        isinstance(message, dict)
        and "id" in message
        and ("result" in message or "error" in message)
    )
    if not answers or position[0] >= len(ids):
        return message, False
    own = ids[position[0]]
    position[0] += 1
    if message["id"] == own:
        return message, False
    return {**message, "id": own}, True


def _rewritten_json(text: str, ids: list[Any], position: list[int]) -> str | None:
    try:
        message = json.loads(text)
    except ValueError:
        return None
    message, changed = _with_ids(message, ids, position)
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False) if changed else None


def _rewritten_sse(text: str, ids: list[Any]) -> str | None:
    position = [0]
    lines = text.split("\n")
    changed = False
    for index, line in enumerate(lines):
        if not line.startswith("data:"):
            continue
        data = line[5:].removeprefix(" ")
        ending = "\r" if data.endswith("\r") else ""
        new = _rewritten_json(data.removesuffix("\r"), ids, position)
        if new is not None:
            lines[index] = f"data: {new}{ending}"
            changed = True
    return "\n".join(lines) if changed else None


def restore_jsonrpc_ids(request: http.Request, response: http.Response) -> None:
    """Each JSON-RPC response in the answer carries the id of the asker's matching call."""
    ids = request_ids(request)
    if not ids:
        return
    content = response.get_content(strict=False)
    if not content:
        return
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError:
        return
    if "event-stream" in response.headers.get("content-type", "").lower():
        new = _rewritten_sse(text, ids)
    else:
        new = _rewritten_json(text, ids, [0])
    if new is not None:
        response.set_content(new.encode("utf-8"))


def restore_issued_tokens(response: http.Response, tape: str, branch: str) -> None:
    """Each credential the world issued, stored as an issued placeholder, becomes this branch's
    surrogate of it (groundhog/protocol/surrogates.py): the shape a client expects, keyed as the
    original when the branch presents it. The live value never reaches the tape or a sibling."""
    raw = response.raw_content or b""
    if ISSUED_MARK not in raw:
        return  # the common case; a body holding one is stored decoded (resolver/issued_tokens)
    text = raw.decode("utf-8", "surrogateescape")
    served = served_with_surrogates(text, tape, branch).encode("utf-8", "surrogateescape")
    response.raw_content = served
    if "content-length" in response.headers:
        response.headers["content-length"] = str(len(served))


def make_own(
    request: http.Request,
    response: http.Response,
    tape: str,
    branch: str,
    *,
    occurrence: int | None = None,
    replayed_write: bool = False,
) -> None:
    """A served answer with the asker's own session and ids."""
    restore_sandbox_headers(
        request, response, tape, branch, occurrence=occurrence, replayed_write=replayed_write
    )
    restore_issued_tokens(response, tape, branch)
    restore_jsonrpc_ids(request, response)


def answers_every_call(request: http.Request, response: http.Response, body: bytes) -> bool:
    """Whether an SSE answer so far holds, in complete events, a response to each of the
    request's JSON-RPC calls: all the server owed. The MCP client hangs up right then, often
    before the server ends the stream; without this the answer would count as a failure and
    every waiting sibling would call the world itself."""
    ids = request_ids(request)
    if not ids or "event-stream" not in response.headers.get("content-type", "").lower():
        return False
    text = body.decode("utf-8", "replace").replace("\r\n", "\n")
    complete, _, _rest = text.rpartition("\n\n")
    answered = []
    for line in complete.split("\n"):
        if line.startswith("data:"):
            try:
                message = json.loads(line[5:])
            except ValueError:
                continue
            messages = message if isinstance(message, list) else [message]
            answered += [m.get("id") for m in messages if isinstance(m, dict) and "id" in m]
    return all(call_id in answered for call_id in ids)


def names_foreign_session(request: http.Request, response: http.Response) -> bool:
    """Whether a live answer belongs to the asker's session alone (never to be shared)."""
    own = request.headers.get(SESSION_HEADER)
    named = response.headers.get(SESSION_HEADER)
    if own is None:
        return False
    return response.status_code == 404 or (named is not None and named != own)
