"""A recorded body served in a content coding the asker accepts (DESIGN §3, Request key).

`Accept-Encoding` is not in the request key: curl, urllib, requests, httpx and Node each send
their own (or none), and keying it split one world's answers by client library. So the answer
one client's request recorded (say gzip) may be served to a client that said it takes only
`identity`: that asker gets the body decoded, its `Content-Encoding` removed and its
`Content-Length` set, never bytes it cannot read. An asker that sent no `Accept-Encoding` takes
any coding (RFC 9110 §12.5.3) and gets the recorded bytes as they are, as does one that accepts
the recorded coding. A coding that cannot be decoded is served as recorded, unchanged.
"""

from __future__ import annotations

import logging

from mitmproxy import http

log = logging.getLogger(__name__)


def accepted_codings(header: str) -> tuple[set[str], bool]:
    """The codings an `Accept-Encoding` value accepts (q > 0), and whether `*` does."""
    accepted: set[str] = set()
    refused: set[str] = set()
    for part in header.split(","):
        coding, _, parameters = part.strip().partition(";")
        coding = coding.strip().lower()
        if not coding:
            continue
        quality = 1.0
        for parameter in parameters.split(";"):
            name, _, value = parameter.strip().partition("=")
            if name.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        (accepted if quality > 0 else refused).add(coding)
    return accepted, "*" in accepted


def accepts(header: str | None, coding: str) -> bool:
    if header is None:
        return True
    accepted, anything = accepted_codings(header)
    aliases = {coding, "x-" + coding if not coding.startswith("x-") else coding[2:]}
    return anything or bool(aliases & accepted)


def serve_in_accepted_coding(request: http.Request, response: http.Response) -> None:
    """Decode `response`'s body in place when the asker does not accept its coding."""
    recorded = response.headers.get("content-encoding", "").strip().lower()
    if not recorded or recorded == "identity" or not response.raw_content:
        return
    wanted = request.headers.get("accept-encoding")
    codings = [coding.strip() for coding in recorded.split(",") if coding.strip()]
    if all(accepts(wanted, coding) for coding in codings):
        return
    try:
        response.decode(strict=True)
    except ValueError as error:
        log.warning("served %s as recorded: cannot decode it (%s)", recorded, error)
