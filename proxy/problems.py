"""RFC 9457 problem+json responses that the proxy itself produces.

When the proxy cannot follow the normal path (no tape named, resolver unreachable, malformed
credentials) the worker must get a precise, machine-readable reason instead of a bare status
or, worse, a silent live call. Without this module each failure would invent its own format.
"""

from __future__ import annotations

import time
from typing import Any

from mitmproxy import http
from mitmproxy.net.http import status_codes

from groundhog.capture_registry import CapturedWorker
from groundhog.protocol.decisions import Decision
from groundhog.protocol.problems import MEDIA_TYPE as PROBLEM_CONTENT_TYPE
from groundhog.protocol.problems import problem_bytes
from proxy.wire import mark_response

IDENTITY_HELP = (
    "name the tape and branch in one of three ways: headers X-Groundhog-Tape and "
    "X-Groundhog-Branch; proxy credentials http://TAPE:BRANCH@proxy:port (branch URL-encoded); "
    "or the proxy's options groundhog_tape and groundhog_branch "
    "(groundhog proxy --tape TAPE --branch BRANCH)"
)


def problem_response(
    status: int,
    slug: str,
    title: str,
    detail: str,
    *,
    decision: Decision = Decision.REFUSED,
    **extras: Any,
) -> http.Response:
    now = time.time()
    content = problem_bytes(status, slug, title, detail, **extras)
    response = http.Response(
        http_version=b"HTTP/1.1",
        status_code=status,
        reason=status_codes.RESPONSES.get(status, "").encode("ascii"),
        headers=(
            (b"Content-Type", PROBLEM_CONTENT_TYPE.encode()),
            (b"Content-Length", str(len(content)).encode()),
        ),
        content=content,
        trailers=None,
        timestamp_start=now,
        timestamp_end=now,
    )
    # Most of the proxy's own answers forward nothing upstream; every answer names its decision.
    mark_response(response, decision=decision, occurrence=None, fingerprint=None)
    return response


def missing_identity(missing: str) -> http.Response:
    return problem_response(
        400,
        "missing-identity",
        "Tape or branch not named",
        f"this request names no {missing}; {IDENTITY_HELP}",
        missing=missing,
    )


def captured_identity(named: str, worker: CapturedWorker) -> http.Response:
    return problem_response(
        403,
        "captured-identity",
        "A captured worker cannot name another tape or branch",
        f"this request names {named}, but it comes from the captured worker at "
        f"{worker.address}, which runs as tape {worker.tape!r} branch {worker.branch!r}; "
        "its namespace is its identity: drop the X-Groundhog-* headers and proxy credentials",
    )


def bad_credentials(reason: str) -> http.Response:
    return problem_response(
        400,
        "bad-proxy-credentials",
        "Tape or branch not named as the proxy accepts",
        f"{reason}; {IDENTITY_HELP}",
    )


def resolver_unavailable(resolver_url: str, reason: str) -> http.Response:
    return problem_response(
        503,
        "resolver-unavailable",
        "Resolver unavailable",
        f"the resolver at {resolver_url} could not be asked ({reason}); nothing was forwarded "
        "upstream. Start the resolver or fix --resolver-url, then retry.",
        resolver_url=resolver_url,
    )


def resolver_protocol_error(resolver_url: str, reason: str) -> http.Response:
    return problem_response(
        502,
        "resolver-protocol-error",
        "Resolver answered something the proxy cannot use",
        f"the resolver at {resolver_url} answered unexpectedly ({reason}); nothing was forwarded",
        resolver_url=resolver_url,
    )


def upstream_failed(url: str, kind: str, message: str) -> http.Response:
    """The live call failed before any HTTP answer, and the resolver could not phrase it."""
    return problem_response(
        502,
        "upstream-failed",
        "Upstream failed before answering",
        f"the live call to {url} failed before the world answered ({kind}: {message}); "
        "nothing was recorded, the next ask tries again",
        decision=Decision.UPSTREAM_FAILED,
        kind=kind,
    )


def not_recorded(url: str, reason: str) -> http.Response:
    """A read went live but its answer is not on the tape: it must not be served."""
    return problem_response(
        503,
        "not-recorded",
        "Live answer not recorded",
        f"the live call to {url} happened, but its answer could not be recorded ({reason}); "
        "nothing was served so that every branch gets the same bytes. A retry is safe.",
    )


def forbidden_target(target: str, detail: str) -> http.Response:
    """A request for Groundhog's own endpoints (proxy/self_guard.py): nothing was forwarded."""
    return problem_response(403, "forbidden-target", "Target refused", detail, target=target)


def proxy_failed(hook: str, error: BaseException, *, world_called: bool) -> http.Response:
    """The proxy's own code failed on this flow (proxy/fail_closed.py): refused, not forwarded."""
    what = (
        "the live call happened, but its answer was not served"
        if world_called
        else "nothing was forwarded upstream"
    )
    return problem_response(
        502 if world_called else 500,
        "proxy-failed",
        "The proxy failed on this request",
        f"Groundhog's {hook} hook failed ({type(error).__name__}: {error}); {what}. The proxy "
        "log has the traceback.",
        hook=hook,
    )
