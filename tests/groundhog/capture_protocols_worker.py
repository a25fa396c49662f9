"""A captured worker for tests/groundhog/test_capture_protocols.py: WebSocket and HTTP/2.

Run inside `groundhog run --capture` with no proxy variables, as one of:

    python capture_protocols_worker.py websocket URL MESSAGE...
    python capture_protocols_worker.py h2 BASE_URL LABEL

`websocket`: the real `websockets` client (its proxy support off: nothing to find anyway)
greets, sends each MESSAGE (`b:`-prefixed ones as binary) and collects what the server says
after each, as the proxied WebSocket tests do; `wss://` is verified against SSL_CERT_FILE, the
Groundhog CA `run` points it at. `h2`: httpx with `http2=True`, trusting that CA, reads
`/item`, writes `POST /write/LABEL` and reads `/item` again; before them curl (where
installed) reads `/curl` with `--http2`; each says which protocol its answer came over. Prints
one JSON line.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import ssl
import subprocess
import sys

import httpx
from websockets.sync.client import connect


def _trust() -> ssl.SSLContext:
    return ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])


def _shown(message: str | bytes) -> str:
    return message if isinstance(message, str) else "b:" + base64.b64encode(message).decode()


def websocket(url: str, said: list[str]) -> list[str]:
    heard: list[str] = []
    context = _trust() if url.startswith("wss:") else None
    with connect(url, ssl=context, proxy=None, open_timeout=30) as ws:
        heard.append(_shown(ws.recv(timeout=30)))
        for message in said:
            binary = message.startswith("b:")
            ws.send(message[2:].encode() if binary else message)
            heard.append(_shown(ws.recv(timeout=30)))
            if not binary:
                heard.append(_shown(ws.recv(timeout=30)))
    return heard


def _seen(response: httpx.Response) -> tuple[int, str, object]:
    return response.status_code, response.http_version, response.json()


def h2(base: str, label: str) -> dict[str, object]:
    answers: dict[str, object] = {}
    if shutil.which("curl"):
        # curl offers h2 before http/1.1 (httpx the other way round): HTTP/2 to the worker too.
        fetched = subprocess.run(
            ["curl", "-sS", "--http2", "--cacert", os.environ["SSL_CERT_FILE"], "--noproxy", "*",
             "-w", "\n%{http_version}", f"{base}/curl"],
            capture_output=True, text=True, check=True, timeout=60,
        )  # fmt: skip
        body, version = fetched.stdout.rsplit("\n", 1)
        answers["curl"] = [version, json.loads(body)]
    with httpx.Client(http2=True, verify=_trust(), trust_env=False, timeout=30) as client:
        answers["read"] = [*_seen(client.get(f"{base}/item"))]
        answers["write"] = [*_seen(client.post(f"{base}/write/{label}", content=label.encode()))]
        # After its own write, a branch's read of the world is fetched afresh.
        answers["reread"] = [*_seen(client.get(f"{base}/item"))]
    return answers


def main() -> None:
    kind, target, *rest = sys.argv[1:]
    answer = websocket(target, rest) if kind == "websocket" else h2(target, rest[0])
    print(json.dumps(answer))


if __name__ == "__main__":
    main()
