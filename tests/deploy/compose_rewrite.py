"""Translate a compose service's values from its container's world to this machine's.

Inside compose, `http://resolver:8070` and `/data` mean another container and a named volume;
run locally, the same service must be told `http://127.0.0.1:<port>` and a folder under a test's
temporary root. These rules are shared by every service, so they live apart from the module
that walks the compose file (compose_local.py). Without them a local run of a compose service
would talk to hosts that do not exist here or write into `/data` on the test machine.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

_INTERPOLATION = re.compile(
    r"\$\$|\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?-)(?P<default>[^}]*))?\}"
    r"|\$(?P<bare>[A-Za-z_][A-Za-z0-9_]*)"
)
_ABSOLUTE_FOLDER = re.compile(r"(/[\w.-]+)+")


class ComposeError(ValueError):
    """The compose file cannot be turned into local processes; the message says where."""


def interpolate(value: str, environ: Mapping[str, str]) -> str:
    """Compose's variable substitution: ${VAR}, ${VAR:-default}, ${VAR-default}, $VAR, $$."""

    def replace_one(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group("name") or match.group("bare")
        operator, default = match.group("op"), match.group("default") or ""
        if operator == ":-" and not environ.get(name):
            return default
        if operator == "-" and name not in environ:
            return default
        return environ.get(name, "")

    return _INTERPOLATION.sub(replace_one, value)


def volume_mounts(name: str, service: Mapping[str, Any], volumes_root: Path) -> dict[str, Path]:
    """Container path -> local folder for each volume: named ones by name, binds by path."""
    mounts: dict[str, Path] = {}
    for entry in service.get("volumes") or []:
        if not isinstance(entry, str):
            raise ComposeError(f"service {name}: write volumes in the short form SOURCE:TARGET")
        source, _, rest = entry.partition(":")
        target = rest.split(":")[0]
        if not target.startswith("/"):
            raise ComposeError(f"service {name}: volume {entry!r} has no absolute target")
        if source.startswith((".", "/")):
            mounts[target] = volumes_root / "bind" / source.strip("./").replace("/", "-")
        else:
            mounts[target] = volumes_root / source
    return mounts


def container_folders(
    all_mounts: Iterable[Mapping[str, Path]], image_env: Mapping[str, str]
) -> set[str]:
    """Container folders a value may name: every mount point and the image's own folders."""
    folders = {target for mounts in all_mounts for target in mounts}
    folders |= {value for value in image_env.values() if _ABSOLUTE_FOLDER.fullmatch(value)}
    return folders


def local_folders(
    folders: Iterable[str], mounts: Mapping[str, Path], scratch: Path
) -> tuple[dict[str, Path], dict[Path, Path]]:
    """Where each container folder lives here, and the symlinks nested mounts need.

    A mounted folder is its volume; any other is private to the service, under `scratch`. A
    mount inside another folder (the CA volume at /data/ca) becomes a symlink inside that
    folder's local copy, so a program that derives `<data>/ca` finds the shared volume.
    """
    local = {folder: mounts.get(folder, scratch / folder.strip("/")) for folder in folders}
    links: dict[Path, Path] = {}
    for target, volume in mounts.items():
        for parent in folders:
            if parent != target and target.startswith(parent + "/"):
                links[local[parent] / target[len(parent) + 1 :]] = volume
    return local, links


def rewrite_paths(value: str, local: Mapping[str, Path]) -> str:
    """Container folders in `value` (also inside sqlite:////data/x URLs) become local ones."""
    ordered = sorted(local, key=len, reverse=True)
    if not ordered:
        return value
    pattern = re.compile(r"(?<![\w.-])(" + "|".join(map(re.escape, ordered)) + r")(?=/|$)")
    return pattern.sub(lambda match: str(local[match.group(1)]), value)


def rewrite_hosts(value: str, addresses: Mapping[str, str]) -> str:
    """Service names in URLs (after `//` or `@`) become the local address of that service.

    `addresses` maps `service:container_port` (or a bare `service`) to `host:port` here.
    """
    if not addresses:
        return value
    names = sorted({key.split(":")[0] for key in addresses}, key=len, reverse=True)
    pattern = re.compile(
        r"(?P<lead>//|@)(?P<host>" + "|".join(map(re.escape, names)) + r")(?::(?P<port>\d+))?"
        r"(?=[/?#]|$)"
    )

    def replace_one(match: re.Match[str]) -> str:
        host, port = match.group("host"), match.group("port")
        if port is not None and f"{host}:{port}" in addresses:
            return match.group("lead") + addresses[f"{host}:{port}"]
        if host in addresses:
            target = addresses[host]
            keep_port = f":{port}" if port is not None and ":" not in target else ""
            return match.group("lead") + target + keep_port
        raise ComposeError(f"{match.group(0)!r}: service {host} listens on no port {port}")

    return pattern.sub(replace_one, value)
