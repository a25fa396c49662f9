"""Turn docker-compose.yml's Groundhog services into local processes: command line and env.

There is no Docker engine where the tests run, yet the compose file must not drift from what
the programs accept. This module reads the compose file and, for each service of the Groundhog
image, gives the command it would run and the environment it would see, translated for this
machine (compose_rewrite.py): service host names become 127.0.0.1 on the port chosen for that
service here, volumes become folders under one local root, `${VAR:-default}` is interpolated
as compose does. A test can then start every service's *own* command with
tests/support/servers.py. Without it, such a test would restate the compose file by hand and
keep passing while the file broke.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from tests.deploy import dockerfile_parser
from tests.deploy.compose_rewrite import (
    ComposeError,
    container_folders,
    interpolate,
    local_folders,
    rewrite_hosts,
    rewrite_paths,
    volume_mounts,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = REPO_ROOT / "docker-compose.yml"
DOCKERFILE = REPO_ROOT / "Dockerfile"
LOCAL_HOST = "127.0.0.1"

# The groundhog subcommands a container may run, each with its `python -m` module entry.
MODULE_ENTRIES = {
    "resolver": "resolver",
    "proxy": "proxy",
    "worldsim": "worldsim",
    "bench": "bench",
}

__all__ = ["ComposeError", "LocalService", "local_services"]


@dataclass(frozen=True)
class LocalService:
    """One compose service as a local process."""

    name: str
    subcommand: str
    # The command after the subcommand, without --host/--port (start_server appends those).
    arguments: list[str]
    # Where it listens in its container, and where it listens here (None: a job, no server).
    container_port: int | None
    port: int | None
    env: dict[str, str]
    # "http" (GET health_path answers 200), "tcp" (the port accepts connections) or "none".
    readiness: str
    health_path: str | None
    depends_on: list[str] = field(default_factory=list)
    # Container folder -> local folder, and the symlinks that stand in for nested mounts.
    folders: dict[str, Path] = field(default_factory=dict)
    links: dict[Path, Path] = field(default_factory=dict)

    @property
    def is_server(self) -> bool:
        return self.port is not None

    @property
    def module(self) -> str:
        return MODULE_ENTRIES[self.subcommand]

    def module_args(self) -> list[str]:
        """What follows `python -m` for tests/support/servers.start_server (no host, no port)."""
        return [self.module, *self.arguments]

    def command_line(self, python: str = sys.executable) -> list[str]:
        """The full local command, as the container would run it but bound to loopback."""
        command = [python, "-m", *self.module_args()]
        if self.port is not None:
            command += ["--host", LOCAL_HOST, "--port", str(self.port)]
        return command

    def with_env(self, **values: str) -> LocalService:
        return replace(self, env={**self.env, **values})

    def prepare(self) -> None:
        """Create the service's folders and nested-mount links, as a container would see them."""
        for folder in self.folders.values():
            folder.mkdir(parents=True, exist_ok=True)
        for link, volume in self.links.items():
            volume.mkdir(parents=True, exist_ok=True)
            if link.is_symlink() and link.resolve() == volume.resolve():
                continue
            if link.exists() or link.is_symlink():
                raise ComposeError(f"{link} exists and is not the mount of {volume}")
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(volume, target_is_directory=True)


def load_compose(path: Path = COMPOSE_FILE) -> dict[str, Any]:
    document = yaml.safe_load(path.read_text())
    if not isinstance(document, dict) or not isinstance(document.get("services"), dict):
        raise ComposeError(f"{path}: no `services:` mapping")
    return document


def active_services(compose: Mapping[str, Any], profiles: Iterable[str] = ()) -> list[str]:
    """Services compose would start: those without profiles, and those in a chosen profile."""
    chosen = set(profiles)
    return [
        name
        for name, service in compose["services"].items()
        if not service.get("profiles") or chosen & set(service["profiles"])
    ]


def is_groundhog_service(service: Mapping[str, Any]) -> bool:
    """A service of this repository's image (it is built here), as opposed to e.g. postgres."""
    return "build" in service


def service_command(name: str, service: Mapping[str, Any]) -> list[str]:
    command = service.get("command")
    if isinstance(command, str):
        raise ComposeError(f"service {name}: write `command:` as a list, not the shell string")
    if not command:
        raise ComposeError(f"service {name}: no `command:`; it must name a groundhog subcommand")
    if command[0] not in MODULE_ENTRIES:
        raise ComposeError(
            f"service {name}: command {command[0]!r} is not a groundhog subcommand a container "
            f"runs; valid: {', '.join(sorted(MODULE_ENTRIES))}"
        )
    return [str(part) for part in command]


def split_listen(name: str, command: list[str]) -> tuple[list[str], int | None]:
    """Remove --host/--port (and their values) from a command; answer the port."""
    arguments: list[str] = []
    port: int | None = None
    tokens = iter(command[1:])
    for token in tokens:
        flag, equals, inline = token.partition("=")
        if flag in ("--host", "--port"):
            value = inline if equals else next(tokens, None)
            if value is None:
                raise ComposeError(f"service {name}: {flag} has no value")
            if flag == "--port":
                try:
                    port = int(value)
                except ValueError as error:
                    raise ComposeError(f"service {name}: --port {value!r} is no number") from error
            continue
        arguments.append(token)
    return arguments, port


def environment(name: str, service: Mapping[str, Any]) -> dict[str, str | None]:
    """The service's environment; None marks a pass-through (set only if the caller has it)."""
    raw = service.get("environment") or {}
    if isinstance(raw, list):
        pairs: dict[str, str | None] = {}
        for item in raw:
            key, equals, value = str(item).partition("=")
            pairs[key] = value if equals else None
        return pairs
    if not isinstance(raw, dict):
        raise ComposeError(f"service {name}: `environment:` must be a mapping or a list")
    return {str(key): None if value is None else str(value) for key, value in raw.items()}


def readiness(service: Mapping[str, Any], image_probe: list[str]) -> tuple[str, str | None]:
    healthcheck = service.get("healthcheck")
    if healthcheck and healthcheck.get("disable"):
        return "none", None
    test = healthcheck.get("test") if healthcheck else image_probe
    joined = " ".join(str(part) for part in test) if isinstance(test, list) else str(test)
    if "tcp://" in joined:
        return "tcp", None
    match = re.search(r"https?://[^/\s]+(/\S*)", joined)
    if match:
        return "http", match.group(1)
    raise ComposeError(f"cannot tell how readiness is probed from healthcheck {joined!r}")


def start_order(depends: Mapping[str, list[str]]) -> list[str]:
    """Dependencies first, otherwise in file order; a cycle is an error."""
    order: list[str] = []
    visiting: set[str] = set()

    def visit(name: str, chain: tuple[str, ...]) -> None:
        if name in order:
            return
        if name in visiting:
            raise ComposeError(f"depends_on cycle: {' -> '.join((*chain, name))}")
        visiting.add(name)
        for dependency in depends[name]:
            visit(dependency, (*chain, name))
        visiting.discard(name)
        order.append(name)

    for name in depends:
        visit(name, ())
    return order


def _image_defaults() -> tuple[dict[str, str], list[str]]:
    final = dockerfile_parser.load(DOCKERFILE).final
    image_env = {k: v for k, v in final.environment().items() if k.startswith("GROUNDHOG_")}
    probe = final.last("HEALTHCHECK")
    return image_env, (probe.exec_form() if probe else None) or []


def local_services(
    compose: Mapping[str, Any] | None = None,
    *,
    volumes_root: Path,
    profiles: Iterable[str] = (),
    ports: Mapping[str, int] | None = None,
    addresses: Mapping[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> dict[str, LocalService]:
    """The active Groundhog services of `compose`, in start order, as local processes.

    `ports` picks each service's local port (default: its container port). `addresses` gives
    `host:port` for services that are not Groundhog's (e.g. {"postgres": "127.0.0.1:5432"}).
    `environ` answers `${VAR}` and pass-through variables (default: none set). The image's own
    GROUNDHOG_* environment and default probe come from the Dockerfile's final stage.
    """
    compose = load_compose() if compose is None else compose
    environ = {} if environ is None else environ
    ports = ports or {}
    addresses = dict(addresses or {})
    image_env, image_probe = _image_defaults()
    services = compose["services"]

    names = active_services(compose, profiles)
    groundhog = [name for name in names if is_groundhog_service(services[name])]
    commands = {name: service_command(name, services[name]) for name in groundhog}
    listening = {name: split_listen(name, command) for name, command in commands.items()}

    taken: dict[int, str] = {}
    for name, (_, container_port) in listening.items():
        if container_port is None:
            continue
        local_port = ports.get(name, container_port)
        if local_port in taken:
            raise ComposeError(
                f"services {taken[local_port]} and {name} would both listen on local port "
                f"{local_port}: choose one for each in `ports=`"
            )
        taken[local_port] = name
        addresses[f"{name}:{container_port}"] = f"{LOCAL_HOST}:{local_port}"
    for name in names:
        if name not in listening:
            addresses.setdefault(name, LOCAL_HOST)

    depends: dict[str, list[str]] = {}
    for name in groundhog:
        declared = list(services[name].get("depends_on") or [])
        for dependency in declared:
            if dependency not in names:
                raise ComposeError(f"service {name} depends on {dependency}, which is not active")
        depends[name] = [dependency for dependency in declared if dependency in groundhog]

    mounts = {name: volume_mounts(name, services[name], volumes_root) for name in names}
    folders = container_folders(mounts.values(), image_env)

    result: dict[str, LocalService] = {}
    for name in start_order(depends):
        local, links = local_folders(folders, mounts[name], volumes_root / "scratch" / name)
        env: dict[str, str] = {}
        for key, value in {**image_env, **environment(name, services[name])}.items():
            if value is None:
                if key in environ:
                    env[key] = environ[key]
                continue
            env[key] = rewrite_paths(rewrite_hosts(interpolate(value, environ), addresses), local)
        arguments, container_port = listening[name]
        probe_kind, health_path = readiness(services[name], image_probe)
        result[name] = LocalService(
            name=name,
            subcommand=commands[name][0],
            arguments=[rewrite_paths(rewrite_hosts(a, addresses), local) for a in arguments],
            container_port=container_port,
            port=None if container_port is None else ports.get(name, container_port),
            env=env,
            readiness=probe_kind,
            health_path=health_path,
            depends_on=depends[name],
            folders=local,
            links=links,
        )
    return result
