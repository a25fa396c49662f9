"""`groundhog run --capture`: workers that ignore proxies are recorded, shared and fenced in.

Real processes throughout: the resolver and the proxy (with --capture-dir), a counting HTTP
world and a gRPC world on the sidecar's loopback, and four sibling workers each started by
`python -m groundhog.cli run --capture` in a network namespace of its own. Their clients set
no proxy at all (a raw socket, an insecure gRPC channel, Node's built-in fetch), so anything
they get from the world went through the transparent listener. Needs root, `ip` and iptables;
skipped with the reason otherwise.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import signal
import socket
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from groundhog import capture_net
from groundhog.lifetime import tied_command
from proxy.capture import STAND_IN_RANGE
from tests.groundhog.upstream import Upstream, serving
from tests.proxy.stack import Stack, running_stack
from tests.proxy.test_grpc_end_to_end import METHOD, serving_lookup
from tests.support.servers import wait_until

WORKER = Path(__file__).with_name("capture_worker.py")


def dead_pid() -> int:
    """A pid whose process has exited (it names a run that is gone)."""
    code = "import os; print(os.getpid())"
    gone = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return int(gone.stdout)


@pytest.fixture(scope="module", autouse=True)
def capture_possible() -> None:
    """Skip, saying why, where this machine cannot make a capture namespace at all."""
    try:
        capture_net.check_namespaces()
    except capture_net.CaptureUnavailable as error:
        pytest.skip(f"no capture namespaces on this machine: {error}")


@pytest.fixture(scope="module")
def capture_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("capture")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, capture_dir: Path) -> Iterator[Stack]:
    data = tmp_path_factory.mktemp("groundhog-data")
    with running_stack(data, "--capture-dir", str(capture_dir)) as running:
        announced = capture_dir / "sidecar.json"
        wait_until(announced.exists, what="the proxy to announce its listeners")
        yield running


@pytest.fixture(scope="module")
def world() -> Iterator[Upstream]:
    with serving() as upstream:
        yield upstream


@pytest.fixture(scope="module")
def tls_world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Upstream]:
    with serving(tmp_path_factory.mktemp("tls-world")) as upstream:
        yield upstream


def captured(
    stack: Stack,
    capture_dir: Path,
    tape: str,
    branch: str,
    *command: str,
    env: dict[str, str] | None = None,
    loopback: str = "sidecar",
) -> subprocess.Popen[str]:
    environment = {
        **os.environ,
        **(env or {}),
        "GROUNDHOG_RESOLVER_URL": stack.resolver.url,
        "GROUNDHOG_PROXY_URL": stack.proxy.url,
        "XDG_CACHE_HOME": str(capture_dir / "cache"),
    }
    arguments = ["run", "--capture", "--capture-dir", str(capture_dir), "--tape", tape]
    # The worlds listen on this machine's loopback: the worker's 127.0.0.1 must reach them.
    arguments += ["--loopback", loopback, "--branch", branch, "--", *command]
    return subprocess.Popen(
        tied_command([sys.executable, "-m", "groundhog.cli", *arguments]),
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def leftovers(owner: int) -> list[str]:
    """What of run `owner`'s namespace, interfaces and rules still exists."""
    found = []
    if (
        f"ghcap-{owner}"
        in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    ):
        found.append("namespace")
    if (
        f"ghc{owner}h"
        in subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    ):
        found.append("interface")
    for table in ("filter", "nat"):
        rules = subprocess.run(
            ["iptables", "-w", "-t", table, "-S"], capture_output=True, text=True
        )
        if f"GHCAP-{owner}" in rules.stdout:
            found.append(f"{table} rules")
    return found


def test_four_captured_siblings_share_reads_and_keep_their_writes(
    stack: Stack, capture_dir: Path, world: Upstream, tls_world: Upstream
) -> None:
    calls: Counter[str] = Counter()
    grpc_server, grpc_port = serving_lookup(calls, lambda s: s.add_insecure_port("127.0.0.1:0"))
    http_port = int(world.url.rsplit(":", 1)[1])
    tape = stack.open_tape(
        dependency_model="rules", rules=[{"operation": METHOD, "reads": ["lookup"]}]
    )
    branches = stack.fork(tape, 4)
    try:
        workers = [
            captured(
                stack,
                capture_dir,
                tape,
                branch,
                sys.executable,
                str(WORKER),
                str(http_port),
                tls_world.url.rsplit(":", 1)[1],
                str(grpc_port),
                f"w{index}",
            )
            for index, branch in enumerate(branches)
        ]
        outputs = [worker.communicate(timeout=120) for worker in workers]
    finally:
        grpc_server.stop(grace=None)
    for worker, (_, err) in zip(workers, outputs, strict=True):
        assert worker.returncode == 0, err
    answers = [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]

    assert world.count("/shared") == 1 and world.count("/node") == 1 and calls[METHOD] == 1
    assert len({json.dumps(a["raw"]) for a in answers}) == 1
    assert tls_world.count("/tls") == 1 and len({json.dumps(a["tls"]) for a in answers}) == 1
    assert answers[0]["tls"][0] == 200
    assert len({a["node"] for a in answers}) == 1 and '"path": "/node"' in answers[0]["node"]
    assert len({a["grpc"] for a in answers}) == 1 and answers[0]["grpc"].startswith("q:")
    for index, answer in enumerate(answers):
        status, body = answer["write"]
        assert status == 200 and json.loads(body)["written"] == 3 * len(f"w{index}")
        assert world.count(f"/write/w{index}") == 1
    events = stack.admin("GET", f"/v1/tapes/{tape}/events", params={"branch": branches[3]})
    assert {e["branch"] for e in events.json()["events"]} <= {branches[3]}


PROBE = """
import socket, sys
udp_port, tcp_port, world_port, admin_port = (int(a) for a in sys.argv[1:5])
gateway = open("/proc/net/route").read().split()[13]  # the default route's, little-endian hex
gateway = socket.inet_ntoa(int(gateway, 16).to_bytes(4, "little"))
for host in ("127.0.0.1", gateway):
    try:
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"datagram", (host, udp_port))
        print("udp sent")
    except OSError as error:
        print("udp refused:", error)
    try:
        with socket.create_connection((host, tcp_port), timeout=10) as raw:
            raw.sendall(bytes(range(32)))  # neither HTTP nor TLS
            print("tcp answered:", raw.recv(100))
    except OSError as error:
        print("tcp failed:", error)
with socket.create_connection(("127.0.0.1", world_port), timeout=30) as other:
    other.sendall(b"GET /other HTTP/1.1\\r\\nHost: x\\r\\nX-Groundhog-Branch: root/elsewhere"
                  b"\\r\\nConnection: close\\r\\n\\r\\n")
    answer = b""
    while chunk := other.recv(4096):
        answer += chunk
    print("named another branch:", answer.decode())
with socket.create_connection(("127.0.0.1", admin_port), timeout=30) as admin:
    admin.sendall(b"GET /v1/tapes HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nConnection: close\\r\\n\\r\\n")
    answer = b""
    while chunk := admin.recv(4096):
        answer += chunk
    print("admin api:", answer.decode())
stand_in = socket.gethostbyname("api.capture.test")  # answered by the sidecar, never live
print("stand-in:", stand_in)
with socket.create_connection((stand_in, world_port), timeout=30) as named:
    named.sendall(b"GET /named HTTP/1.1\\r\\nHost: api.capture.test\\r\\n"
                  b"Connection: close\\r\\n\\r\\n")
    answer = b""
    while chunk := named.recv(4096):
        answer += chunk
    print("named host:", answer.decode())
print("probe done")
"""


def test_a_captured_worker_reaches_nothing_else_and_names_no_other_branch(
    stack: Stack, capture_dir: Path, world: Upstream
) -> None:
    tape = stack.open_tape()
    # Listeners in the sidecar's namespace on every address, the veth's included.
    tcp = socket.socket()
    tcp.bind(("0.0.0.0", 0))
    tcp.listen()
    tcp.setblocking(False)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("0.0.0.0", 0))
    udp.setblocking(False)
    ports = [str(udp.getsockname()[1]), str(tcp.getsockname()[1]), world.url.rsplit(":", 1)[1]]
    ports.append(str(stack.resolver.port))
    try:
        worker = captured(stack, capture_dir, tape, "root", sys.executable, "-c", PROBE, *ports)
        out, err = worker.communicate(timeout=60)
        assert "probe done" in out, err
        with pytest.raises(BlockingIOError):
            tcp.accept()
        with pytest.raises(BlockingIOError):
            udp.recvfrom(100)
    finally:
        tcp.close()
        udp.close()
    assert out.count("udp refused") == 2
    assert out.count("tcp answered: b''") == 2  # closed by the proxy, nothing relayed
    stand_in = out.split("stand-in:", 1)[1].split()[0]
    assert ipaddress.ip_address(stand_in) in STAND_IN_RANGE
    # The proxy dialled the name behind the stand-in, not the stand-in: the name does not
    # resolve, and getaddrinfo's errors are the negative numbers.
    named = out.split("named host:", 1)[1].split("probe done", 1)[0]
    assert " 502 " in named and '"error_kind":"connect"' in named and "[Errno -" in named
    # The admin API is Groundhog's own endpoint, never the world's: refused by the proxy.
    admin = out.split("admin api:", 1)[1].split("stand-in:", 1)[0]
    assert admin.startswith(" HTTP/1.1 403") and '"tapes"' not in admin
    refusal = out.split("named another branch:", 1)[1].split("admin api:", 1)[0]
    assert refusal.startswith(" HTTP/1.1 403") and "captured-identity" in refusal
    assert "root/elsewhere" in refusal and world.count("/other") == 0


def test_sigkill_leaves_no_namespace_interface_or_rule(
    stack: Stack, capture_dir: Path, tmp_path: Path
) -> None:
    tape = stack.open_tape()
    ready = tmp_path / "ready"
    command = f"open({str(ready)!r}, 'w').close(); import time; time.sleep(600)"
    worker = captured(stack, capture_dir, tape, "root", sys.executable, "-c", command)
    try:

        def started() -> bool:
            assert worker.poll() is None, worker.communicate()
            return ready.exists()

        wait_until(started, timeout=60, what="the captured command to start")
        owner = worker.pid  # tied_command exec's the CLI in place: same pid
        assert leftovers(owner) == ["namespace", "interface", "filter rules", "nat rules"]
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.communicate()
    wait_until(lambda: not leftovers(owner), what=f"cleanup of {leftovers(owner)}")
    assert not re.search(rf"ghcap-{owner}\b", str(os.listdir("/run/netns")))


def test_the_next_run_removes_what_a_vanished_run_left_behind() -> None:
    owner = dead_pid()
    # Under the lock, so no concurrent run cleans it up first.
    with capture_net.allocation_lock():
        net = capture_net.CaptureNet(owner_pid=owner, slot=capture_net.free_slot(owner))
        try:
            capture_net.create(net, ("127.0.0.1", 9), None)
            assert leftovers(owner) == ["namespace", "interface", "filter rules", "nat rules"]
            # IPv4 only: no IPv6 address (not even link-local) on either side of the link.
            for inside in ([], ["-n", net.namespace]):
                shown = subprocess.run(["ip", *inside, "-6", "-o", "addr"], capture_output=True)
                assert net.host_interface.encode() not in shown.stdout
                assert net.worker_interface.encode() not in shown.stdout
            assert owner in capture_net.clean_stale()
            assert leftovers(owner) == []
        finally:
            capture_net.destroy(net)


def test_the_trial_namespace_leaves_nothing_behind() -> None:
    capture_net.check_namespaces()  # made and removed, owned by a pid no process has
    assert leftovers(int(capture_net.PID_MAX.read_text())) == []


def test_under_sudo_the_command_runs_as_the_invoking_user_and_can_read_the_ca(
    stack: Stack, capture_dir: Path
) -> None:
    tape = stack.open_tape()
    script = 'id -u; grep -c "BEGIN CERTIFICATE" "$SSL_CERT_FILE" "$NODE_EXTRA_CA_CERTS"'
    sudo = {"SUDO_UID": "65534", "SUDO_GID": "65534"}
    worker = captured(stack, capture_dir, tape, "root", "/bin/sh", "-c", script, env=sudo)
    out, err = worker.communicate(timeout=60)
    assert worker.returncode == 0, err
    uid, bundle, ca = out.split()
    assert uid == "65534"  # not root: the user sudo was run for
    assert int(bundle.rsplit(":", 1)[1]) > 1 and ca.endswith(":1")  # readable by that user


OWN_SERVER = """
import http.server, socket, sys, threading, urllib.request
class Own(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "3")
        self.end_headers()
        self.wfile.write(b"own")
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Own)
threading.Thread(target=server.serve_forever, daemon=True).start()
for host in ("127.0.0.1", "localhost"):
    url = f"http://{host}:{server.server_address[1]}/tool"
    print("own server:", urllib.request.urlopen(url, timeout=30).read().decode())
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10).close()
    print("host loopback: connected")
except OSError as error:
    print("host loopback:", type(error).__name__)
"""


def test_by_default_a_captured_workers_loopback_is_its_own(stack: Stack, capture_dir: Path) -> None:
    tape = stack.open_tape()
    # A listener on this machine's loopback, which the worker's 127.0.0.1 must not reach.
    outside = socket.socket()
    outside.bind(("127.0.0.1", 0))
    outside.listen()
    outside.setblocking(False)
    port = str(outside.getsockname()[1])
    try:
        worker = captured(
            stack, capture_dir, tape, "root", sys.executable, "-c", OWN_SERVER, port,
            loopback="local",
        )  # fmt: skip
        out, err = worker.communicate(timeout=60)
        with pytest.raises(BlockingIOError):
            outside.accept()
    finally:
        outside.close()
    assert worker.returncode == 0, err
    assert out.count("own server: own") == 2  # its own server, by address and by name
    assert "host loopback: ConnectionRefusedError" in out  # nothing listens there inside
    events = stack.admin("GET", f"/v1/tapes/{tape}/events").json()["events"]
    assert events == []  # loopback never reached the proxy
