"""The store cannot be written: a full disk, then a read-only file.

A resolver that cannot commit must say so (503 problem+json), must not crash, must not leave a
half-written exchange behind, and must not let a request go live that it cannot record. The
disk is made full for real: the store lives on a small tmpfs (root) that a filler file then
fills; without the privilege to mount, the resolver's file-size limit (RLIMIT_FSIZE, set with
prlimit on our own child) is pinned to the store's current size instead. Read-only is a
read-only remount of that tmpfs (or chmod 0444 when not root, where permissions bind).
"""

from __future__ import annotations

import contextlib
import logging
import os
import resource
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.harness import ServiceError
from bench.reliability.audit import audit
from bench.reliability.client import Answer, direct, through_proxy
from bench.reliability.processes import children
from bench.reliability.stack import Stack, start_stack
from bench.reliability.tap import read_ledger

logger = logging.getLogger(__name__)

TMPFS_SIZE = "3m"
BODY_BYTES = 120_000
FILLER_CHUNK = b"\0" * 65536
UNLIMITED = (resource.RLIM_INFINITY, resource.RLIM_INFINITY)


def _mount(*args: str) -> bool:
    completed = subprocess.run(["mount", *args], capture_output=True, text=True, check=False)
    if completed.returncode != 0:
        logger.info("mount %s failed: %s", " ".join(args), completed.stderr.strip())
    return completed.returncode == 0


@contextlib.contextmanager
def small_disk(directory: Path) -> Iterator[bool]:
    """A size-limited tmpfs at `directory` if we may mount; yields whether it is one."""
    directory.mkdir(parents=True, exist_ok=True)
    mounted = os.geteuid() == 0 and _mount(
        "-t", "tmpfs", "-o", f"size={TMPFS_SIZE}", "tmpfs", str(directory)
    )
    try:
        yield mounted
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(directory)], check=False, capture_output=True)


def fill_disk(directory: Path) -> Path:
    """Write a filler file until the file system says it is full."""
    filler = directory / "filler.bin"
    with filler.open("wb", buffering=0) as handle, contextlib.suppress(OSError):
        while True:
            handle.write(FILLER_CHUNK)
    with filler.open("ab", buffering=0) as handle, contextlib.suppress(OSError):
        while True:
            handle.write(b"\0" * 512)
    return filler


def pin_file_size(pid: int, store: Path) -> None:
    """Without mount rights: no file of `pid` may grow past the store's current size."""
    sizes = [
        Path(f"{store}{suffix}").stat().st_size
        for suffix in ("", "-wal")
        if Path(f"{store}{suffix}").exists()
    ]
    # Only the soft limit: an unprivileged caller could not raise a lowered hard limit again.
    resource.prlimit(pid, resource.RLIMIT_FSIZE, (max(sizes), resource.RLIM_INFINITY))


def _summary(answer: Answer) -> dict[str, Any]:
    return {
        "status": answer.status,
        "problem": answer.is_problem,
        "decision": answer.decision,
        "error": answer.error,
        "body": answer.body[:240].decode(errors="replace"),
    }


def _resolve_payload(tape: str, branch: str, upstream_url: str, path: str) -> dict[str, Any]:
    port = int(upstream_url.rsplit(":", 1)[1])
    return {
        "tape": tape,
        "branch": branch,
        "method": "GET",
        "scheme": "http",
        "host": "127.0.0.1",
        "port": port,
        "path": path,
        "query": [],
        "headers": [],
        "body": "",
    }


def _full_disk_phase(stack: Stack, tape: str, branches: list[str], mounted: bool) -> dict[str, Any]:
    proxy = stack.proxies[0].url
    recorded = 0
    for index in range(3):
        answer = through_proxy(
            proxy,
            f"{stack.upstream.url}/big/{index}?size={BODY_BYTES}",
            tape=tape,
            branch=branches[0],
        )
        recorded += answer.decision == "recorded"
    if mounted:
        fill_disk(stack.data_dir)
    else:
        pin_file_size(stack.resolver.pid, stack.store_path)
    calls_before = stack.upstream_stats()["calls"]
    while_full = [
        through_proxy(
            proxy,
            f"{stack.upstream.url}/big/full-{index}?size={BODY_BYTES}",
            tape=tape,
            branch=branches[1],
        )
        for index in range(4)
    ]
    direct_resolve = direct(
        "POST",
        f"{stack.resolver.url}/v1/resolve",
        json=_resolve_payload(tape, branches[1], stack.upstream.url, "/big/direct"),
    )
    calls_while_full = stack.upstream_stats()["calls"] - calls_before
    alive = stack.resolver.alive()
    return {
        "method": "tmpfs" if mounted else "rlimit-fsize",
        "recorded_before": recorded,
        "through_proxy_while_full": [_summary(a) for a in while_full],
        "direct_resolve_while_full": _summary(direct_resolve),
        "world_calls_while_full": calls_while_full,
        "worker_live_answers_unrecorded": sum(1 for a in while_full if a.status == 200),
        "resolver_alive": alive,
    }


def run_store_faults(root: Path | None = None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="gh-store-") as scratch:
        base = Path(root or scratch)
        with small_disk(base / "data") as mounted, children(base) as group:
            # The disk reserve would refuse every live call on a 3 MiB disk before the store
            # fills; this scenario tests the store's own full-disk handling, so it is off here
            # (fail_closed.py tests the reserve).
            no_reserve = {"GROUNDHOG_DISK_RESERVE_BYTES": "0"}
            stack = start_stack(group, base, with_tap=True, resolver_env=no_reserve)
            tape, branches = stack.open_tape("store", 2)
            full = _full_disk_phase(stack, tape, branches, mounted)
            filler = stack.data_dir / "filler.bin"
            filler.unlink(missing_ok=True)
            if not mounted:
                resource.prlimit(stack.resolver.pid, resource.RLIMIT_FSIZE, UNLIMITED)
            after = through_proxy(
                stack.proxies[0].url,
                f"{stack.upstream.url}/big/after?size=1000",
                tape=tape,
                branch=branches[1],
            )
            full["recovered_without_restart"] = after.decision == "recorded"
            full["store_after"] = audit(
                stack.store_path, tape, read_ledger(stack.ledger_path)
            ).as_dict()
            full["held"] = (
                full["resolver_alive"]
                and full["world_calls_while_full"] == 0
                and all(
                    a["status"] == 503 and a["problem"] for a in full["through_proxy_while_full"]
                )
                and full["store_after"]["clean"]
                and full["recovered_without_restart"]
            )
            read_only = _read_only_phase(stack, tape, branches, mounted)
            return {"full_disk": full, "read_only": read_only}


@contextlib.contextmanager
def read_only_store(stack: Stack, mounted: bool) -> Iterator[bool]:
    """The store directory read-only: remounted (tmpfs) or chmod'ed (not root).

    Yields whether it really is read-only (a busy mount point refuses the remount)."""
    directory = stack.data_dir
    files = [p for p in directory.iterdir() if p.is_file()]
    if not mounted and os.geteuid() == 0:
        yield False  # root ignores file permissions, and we may not remount: cannot be made RO
        return
    if mounted:
        done = _mount("-o", "remount,ro", str(directory))
    else:
        for path in [*files, directory]:
            path.chmod(0o555 if path.is_dir() else 0o444)
        done = True
    try:
        yield done
    finally:
        if mounted:
            _mount("-o", "remount,rw", str(directory))
        else:
            for path in [directory, *files]:
                path.chmod(0o755 if path.is_dir() else 0o644)


def clear_refusal(message: str) -> bool:
    """A start-up refusal a person can act on: names the problem, no raw traceback."""
    lowered = message.lower()
    return "traceback" not in lowered and ("read-only" in lowered or "not writable" in lowered)


def _read_only_phase(stack: Stack, tape: str, branches: list[str], mounted: bool) -> dict[str, Any]:
    stack.resolver.stop()
    started = True
    with read_only_store(stack, mounted) as read_only:
        if not read_only:
            stack.resolver.start()
            return {
                "started": None,
                "held": None,
                "skipped": "the store could not be made read-only",
            }
        try:
            stack.resolver.start(timeout=30)
        except ServiceError as error:
            started = False
            startup_message = str(error)[-1500:]
        if started:
            calls_before = stack.upstream_stats()["calls"]
            answers = [
                through_proxy(
                    stack.proxies[0].url,
                    f"{stack.upstream.url}/big/ro-{index}?size=1000",
                    tape=tape,
                    branch=branches[1],
                )
                for index in range(3)
            ]
            resolve = direct(
                "POST",
                f"{stack.resolver.url}/v1/resolve",
                json=_resolve_payload(tape, branches[1], stack.upstream.url, "/big/ro-direct"),
            )
            listing = direct("GET", f"{stack.resolver.url}/v1/tapes")
            figures = {
                "started": True,
                "through_proxy": [_summary(a) for a in answers],
                "direct_resolve": _summary(resolve),
                "list_tapes_status": listing.status,
                "world_calls": stack.upstream_stats()["calls"] - calls_before,
                "resolver_alive": stack.resolver.alive(),
            }
        else:
            figures = {"started": False, "startup_message": startup_message}
        stack.resolver.stop()
    store = audit(stack.store_path, tape, read_ledger(stack.ledger_path)).as_dict()
    figures["method"] = "tmpfs remount ro" if mounted else "chmod 0444"
    figures["store_after"] = store
    figures["held"] = store["clean"] and (
        (not figures["started"] and clear_refusal(figures["startup_message"]))
        or (
            figures["started"]
            and figures["world_calls"] == 0
            and figures["resolver_alive"]
            and all(a["status"] == 503 and a["problem"] for a in figures["through_proxy"])
        )
    )
    return figures
