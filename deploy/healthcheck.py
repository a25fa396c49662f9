"""Container health probe: exit 0 when a Groundhog server answers, 1 otherwise.

The runtime image is python:3.12-slim, which has no curl or wget, so Docker's HEALTHCHECK and
docker-compose's `healthcheck:` need a probe written in Python. Without it, `depends_on:
condition: service_healthy` could never be satisfied and the proxy would start before the
resolver it must ask.

Usage: `python healthcheck.py [TARGET]` where TARGET is an HTTP URL that must answer 200
(default: the resolver's `http://127.0.0.1:8070/healthz`) or `tcp://HOST:PORT`, which only has
to accept a connection (the proxy is ready when its port accepts connections). Proxy variables
in the environment are ignored on purpose: a worker container has HTTP_PROXY set, and a probe
of its own loopback must not travel through the proxy it is checking.
"""

from __future__ import annotations

import socket
import sys
import urllib.error
import urllib.parse
import urllib.request

DEFAULT_TARGET = "http://127.0.0.1:8070/healthz"
TIMEOUT_SECONDS = 4.0


def probe(target: str, *, timeout: float = TIMEOUT_SECONDS) -> tuple[bool, str]:
    """Check one target; answer (healthy, a line saying why)."""
    parsed = urllib.parse.urlsplit(target)
    if parsed.scheme == "tcp":
        if parsed.hostname is None or parsed.port is None:
            return (
                False,
                f"{target}: a tcp target needs a host and a port, e.g. tcp://127.0.0.1:8080",
            )
        try:
            with socket.create_connection((parsed.hostname, parsed.port), timeout=timeout):
                return True, f"{target}: accepting connections"
        except OSError as error:
            return False, f"{target}: {error}"
    if parsed.scheme not in ("http", "https"):
        return (
            False,
            f"{target}: unsupported scheme {parsed.scheme!r} (use http://, https://, tcp://)",
        )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(target, timeout=timeout) as response:
            status = response.status
    except urllib.error.HTTPError as error:
        return False, f"{target}: HTTP {error.code}"
    except (urllib.error.URLError, OSError) as error:
        return False, f"{target}: {error}"
    return status == 200, f"{target}: HTTP {status}"


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    target = arguments[0] if arguments else DEFAULT_TARGET
    healthy, reason = probe(target)
    # Docker keeps the probe's output in `docker inspect`; the line says why it failed.
    sys.stderr.write(reason + "\n")
    return 0 if healthy else 1


if __name__ == "__main__":
    sys.exit(main())
