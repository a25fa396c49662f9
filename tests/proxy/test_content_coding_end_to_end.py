"""Accept-Encoding differences between clients do not split keys; each gets a coding it reads.

requests records a gzip answer (it asks `gzip, deflate`); on the sealed tape urllib (which asks
`identity`) is served the same recording, decoded, and curl (which asks nothing) the recorded
bytes. Before, `Accept-Encoding` was keyed and urllib's ask was a sealed miss.
"""

from __future__ import annotations

import gzip
import json

import requests

from tests.proxy.clients import CLIENTS, proxy_url, with_urllib
from tests.proxy.stack import Stack
from tests.proxy.upstream_server import GZIP_BODY, Upstream


def test_one_recording_serves_clients_with_different_accept_encodings(
    stack: Stack, upstream: Upstream
) -> None:
    tape = stack.open_tape()
    recorder, by_urllib, by_curl = stack.fork(tape, ["requests", "urllib", "curl"])
    proxies = {"http": proxy_url(stack.proxy.port, tape, recorder)}
    recorded = requests.get(f"{upstream.url}/gzip", proxies=proxies, timeout=30)
    assert recorded.json() == {"compressed": True}
    stack.seal(tape)
    identity = with_urllib(
        proxy_url(stack.proxy.port, tape, by_urllib), f"{upstream.url}/gzip", stack.ca, {}
    )
    assert identity.decision == "shared", identity
    assert json.loads(identity.body) == {"compressed": True}
    assert "content-encoding" not in identity.headers

    anything = CLIENTS["curl"](
        proxy_url(stack.proxy.port, tape, by_curl), f"{upstream.url}/gzip", stack.ca, {}
    )
    assert anything.decision == "shared" and anything.body == GZIP_BODY
    assert gzip.decompress(anything.body) == b'{"compressed": true}'
    assert upstream.state.count("/gzip") == 1
