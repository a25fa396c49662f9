"""A lease holder's recorded answers on its disk: the answer cache's second tier, by address.

A sidecar holding a branch's lease answers its hits from the recorded answers it keeps by
address (proxy/held_branches.py): in memory first (engine/cache.py's `AnswerCache`, 64 MiB),
then here, under the lease directory (`<lease dir>/answers/`, `groundhog_lease_disk_bytes`).
Without this tier every answer memory had no room for (large bodies, many addresses) and every
answer kept before a restart costs a resolve again at its first hit; the grant's read-ahead
carries only small bodies and at most 256 of them.

Keeping answers indefinitely is safe because a recording never changes (first recording wins)
and its address names where it came from: the store's token (store/identity.py: tape ids are
reused across stores, never within one), tape id, key, occurrence, fingerprint. One file per
address, named by a hash of it and written whole to a temporary file renamed into place, so a
reader sees all of a file or none of it. Each file holds its address and a SHA-256 of its
content: a file damaged on disk (a machine crash before the page cache reached it, a bad
sector) is removed with a warning and never served. Least recently used first out, within the
byte budget, by an index in memory ordered by the files' mtimes (touched at each hit, so the
order survives a restart).

Everything here but `holds` does file I/O, so it runs in threads (proxy/lease_answers.py);
`holds` is for the event loop: a look in the index under a lock that guards no I/O.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

from engine.cache import Recorded, dumps_compact

log = logging.getLogger(__name__)

DIRECTORY_NAME = "answers"
# Store token, tape id, key hash, occurrence, fingerprint.
DiskKey = tuple[str, int, str, int, str]
_SUFFIX = ".answer"
_TEMPORARY = ".tmp"
# The first line of a file: this, then the SHA-256 of the rest in hex.
_MAGIC = b"groundhog-answer/1 "


def file_name(key: DiskKey) -> str:
    return hashlib.sha256(dumps_compact(list(key))).hexdigest() + _SUFFIX


def encode(key: DiskKey, recorded: Recorded) -> bytes:
    """A file's bytes: the checksum line, the address and exchange id, the response's JSON."""
    meta = dumps_compact({"address": list(key), "exchange_id": recorded.exchange_id})
    content = meta + b"\n" + recorded.response_json  # compact JSON holds no raw newline
    return _MAGIC + hashlib.sha256(content).hexdigest().encode() + b"\n" + content


def decode(key: DiskKey, data: bytes) -> Recorded:
    """The answer a file holds for `key`; ValueError if it is damaged or holds another."""
    head, _, content = data.partition(b"\n")
    checksum = hashlib.sha256(content).hexdigest().encode()
    if not head.startswith(_MAGIC) or head[len(_MAGIC) :] != checksum:
        raise ValueError("its checksum does not match (truncated or damaged)")
    meta_line, _, response_json = content.partition(b"\n")
    try:
        meta: dict[str, Any] = json.loads(meta_line)
        if meta["address"] != list(key):
            raise ValueError(f"it holds another address, {meta['address']!r}")
        response = json.loads(response_json)
        headers = [[str(name), str(value)] for name, value in response["headers"]]
        if not isinstance(response["status"], int) or not isinstance(response["body"], str):
            raise ValueError("its response is not a recorded answer")
        return Recorded(int(meta["exchange_id"]), response, headers)
    except (KeyError, TypeError) as error:
        raise ValueError(f"its content is not a recorded answer ({error!r})") from error


class AnswerDisk:
    """Recorded answers in `directory`, within `budget_bytes`; safe to call from any thread."""

    def __init__(self, directory: Path, budget_bytes: int) -> None:
        self.directory = directory
        self.budget_bytes = budget_bytes
        self._index: OrderedDict[str, int] = OrderedDict()  # file name → size, oldest use first
        self._bytes = 0
        self._loaded = False
        self._lock = threading.Lock()  # guards the index only: no I/O is done holding it
        self._loading = threading.Lock()

    def load(self) -> None:
        """Index the files a previous life left, by last use; a stray temporary file (the
        process died mid-write) is removed. Done once, before the first read or write."""
        with self._loading:  # a write waits for it: its temporary file is not a stray one
            if self._loaded:
                return
            self.directory.mkdir(parents=True, exist_ok=True)
            found = []
            with os.scandir(self.directory) as entries:
                for entry in entries:
                    with contextlib.suppress(FileNotFoundError):
                        if entry.name.endswith(_TEMPORARY):
                            os.unlink(entry.path)
                        elif entry.name.endswith(_SUFFIX):
                            status = entry.stat()
                            found.append((status.st_mtime_ns, entry.name, status.st_size))
            index = OrderedDict((name, size) for _, name, size in sorted(found))
            with self._lock:  # not while sorting: the event loop asks `holds` meanwhile
                self._index, self._bytes, self._loaded = index, sum(index.values()), True
        self.evict()

    def holds(self, key: DiskKey) -> bool:
        """Whether a file for `key` is indexed (no I/O: for the event loop)."""
        name = file_name(key)
        with self._lock:
            return name in self._index

    def put(self, key: DiskKey, recorded: Recorded) -> None:
        """Keep `recorded` at `key` (an address's answer never changes: kept once)."""
        self.load()
        name = file_name(key)
        data = encode(key, recorded)
        if len(data) > self.budget_bytes // 8:
            return  # one huge body should not flush everything else
        if self.holds(key):
            return
        descriptor, temporary = tempfile.mkstemp(dir=self.directory, prefix=".", suffix=_TEMPORARY)
        try:
            with os.fdopen(descriptor, "wb") as file:
                file.write(data)
            os.replace(temporary, self.directory / name)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
        with self._lock:
            self._bytes += len(data) - self._index.pop(name, 0)
            self._index[name] = len(data)
        self.evict()

    def get(self, key: DiskKey) -> Recorded | None:
        """The answer kept at `key`, or None; a damaged file is removed, not served."""
        self.load()
        name = file_name(key)
        path = self.directory / name
        try:
            recorded = decode(key, path.read_bytes())
        except FileNotFoundError:
            self._forget(name)  # evicted meanwhile, or removed by hand
            return None
        except ValueError as damage:
            log.warning("removed recorded answer %s from the disk cache: %s", path, damage)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)  # first: a write of it is skipped while it is indexed
            self._forget(name)
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # the last use, for the order after a restart
        with self._lock:
            if name in self._index:
                self._index.move_to_end(name)
        return recorded

    def _forget(self, name: str) -> None:
        with self._lock:
            self._bytes -= self._index.pop(name, 0)

    def evict(self) -> None:
        """Remove the least recently used files until what is kept is within the budget."""
        victims = []
        with self._lock:
            while self._bytes > self.budget_bytes and self._index:
                name, size = self._index.popitem(last=False)
                self._bytes -= size
                victims.append(name)
        for name in victims:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.directory / name)

    def __len__(self) -> int:
        return len(self._index)

    @property
    def bytes(self) -> int:
        return self._bytes
