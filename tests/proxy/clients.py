"""The HTTP clients workers really use, each sent through the proxy the way users configure it.

The proxy must work for curl, requests, httpx, aiohttp (via HTTP(S)_PROXY) and Node; each has
its own ideas about CONNECT, credentials and ALPN, so each gets its own small driver here.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import aiohttp
import httpx
import requests

NODE_CLIENT = Path(__file__).parent / "node" / "client.js"


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes
    protocol: str = ""

    @property
    def decision(self) -> str | None:
        return self.headers.get("x-groundhog-decision")

    def json(self):
        return json.loads(self.body)


def proxy_url(port: int, tape: str | None = None, branch: str | None = None) -> str:
    if tape is None:
        return f"http://127.0.0.1:{port}"
    return f"http://{quote(tape, safe='')}:{quote(branch or '', safe='')}@127.0.0.1:{port}"


def _lower(headers) -> dict[str, str]:
    return {name.lower(): value for name, value in headers.items()}


def with_curl(
    proxy: str, url: str, ca: Path, headers: dict[str, str], *, http_version: str = "--http1.1"
) -> Reply:
    command = ["curl", "-sS", "-i", http_version, "--proxy", proxy, "--cacert", str(ca)]
    for name, value in headers.items():
        command += ["-H", f"{name}: {value}"]
    done = subprocess.run([*command, url], capture_output=True, timeout=30, check=True)
    raw = done.stdout
    # With a CONNECT tunnel curl prints the proxy's "200 Connection established" first.
    while raw.startswith(b"HTTP/1.1 200 Connection established"):
        raw = raw.split(b"\r\n\r\n", 1)[1]
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    protocol, status_text = lines[0].split()[:2]
    status = int(status_text)
    parsed = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        parsed[name.strip().lower()] = value.strip()
    return Reply(status, parsed, body, protocol)


def with_requests(proxy: str, url: str, ca: Path, headers: dict[str, str]) -> Reply:
    with requests.Session() as session:
        session.trust_env = False
        answer = session.get(
            url,
            proxies={"http": proxy, "https": proxy},
            verify=str(ca),
            headers=headers,
            timeout=30,
        )
    return Reply(answer.status_code, _lower(answer.headers), answer.content)


def with_httpx(proxy: str, url: str, ca: Path, headers: dict[str, str]) -> Reply:
    import ssl

    context = ssl.create_default_context(cafile=str(ca))
    with httpx.Client(proxy=proxy, verify=context, trust_env=False, timeout=30) as client:
        answer = client.get(url, headers=headers)
    return Reply(answer.status_code, _lower(answer.headers), answer.content)


def with_aiohttp(proxy: str, url: str, ca: Path, headers: dict[str, str]) -> Reply:
    """aiohttp as workers run it: trust_env=True picks the proxy up from HTTP(S)_PROXY."""

    async def go() -> Reply:
        import ssl

        context = ssl.create_default_context(cafile=str(ca))
        async with (
            aiohttp.ClientSession(trust_env=True) as session,
            session.get(url, headers=headers, ssl=context) as answer,
        ):
            return Reply(answer.status, _lower(answer.headers), await answer.read())

    saved = {name: os.environ.get(name) for name in ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")}
    os.environ.update(HTTP_PROXY=proxy, HTTPS_PROXY=proxy, NO_PROXY="")
    try:
        return asyncio.run(go())
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def node_available() -> bool:
    return shutil.which("node") is not None


def with_node(proxy: str, url: str, ca: Path, headers: dict[str, str]) -> Reply:
    done = subprocess.run(
        ["node", str(NODE_CLIENT), proxy, url, str(ca), json.dumps(headers)],
        capture_output=True,
        timeout=30,
    )
    if done.returncode != 0:
        raise AssertionError(f"node client failed: {done.stderr.decode(errors='replace')}")
    answer = json.loads(done.stdout)
    return Reply(answer["status"], _lower(answer["headers"]), answer["body"].encode("latin-1"))


CLIENTS = {
    "curl": with_curl,
    "requests": with_requests,
    "httpx": with_httpx,
    "aiohttp": with_aiohttp,
    "node": with_node,
}


def with_urllib(proxy: str, url: str, ca: Path, headers: dict[str, str]) -> Reply:
    """Python's own urllib: it adds `Accept-Encoding: identity` and its `User-Agent`."""
    import ssl
    import urllib.request

    context = ssl.create_default_context(cafile=str(ca))
    opener = urllib.request.build_opener(
        urllib.request.ProxyHandler({"http": proxy, "https": proxy}),
        urllib.request.HTTPSHandler(context=context),
    )
    with opener.open(urllib.request.Request(url, headers=headers), timeout=30) as answer:
        return Reply(answer.status, _lower(answer.headers), answer.read())
