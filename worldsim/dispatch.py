"""Turning raw requests into world calls: header parsing, routing, and the read dispatcher.

The HTTP routes, the in-process transport and the oracle must agree on what a request means
(which branch, which seed, which endpoint, which parameters) or their answers would drift
apart. This module is that single reading of a request; `render_read` is the pure function of
(corpus view, seed, request, occurrence) that every read goes through.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

import pydantic

from groundhog.protocol import headers as protocol_headers
from worldsim import corpus, render
from worldsim.errors import InvalidRequest, UnknownEndpoint

ROOT_BRANCH = "root"
BRANCH_PATTERN = re.compile(r"^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$")
MAX_BRANCH_LENGTH = 256
SEED_PATTERN = re.compile(r"^-?[0-9]{1,40}$")
OCCURRENCE_PATTERN = re.compile(r"^[0-9]{1,12}$")


class BriefIn(pydantic.BaseModel):
    """The JSON body of `POST /docs`."""

    model_config = pydantic.ConfigDict(extra="forbid", strict=True)

    id: str | None = pydantic.Field(default=None, pattern=corpus.BRIEF_ID_PATTERN.pattern)
    topic: str = pydantic.Field(min_length=1, max_length=64)
    title: str = pydantic.Field(min_length=1, max_length=200)
    body: str = pydantic.Field(default="", max_length=20_000)
    sources: list[pydantic.constr(min_length=1, max_length=64)] = pydantic.Field(  # type: ignore[valid-type]
        default_factory=list, max_length=20
    )


SESSION_PATTERN = re.compile(r"^s-[0-9a-f]{16}$")
PUBLIC_SANDBOX = "public"


def parse_session(raw: str) -> str:
    """The session token of an ``Authorization: Bearer <token>`` header (already stripped)."""
    token = raw.strip()
    if not SESSION_PATTERN.match(token):
        raise InvalidRequest(
            f"the bearer token {token[:24]!r} is not a session token (POST /sessions gives one)"
        )
    return token


def bearer(value: str | None) -> str | None:
    """The token of an Authorization header, or None when there is none."""
    if value is None:
        return None
    scheme, _, token = value.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise InvalidRequest("Authorization must be 'Bearer <session token>'")
    return token.strip()


def parse_branch(raw: str | None) -> str:
    if raw is None or raw == "":
        return ROOT_BRANCH
    dots = any(segment in (".", "..") for segment in raw.split("/"))
    if len(raw) > MAX_BRANCH_LENGTH or not BRANCH_PATTERN.match(raw) or dots:
        raise InvalidRequest(
            f"X-Groundhog-Branch {raw[:80]!r} is not a branch path: segments of letters, digits,"
            f" '.', '_' or '-' (not '.' or '..' alone) joined by '/', at most {MAX_BRANCH_LENGTH}"
            " characters"
        )
    return raw


def parse_int_header(name: str, raw: str | None, pattern: re.Pattern[str]) -> int | None:
    if raw is None:
        return None
    if not pattern.match(raw.strip()):
        kind = "a non-negative integer" if pattern is OCCURRENCE_PATTERN else "an integer"
        raise InvalidRequest(f"{name} must be {kind}, got {raw[:40]!r}")
    return int(raw.strip())


def endpoint_label(method: str, path: str) -> str:
    """The route a request hits, e.g. `GET /docs/{id}`; raises for anything else."""
    method = method.upper()
    if method == "GET" and path in ("/context", "/trends", "/search", "/review"):
        return f"GET {path}"
    if method == "GET" and path.startswith("/docs/") and "/" not in path[6:] and path[6:]:
        return "GET /docs/{id}"
    if method == "POST" and path == "/docs":
        return "POST /docs"
    if method == "POST" and path == "/sessions":
        return "POST /sessions"
    raise UnknownEndpoint(f"the world has no endpoint {method} {path}")


def _param(query: Sequence[tuple[str, str]], name: str) -> str:
    for key, value in query:
        if key == name and value.strip():
            return value
    raise InvalidRequest(f"query parameter {name!r} is required and must not be empty")


def render_read(
    view: corpus.CorpusView,
    seed: int,
    path: str,
    query: Sequence[tuple[str, str]],
    occurrence: int,
    *,
    epoch: int | None = None,
    call_weight: float = render.ATTENTION_CALL_WEIGHT,
) -> render.Rendered:
    """Render any GET endpoint: the pure function the oracle re-runs against other states.

    ``epoch`` is the slow state (the day); ``seed`` and ``occurrence`` the per-call noise.
    """
    label = endpoint_label("GET", path)
    key = render.request_key("GET", path, query, b"")
    if label == "GET /context":
        return render.render_context(seed, key, occurrence, epoch=epoch, call_weight=call_weight)
    if label == "GET /trends":
        return render.render_trends(seed, key, occurrence, epoch=epoch)
    if label == "GET /search":
        return render.render_search(view, seed, key, occurrence, _param(query, "q"))
    if label == "GET /review":
        return render.render_review(view, seed, key, occurrence, _param(query, "doc"))
    return render.render_doc(view, path[len("/docs/") :])


CLIENT_KEY_PATTERN = re.compile(r"^[A-Za-z0-9._-]{1,128}$")


def parse_session_request(body: bytes) -> tuple[int | None, str | None]:
    """The optional ``{"epoch": int, "client": str}`` body of `POST /sessions`.

    ``epoch`` is the day the session runs on (slow state); ``client`` an idempotency key: the
    same key on the same day names the same session, as many real APIs allow.
    """
    if not body.strip():
        return None, None
    try:
        data = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise InvalidRequest(f"the body is not valid JSON: {error}") from error
    if not isinstance(data, dict) or set(data) - {"epoch", "client"}:
        raise InvalidRequest('the body must be {"epoch": <int>, "client": <key>} or empty')
    epoch, client = data.get("epoch"), data.get("client")
    if epoch is not None and (type(epoch) is not int or not 0 <= epoch < 2**62):
        raise InvalidRequest("epoch must be a non-negative integer below 2**62")
    if client is not None and (not isinstance(client, str) or not CLIENT_KEY_PATTERN.match(client)):
        raise InvalidRequest("client must be 1-128 of A-Z a-z 0-9 . _ -")
    return epoch, client


def parse_brief(body: bytes) -> corpus.Brief:
    try:
        data = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise InvalidRequest(f"the body is not valid JSON: {error}") from error
    try:
        brief = BriefIn.model_validate(data)
    except pydantic.ValidationError as error:
        problems = [
            {"loc": [str(part) for part in item["loc"]], "msg": item["msg"]}
            for item in error.errors()
        ]
        raise InvalidRequest("the brief does not match its schema", {"errors": problems}) from error
    doc_id = brief.id or "brief-" + ("-".join(corpus.tokens(brief.topic))[:57] or "untitled")
    return corpus.Brief(doc_id, brief.topic, brief.title, brief.body, tuple(brief.sources))


def world_headers(headers: Mapping[str, str]) -> dict[str, str | None]:
    """The cooperative headers from any case-insensitive header mapping."""
    return {
        "branch": headers.get(protocol_headers.BRANCH.lower()),
        "seed": headers.get(protocol_headers.SEED.lower()),
        "occurrence": headers.get(protocol_headers.OCCURRENCE.lower()),
        "session": bearer(headers.get("authorization")),
    }
