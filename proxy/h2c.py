"""HTTP/2 with prior knowledge in the clear (h2c), as gRPC's insecure channels speak it.

mitmproxy decides HTTP/2 by TLS ALPN only; a cleartext connection is parsed as HTTP/1, so the
HTTP/2 connection preface (`PRI * HTTP/2.0`) reads as a request that mitmproxy's `DisableH2C`
kills: the client sees its connection reset and the tape logs nothing useful. This addon runs
after `NextLayer`: when the chosen layer is HTTP and the client's first bytes are the preface,
it marks the client side as `h2`, and each cleartext upstream connection that client's flows
open (`server_connect`) as `h2` too (the client's prior knowledge is of that server), so
mitmproxy's HTTP layer speaks HTTP/2 to both and every request is a flow the Groundhog addon
decides like any other — recorded, shared, refused on a sealed tape. Without it, h2c never
reaches Groundhog.
"""

from __future__ import annotations

import logging

from mitmproxy.proxy import layer, layers
from mitmproxy.proxy.server_hooks import ServerConnectionHookData

from proxy.fail_closed import fail_closed_hooks

log = logging.getLogger(__name__)

# The first line of the HTTP/2 connection preface: NextLayer picks HTTP once it has a line.
PREFACE_LINE = b"PRI * HTTP/2.0\r\n"


def starts_with_preface(data: bytes) -> bool:
    return data.startswith(PREFACE_LINE)


@fail_closed_hooks
class PriorKnowledgeH2:
    def next_layer(self, nextlayer: layer.NextLayer) -> None:
        if not isinstance(nextlayer.layer, layers.HttpLayer):
            return
        if not starts_with_preface(nextlayer.data_client()):
            return
        context = nextlayer.context
        if context.client.tls or context.client.alpn:
            return
        context.client.alpn = b"h2"
        log.debug("h2c with prior knowledge from %s", context.client.peername)

    def server_connect(self, data: ServerConnectionHookData) -> None:
        if data.client.alpn == b"h2" and not data.client.tls and not data.server.tls:
            data.server.alpn = b"h2"
