"""Resource versions and read fingerprints (DESIGN §3).

A branch's version of a resource is a hash chain over the writes its lineage made, so two
branches that made the same writes hold the same versions and share afterwards. A read's
fingerprint covers only the resources it depends on that the lineage wrote; it is empty exactly
when the base recording is sound to share. Get this wrong and a branch is served bytes its own
write invalidated.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping

BASE_VERSION = ""
# A version that starts so is *unknown*: a write went live (or may have) and its record has not
# landed, so nothing recorded can be known to answer a read of it (write-ahead, DESIGN §4).
UNKNOWN_PREFIX = "?"


def next_version(version: str, write_key_hash: str, body_hash: str) -> str:
    """v' = sha256(v, write key, body hash), fields separated so they cannot run together."""
    material = "\x1f".join((version, write_key_hash, body_hash)).encode()
    return hashlib.sha256(material).hexdigest()


def unknown_version(branch_id: int, write_key_hash: str, occurrence: int, resource: str) -> str:
    """The intent a write leaves on `resource` before it goes live: unique to that write of
    that branch (its occurrence is its own), so a read after it is refetched at an address
    nobody else shares until the write's record replaces it with the real version."""
    material = "\x1f".join((str(branch_id), write_key_hash, str(occurrence), resource)).encode()
    return UNKNOWN_PREFIX + hashlib.sha256(material).hexdigest()[:63]


def bump_versions(
    current: Mapping[str, str], resources: Iterable[str], write_key_hash: str, body_hash: str
) -> dict[str, str]:
    """The new versions of `resources` after one write (only those resources)."""
    return {
        resource: next_version(current.get(resource, BASE_VERSION), write_key_hash, body_hash)
        for resource in sorted(set(resources))
    }


def fingerprint(resources: Iterable[str], versions: Mapping[str, str]) -> str:
    """sha256 over the sorted (resource, version) pairs this lineage wrote; "" when none."""
    written = sorted((r, versions[r]) for r in set(resources) if versions.get(r, BASE_VERSION))
    if not written:
        return ""
    material = "\x1e".join(f"{resource}\x1f{version}" for resource, version in written)
    return hashlib.sha256(material.encode()).hexdigest()
