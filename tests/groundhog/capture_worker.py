"""A captured worker for tests/groundhog/test_capture.py: clients that ignore proxies.

Run as `python capture_worker.py HTTP_PORT HTTPS_PORT GRPC_PORT LABEL` inside
`groundhog run --capture`. It reads through a raw socket (no HTTP library, no proxy support at
all) in the clear and over TLS, calls a gRPC method over an insecure channel with no proxy
options, has Node's built-in `fetch` read another path, then writes its own
`POST /write/LABEL`; it prints one JSON line of what each answered.
"""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
import sys

import grpc

NODE_FETCH = """
const url = process.argv[1];
fetch(url).then(r => r.text()).then(t => { process.stdout.write(t); })
  .catch(e => { console.error(String(e.cause || e)); process.exit(3); });
"""


def raw_http(
    port: int, method: str, path: str, body: bytes = b"", *, tls: bool = False
) -> tuple[int, str]:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as plain:
        # TLS verified against SSL_CERT_FILE: the Groundhog CA that `run` points it at.
        context = ssl.create_default_context()
        connection = context.wrap_socket(plain, server_hostname="127.0.0.1") if tls else plain
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        )
        connection.sendall(head.encode() + body)
        received = b""
        while chunk := connection.recv(65536):
            received += chunk
    head_bytes, _, content = received.partition(b"\r\n\r\n")
    status = int(head_bytes.split(b" ", 2)[1])
    return status, content.decode()


def main() -> None:
    http_port, https_port, grpc_port = (int(port) for port in sys.argv[1:4])
    label = sys.argv[4]
    answers: dict[str, object] = {}
    answers["raw"] = raw_http(http_port, "GET", "/shared")
    answers["tls"] = raw_http(https_port, "GET", "/tls", tls=True)
    with grpc.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
        answers["grpc"] = channel.unary_unary("/pkg.Lookup/Get")(b"q", timeout=30).decode()
    fetched = subprocess.run(
        ["node", "-e", NODE_FETCH, f"http://127.0.0.1:{http_port}/node"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    answers["node"] = fetched.stdout if fetched.returncode == 0 else f"failed: {fetched.stderr}"
    # Last: a branch's write makes its later reads of the world fetch afresh.
    answers["write"] = raw_http(http_port, "POST", f"/write/{label}", label.encode() * 3)
    print(json.dumps(answers))


if __name__ == "__main__":
    main()
