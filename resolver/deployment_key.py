"""The per-deployment redaction key, and keeping the data directory private (DESIGN §4).

Placeholders are HMACs under this key, so a secret keys the same way on every ask yet cannot
be recovered or tested from a tape, an export or the store without the key. It is created once
in the data directory (0600, the directory 0700), by whichever process starts first, and never
leaves it. Replicas that share a store must share the key: point `GROUNDHOG_REDACTION_KEY_FILE`
at one file, or give the hex key itself in `GROUNDHOG_REDACTION_KEY` (a Kubernetes Secret).
"""

from __future__ import annotations

import logging
import os
import secrets
import stat
from pathlib import Path

from resolver.errors import ResolverError

logger = logging.getLogger(__name__)

KEY_FILE_NAME = "redaction.key"
KEY_BYTES = 32
PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600


class KeyFileError(ResolverError):
    """The key file exists but is not a key (truncated, edited, or not ours)."""


def _tighten(path: Path) -> None:
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        try:
            os.chmod(path, mode & ~0o077)
        except OSError as error:  # a read-only mount: its owner decides
            logger.warning("could not make %s private: %s", path, error)


def make_private_dir(path: Path) -> None:
    """Create `path` (0700) or tighten an existing one that others could read."""
    path.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
    _tighten(path)


def make_private_file(path: Path) -> None:
    """Create `path` empty (0600) if missing, or drop group/other access from it."""
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, PRIVATE_FILE))
    except FileExistsError:
        _tighten(path)


def parse_key(text: str, source: str) -> bytes:
    try:
        key = bytes.fromhex(text.strip())
    except ValueError as error:
        raise KeyFileError(f"{source} does not hold a hex redaction key") from error
    if len(key) < 16:
        raise KeyFileError(f"{source} holds a key of {len(key)} bytes; at least 16 are needed")
    return key


def load_or_create_key(path: Path) -> bytes:
    """The key in `path`, created (atomically, 0600) if there is none yet."""
    if path.exists():  # perhaps a read-only mount shared by replicas
        _tighten(path)
        return parse_key(path.read_text(), str(path))
    make_private_dir(path.parent)
    if not path.exists():
        staging = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        descriptor = os.open(staging, os.O_CREAT | os.O_EXCL | os.O_WRONLY, PRIVATE_FILE)
        try:
            os.write(descriptor, secrets.token_hex(KEY_BYTES).encode() + b"\n")
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
        try:
            os.link(staging, path)  # fails if another process won the race: use theirs
            logger.info("created the redaction key %s", path)
        except FileExistsError:
            pass
        finally:
            staging.unlink(missing_ok=True)
    make_private_file(path)
    return parse_key(path.read_text(), str(path))
