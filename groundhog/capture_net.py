"""The network namespace a captured worker runs in, and the kernel rules that close it.

`groundhog run --capture` must not trust the command to use a proxy: Node's `fetch`, gRPC
channels and raw sockets ignore HTTP_PROXY. So the command gets a network namespace whose only
way out is a veth pair to the sidecar's namespace, and the kernel sends every TCP connection
that crosses it to the proxy's transparent listener (DNAT on the host side of the veth, where
the proxy's socket lives, so its conntrack entry gives the proxy the original destination),
UDP port 53 to the sidecar's DNS listener, and drops everything else, on both sides (default
DROP in the namespace; a DROP chain on the host side). Loopback stays the namespace's own by
default (`Loopback.LOCAL`): a server the worker starts itself answers on its 127.0.0.1, and
nothing on lo can leave the namespace. `Loopback.SIDECAR` routes 127.0.0.0/8 out through the
veth instead (`route_localnet`), so a world on the sidecar's 127.0.0.1 is dialled as the worker
wrote it and still goes through the proxy (tests and benchmarks whose worlds listen there).

Everything is named `ghcap-<owner pid>` (interfaces `ghc<pid>h`/`ghc<pid>w`, chains
`GHCAP-<pid>`) so teardown touches only what this run made, and a run killed with SIGKILL is
recognised and removed by the next one (its owner pid is gone).
"""

from __future__ import annotations

import fcntl
import ipaddress
import logging
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from groundhog.errors import LocalProblem

log = logging.getLogger(__name__)

NAMESPACE_PREFIX = "ghcap-"
CHAIN_PREFIX = "GHCAP-"
# 4096 /30 links; not 169.254.169.0/24, where clouds keep their metadata service.
LINK_RANGE = ipaddress.IPv4Network("169.254.64.0/18")
LOOPBACK_TABLE = "77"
LOCK_FILE = Path("/run/lock/groundhog-capture.lock")
CAP_NET_ADMIN = 12
CAP_SYS_ADMIN = 21
TOOLS = ("ip", "iptables", "iptables-restore")
IPV6_SETTINGS = Path("/proc/sys/net/ipv6")  # absent where the kernel has no IPv6 at all
PID_MAX = Path("/proc/sys/kernel/pid_max")  # one past the largest pid


class Loopback(StrEnum):
    """Where a captured worker's connections to 127.0.0.0/8 go."""

    LOCAL = "local"  # its own lo: what a worker that starts a tool server expects
    SIDECAR = "sidecar"  # through the proxy to the sidecar's loopback (a world listening there)


class CaptureUnavailable(LocalProblem, RuntimeError):
    """This machine or user cannot make a capture namespace; the message names what is missing."""


@dataclass(frozen=True)
class CaptureNet:
    owner_pid: int
    slot: int

    @property
    def namespace(self) -> str:
        return f"{NAMESPACE_PREFIX}{self.owner_pid}"

    @property
    def host_interface(self) -> str:
        return f"ghc{self.owner_pid}h"

    @property
    def worker_interface(self) -> str:
        return f"ghc{self.owner_pid}w"

    @property
    def chain(self) -> str:
        return f"{CHAIN_PREFIX}{self.owner_pid}"

    @property
    def _base(self) -> ipaddress.IPv4Address:
        return LINK_RANGE.network_address + 4 * self.slot

    @property
    def host_address(self) -> str:
        return str(self._base + 1)

    @property
    def worker_address(self) -> str:
        return str(self._base + 2)


def _effective_capabilities() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("CapEff:"):
            return int(line.split()[1], 16)
    return 0


def check_privileges() -> None:
    """Raise CaptureUnavailable naming each missing privilege or tool."""
    missing = []
    capabilities = _effective_capabilities()
    for name, bit in (("CAP_NET_ADMIN", CAP_NET_ADMIN), ("CAP_SYS_ADMIN", CAP_SYS_ADMIN)):
        if not capabilities & (1 << bit):
            missing.append(name)
    tools = [tool for tool in TOOLS if shutil.which(tool) is None]
    problems = []
    if missing:
        problems.append(
            f"the capabilities {' and '.join(missing)} (to create a network namespace and its "
            "firewall rules): run as root, e.g. sudo groundhog run --capture …"
        )
    if tools:
        problems.append(f"the programs {', '.join(tools)} (apt-get install iproute2 iptables)")
    if problems:
        raise CaptureUnavailable(
            "--capture needs " + "; and ".join(problems) + "; nothing was run uncaptured"
        )


def _run(*command: str, namespace: str | None = None, stdin: str | None = None) -> str:
    full = ["ip", "netns", "exec", namespace, *command] if namespace else list(command)
    completed = subprocess.run(full, input=stdin, capture_output=True, text=True, check=False)
    if completed.returncode != 0:
        raise CaptureUnavailable(f"{' '.join(full)} failed: {completed.stderr.strip()}")
    return completed.stdout


def _quiet(*command: str) -> None:
    subprocess.run(list(command), capture_output=True, check=False)


@contextmanager
def allocation_lock() -> Iterator[None]:
    """Held while links are counted, chosen and made, and while stale runs are removed."""
    LOCK_FILE.parent.mkdir(parents=True, exist_ok=True)
    with open(LOCK_FILE, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def free_slot(owner_pid: int) -> int:
    """A link slot no interface uses now (call under `allocation_lock`)."""
    used = _used_slots()
    slots = LINK_RANGE.num_addresses // 4
    start = owner_pid % slots
    free = next((s % slots for s in range(start, start + slots) if s % slots not in used), None)
    if free is None:
        raise CaptureUnavailable(f"all {slots} capture links in {LINK_RANGE} are in use")
    return free


def _used_slots() -> set[int]:
    used = set()
    for line in _run("ip", "-4", "-o", "addr", "show").splitlines():
        match = re.search(r"inet (\d+\.\d+\.\d+\.\d+)/", line)
        if match and ipaddress.ip_address(match.group(1)) in LINK_RANGE:
            offset = int(ipaddress.ip_address(match.group(1))) - int(LINK_RANGE.network_address)
            used.add(offset // 4)
    return used


def _owner_alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


def stale_owners() -> set[int]:
    """Owner pids of capture namespaces, interfaces and chains whose run is gone."""
    owners: set[int] = set()
    for line in _run("ip", "netns", "list").splitlines():
        name = line.split()[0] if line.split() else ""
        if name.startswith(NAMESPACE_PREFIX) and name[len(NAMESPACE_PREFIX) :].isdigit():
            owners.add(int(name[len(NAMESPACE_PREFIX) :]))
    for match in re.finditer(r"\d+: ghc(\d+)h[@:]", _run("ip", "-o", "link", "show")):
        owners.add(int(match.group(1)))
    for table in ("filter", "nat"):
        rules = _run("iptables", "-w", "-t", table, "-S")
        owners.update(int(pid) for pid in re.findall(rf"-N {CHAIN_PREFIX}(\d+)", rules))
    return {pid for pid in owners if not _owner_alive(pid)}


def destroy(net: CaptureNet) -> None:
    """Remove everything `net` made; each step tolerates its part being gone already."""
    for table, hooks in (("nat", ("PREROUTING",)), ("filter", ("INPUT", "FORWARD"))):
        for hook in hooks:
            jump = ("-i", net.host_interface, "-j", net.chain)
            _quiet("iptables", "-w", "-t", table, "-D", hook, *jump)
        _quiet("iptables", "-w", "-t", table, "-F", net.chain)
        _quiet("iptables", "-w", "-t", table, "-X", net.chain)
    _quiet("ip", "link", "del", net.host_interface)  # takes its peer with it
    _quiet("ip", "netns", "del", net.namespace)


def clean_stale() -> list[int]:
    """Remove what runs killed before their clean-up left behind; their owner pids."""
    owners = sorted(stale_owners())
    for pid in owners:
        log.warning("removing the capture namespace of run %d, which is gone", pid)
        destroy(CaptureNet(owner_pid=pid, slot=0))
    return owners


def _worker_rules(net: CaptureNet) -> str:
    """The namespace's own firewall: nothing in or out but TCP and DNS over the veth."""
    interface = net.worker_interface
    return "\n".join(
        [
            "*filter",
            ":INPUT DROP [0:0]",
            ":FORWARD DROP [0:0]",
            ":OUTPUT DROP [0:0]",
            "-A INPUT -i lo -j ACCEPT",
            "-A INPUT -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT",
            "-A OUTPUT -o lo -j ACCEPT",
            f"-A OUTPUT -o {interface} -p tcp -j ACCEPT",
            f"-A OUTPUT -o {interface} -p udp --dport 53 -j ACCEPT",
            "COMMIT",
            "",
        ]
    )


def create(
    net: CaptureNet,
    transparent: tuple[str, int],
    dns: tuple[str, int] | None,
    loopback: Loopback = Loopback.LOCAL,
) -> None:
    """Make the namespace, its veth link and the rules on both sides (CaptureUnavailable)."""
    namespace, host_if, worker_if = net.namespace, net.host_interface, net.worker_interface
    _run("ip", "netns", "add", namespace)
    _run("ip", "link", "add", host_if, "type", "veth", "peer", "name", worker_if)
    _run("ip", "link", "set", worker_if, "netns", namespace)
    _run("ip", "addr", "add", f"{net.host_address}/30", "dev", host_if)
    _run("sysctl", "-qw", f"net.ipv4.conf.{host_if}.route_localnet=1")
    ipv6 = IPV6_SETTINGS.exists()
    if ipv6:
        # No link-local IPv6 on the link: the rules below are IPv4's, so IPv6 must not exist.
        _run("sysctl", "-qw", f"net.ipv6.conf.{host_if}.disable_ipv6=1")
    _run("ip", "link", "set", host_if, "up")
    inside = ("ip", "-n", namespace)
    _run(*inside, "addr", "add", f"{net.worker_address}/30", "dev", worker_if)
    _run(*inside, "link", "set", "lo", "up")
    settings: list[str] = []
    if loopback is Loopback.SIDECAR:
        settings += ["net.ipv4.conf.all.route_localnet=1"]
        settings += [f"net.ipv4.conf.{worker_if}.route_localnet=1"]
    if ipv6:
        settings += [
            f"net.ipv6.conf.{name}.disable_ipv6=1" for name in ("all", "default", worker_if)
        ]
    for setting in settings:
        _run("sysctl", "-qw", setting, namespace=namespace)
    _run(*inside, "link", "set", worker_if, "up")
    _run(*inside, "route", "add", "default", "via", net.host_address)
    if loopback is Loopback.SIDECAR:
        # Loopback destinations leave through the veth: the sidecar's 127.0.0.1 is the world's.
        _run(*inside, "route", "add", "default", "via", net.host_address, "table", LOOPBACK_TABLE)
        _run(*inside, "rule", "add", "pref", "10", "to", "127.0.0.0/8", "lookup", LOOPBACK_TABLE)
        _run(*inside, "rule", "del", "pref", "0", "lookup", "local")
        _run(*inside, "rule", "add", "pref", "100", "lookup", "local")
    _run("iptables-restore", namespace=namespace, stdin=_worker_rules(net))
    _host_rules(net, transparent, dns)


def _host_rules(net: CaptureNet, transparent: tuple[str, int], dns: tuple[str, int] | None) -> None:
    chain, host_if = net.chain, net.host_interface
    tcp_host, tcp_port = transparent
    nat = ["iptables", "-w", "-t", "nat"]
    filt = ["iptables", "-w", "-t", "filter"]
    _run(*nat, "-N", chain)
    _run(*nat, "-A", chain, "-p", "tcp", "-j", "DNAT", "--to-destination", f"{tcp_host}:{tcp_port}")
    _run(*filt, "-N", chain)
    _run(*filt, "-A", chain, "-p", "tcp", "-d", tcp_host, "--dport", str(tcp_port), "-j", "ACCEPT")
    if dns is not None:
        dns_target = f"{dns[0]}:{dns[1]}"
        for protocol in ("udp", "tcp"):
            rule = ["-p", protocol, "--dport", "53", "-j", "DNAT", "--to-destination", dns_target]
            _run(*nat, "-I", chain, "1", *rule)
        _run(*filt, "-A", chain, "-p", "udp", "-d", dns[0], "--dport", str(dns[1]), "-j", "ACCEPT")
        _run(*filt, "-A", chain, "-p", "tcp", "-d", dns[0], "--dport", str(dns[1]), "-j", "ACCEPT")
    _run(*filt, "-A", chain, "-j", "DROP")
    _run(*nat, "-I", "PREROUTING", "1", "-i", host_if, "-j", chain)
    for hook in ("INPUT", "FORWARD"):
        _run(*filt, "-I", hook, "1", "-i", host_if, "-j", chain)


def allocate_and_create(
    owner_pid: int,
    transparent: tuple[str, int],
    dns: tuple[str, int] | None,
    loopback: Loopback = Loopback.LOCAL,
) -> CaptureNet:
    """Clean stale runs, pick a free link and build the namespace; torn down on any failure."""
    with allocation_lock():
        clean_stale()
        free = free_slot(owner_pid)
        net = CaptureNet(owner_pid=owner_pid, slot=free)
        try:
            create(net, transparent, dns, loopback)
        except BaseException:
            destroy(net)
            raise
    return net


def check_namespaces() -> None:
    """Raise CaptureUnavailable unless this machine lets us make a capture namespace: one is
    made and removed. Its owner is pid_max, a pid no process can have, so whatever a crash
    half-way left behind is stale to the next run at once."""
    check_privileges()
    owner = int(PID_MAX.read_text())
    with allocation_lock():
        trial = CaptureNet(owner_pid=owner, slot=free_slot(owner))
        try:
            create(trial, ("127.0.0.1", 9), None)
        finally:
            destroy(trial)


def enter_namespace(net: CaptureNet) -> None:
    """In a child before exec: join the namespace (the caller's mounts and files stay)."""
    descriptor = os.open(f"/run/netns/{net.namespace}", os.O_RDONLY)
    try:
        os.setns(descriptor, os.CLONE_NEWNET)
    finally:
        os.close(descriptor)
