"""docker-compose.yml: valid for compose itself, healthy start order, env-only configuration.

`docker-compose config` (Debian's docker-compose 1.29, or the `docker compose` plugin where it
exists) validates the file against compose's schema without a Docker engine. The rest reads
the YAML: which services run in which profile, in what order, on which volumes, and whether each
command is one the `groundhog` entry point and the module entries accept.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.compose_local import (
    MODULE_ENTRIES,
    REPO_ROOT,
    active_services,
    is_groundhog_service,
    service_command,
    split_listen,
)

APT_LINE = "apt-get update && apt-get install -y docker-compose"
WORLDS = {
    "worldsim",
    "worldsim-uncooperative",
    "worldsim-shop",
    "worldsim-shop-uncooperative",
    "worldsim-mcp",
}
DEFAULT_SERVICES = WORLDS | {"resolver", "proxy", "bench"}
POSTGRES_SERVICES = {
    "postgres",
    "resolver-a",
    "resolver-b",
    "proxy-a",
    "proxy-b",
    "bench-replicas",
}
DOCUMENTED_PORTS = {"resolver": 8070, "proxy": 8080, "worldsim": 8090}


def compose_command() -> list[str] | None:
    """The compose CLI here: the v2 plugin if the docker CLI has it, else docker-compose v1."""
    if shutil.which("docker"):
        probe = subprocess.run(
            ["docker", "compose", "version"], capture_output=True, text=True, timeout=30
        )
        if probe.returncode == 0:
            return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    return None


@pytest.fixture(scope="module")
def compose_cli() -> list[str]:
    command = compose_command()
    if command is None:
        pytest.skip(f"no docker compose / docker-compose on PATH (install: {APT_LINE})")
    return command


def run_config(
    cli: list[str], compose_file: Path, home: Path, *extra: str
) -> subprocess.CompletedProcess[str]:
    # The caller's own GROUNDHOG_* variables would change what the file interpolates to.
    environment = {k: v for k, v in os.environ.items() if not k.startswith("GROUNDHOG_")}
    return subprocess.run(
        [*cli, "--project-directory", str(REPO_ROOT), "-f", str(compose_file), *extra, "config"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**environment, "HOME": str(home)},
    )


@pytest.mark.parametrize("profile", [[], ["--profile", "postgres"]], ids=["default", "postgres"])
def test_compose_accepts_the_file(
    compose_cli: list[str], profile: list[str], tmp_path: Path
) -> None:
    result = run_config(compose_cli, REPO_ROOT / "docker-compose.yml", tmp_path, *profile)
    assert result.returncode == 0, result.stderr
    rendered = yaml.safe_load(result.stdout)
    services = rendered["services"]
    assert {name for name in services if "profiles" not in services[name]} == DEFAULT_SERVICES
    assert set(rendered["volumes"]) >= {"store", "ca"}
    if profile:
        # (docker compose v2 renders only the active profiles; v1 renders every service.)
        assert set(services) == DEFAULT_SERVICES | POSTGRES_SERVICES
        # Interpolation happened: the default password reached the replicas' database URL.
        database_url = services["resolver-a"]["environment"]["GROUNDHOG_DATABASE_URL"]
        assert database_url == "postgresql+psycopg://groundhog:groundhog@postgres:5432/groundhog"


@pytest.mark.parametrize(
    ("old", "new", "complaint"),
    [
        ("condition: service_healthy", "condition: service_hea1thy", "service_hea1thy"),
        ("  store:\n", "  st0re:\n", "store"),
        ('    command: ["worldsim"', '    comand: ["worldsim"', "comand"),
    ],
)
def test_compose_rejects_a_broken_copy(
    compose_cli: list[str], tmp_path: Path, old: str, new: str, complaint: str
) -> None:
    text = (REPO_ROOT / "docker-compose.yml").read_text()
    assert old in text, f"the mutation no longer applies: {old!r}"
    broken = tmp_path / "docker-compose.yml"
    broken.write_text(text.replace(old, new))
    result = run_config(compose_cli, broken, tmp_path)
    assert result.returncode != 0
    assert complaint in result.stderr + result.stdout


# --- structure, read from the YAML ----------------------------------------------------------


def test_profiles_pick_the_topologies(compose: dict[str, Any]) -> None:
    assert set(active_services(compose)) == DEFAULT_SERVICES
    assert set(active_services(compose, ["postgres"])) == DEFAULT_SERVICES | POSTGRES_SERVICES


def test_every_dependency_waits_for_a_healthy_service(compose: dict[str, Any]) -> None:
    services = compose["services"]
    for name, service in services.items():
        depends_on = service.get("depends_on") or {}
        assert isinstance(depends_on, dict), f"{name}: depends_on needs conditions, not a list"
        for dependency, rule in depends_on.items():
            assert rule == {"condition": "service_healthy"}, f"{name} -> {dependency}: {rule}"
            probe = services[dependency].get("healthcheck") or {}
            assert probe.get("test") and not probe.get("disable"), f"{dependency} has no probe"
    worlds = WORLDS
    assert set(services["bench"]["depends_on"]) == worlds | {"resolver", "proxy"}
    assert set(services["bench-replicas"]["depends_on"]) == worlds | {
        "resolver-a",
        "proxy-a",
        "proxy-b",
    }
    # The replicas' benchmark sends a group's siblings through both proxies in turn.
    command = services["bench-replicas"]["command"]
    assert command[command.index("--proxy-url") + 1] == "http://proxy-a:8080,http://proxy-b:8080"
    assert "--uncooperative" in services["worldsim-uncooperative"]["command"]
    assert services["worldsim-shop-uncooperative"]["command"][-3:] == [
        "--world",
        "shop",
        "--uncooperative",
    ]
    # The MCP world has one mode (uncooperative) and takes no --uncooperative to get it.
    assert services["worldsim-mcp"]["command"][-2:] == ["--world", "mcp"]
    for bench in ("bench", "bench-replicas"):
        command = services[bench]["command"]
        assert command[command.index("--worlds-run") + 1] == "research,shop,mcp"
        assert command[command.index("--mcp-world-url") + 1] == "http://worldsim-mcp:8090"
    assert set(services["proxy"]["depends_on"]) == {"resolver"}
    for replica in ("resolver-a", "resolver-b"):
        assert "postgres" in services[replica]["depends_on"]
    # The replicas' first starts both create the schema: they must not race.
    assert "resolver-a" in services["resolver-b"]["depends_on"]


def test_each_server_probes_its_own_port(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        if not is_groundhog_service(service):
            continue
        _, port = split_listen(name, service_command(name, service))
        probe = service["healthcheck"]
        if port is None:
            assert probe == {"disable": True}, f"{name} is a job: its probe must be disabled"
            continue
        target = probe["test"][-1]
        assert probe["test"][:3] == ["CMD", "python", "/opt/groundhog/healthcheck.py"], name
        assert f"127.0.0.1:{port}" in target, f"{name} listens on {port} but probes {target}"


def test_ports_are_the_documented_ones_and_publish_on_loopback(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        if is_groundhog_service(service):
            subcommand = service_command(name, service)[0]
            _, port = split_listen(name, service_command(name, service))
            if subcommand in DOCUMENTED_PORTS:
                assert port == DOCUMENTED_PORTS[subcommand], f"{name} listens on {port}"
        for published in service.get("ports") or []:
            assert published.startswith("127.0.0.1:"), f"{name} publishes {published} publicly"


def test_the_ca_volume_is_written_by_resolvers_and_read_only_elsewhere(
    compose: dict[str, Any],
) -> None:
    for name, service in compose["services"].items():
        mounts = [v for v in service.get("volumes") or [] if v.startswith("ca:")]
        if not is_groundhog_service(service):
            continue
        subcommand = service_command(name, service)[0]
        if subcommand == "resolver":
            assert mounts == ["ca:/data/ca"], name
            environment = service["environment"]
            assert environment["GROUNDHOG_CA_DIR"] == "/data/ca", name
        elif subcommand in ("proxy", "bench"):
            # The proxy keeps its CA in <--data>/ca: the shared volume, mounted read-only there.
            assert mounts == ["ca:/data/ca:ro"], name
    resolver = compose["services"]["resolver"]
    assert "store:/data" in resolver["volumes"]
    assert "./bench/results:/results" in compose["services"]["bench"]["volumes"]
    assert "/results" in compose["services"]["bench"]["command"]


def test_each_proxy_keeps_its_lease_log_on_a_volume_of_its_own(compose: dict[str, Any]) -> None:
    """Branch leases are on by default: the log of hits served and not yet shipped, in
    <--data>/leases, must outlive the container, and two proxies sharing one would mix two
    holders' hits."""
    lease_volumes: list[str] = []
    for name, service in compose["services"].items():
        if not is_groundhog_service(service) or service_command(name, service)[0] != "proxy":
            continue
        leases = [v for v in service.get("volumes") or [] if v.endswith(":/data/leases")]
        assert len(leases) == 1, f"{name} keeps <--data>/leases in the container"
        volume = leases[0].split(":")[0]
        assert volume in compose["volumes"], name
        lease_volumes.append(volume)
    assert len(lease_volumes) >= 3 and len(set(lease_volumes)) == len(lease_volumes)


def test_configuration_is_groundhog_env_only(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        assert "env_file" not in service, f"{name}: configuration goes through GROUNDHOG_* env"
        if not is_groundhog_service(service):
            continue
        keys = set(service.get("environment") or {})
        assert all(key.startswith("GROUNDHOG_") for key in keys), f"{name}: {sorted(keys)}"
        assert "configs" not in service and "secrets" not in service, name


def test_replicas_share_one_postgres_database(compose: dict[str, Any]) -> None:
    services = compose["services"]
    urls = {
        services[name]["environment"]["GROUNDHOG_DATABASE_URL"]
        for name in ("resolver-a", "resolver-b")
    }
    (url,) = urls
    assert url.startswith("postgresql+psycopg://") and "@postgres:5432/" in url
    assert services["resolver"]["environment"]["GROUNDHOG_DATABASE_URL"].startswith("sqlite:")


# --- the commands name real entry points ----------------------------------------------------


def groundhog_commands(compose: dict[str, Any]) -> dict[str, list[str]]:
    return {
        name: service_command(name, service)
        for name, service in compose["services"].items()
        if is_groundhog_service(service)
    }


def test_every_command_names_a_groundhog_subcommand(compose: dict[str, Any]) -> None:
    commands = groundhog_commands(compose)
    assert {command[0] for command in commands.values()} == set(MODULE_ENTRIES)


def test_the_groundhog_cli_accepts_every_command(compose: dict[str, Any]) -> None:
    """The image's entry point is `groundhog`: its parser must accept each service's command."""
    try:
        import typer.main

        from groundhog.cli import app
    except ImportError as error:
        pytest.skip(f"groundhog.cli is not importable yet: {error}")
    group = typer.main.get_command(app)
    context = group.make_context("groundhog", ["--help"], resilient_parsing=True)
    for name, command in groundhog_commands(compose).items():
        subcommand = group.get_command(context, command[0])  # type: ignore[attr-defined]
        assert subcommand is not None, f"{name}: `groundhog {command[0]}` does not exist"
        # Parses the options exactly as a container start would, without running anything.
        subcommand.make_context(command[0], list(command[1:]))


@pytest.mark.slow
def test_every_module_entry_accepts_its_command(compose: dict[str, Any]) -> None:
    """`python -m <part> --help` lists every option a compose command passes."""
    missing = [m for m in MODULE_ENTRIES.values() if not (REPO_ROOT / m / "__main__.py").exists()]
    if missing:
        pytest.skip(f"module entries not written yet: {', '.join(missing)}")
    commands = groundhog_commands(compose)
    modules = sorted({MODULE_ENTRIES[command[0]] for command in commands.values()})
    # Started together: each imports its heavy dependencies (mitmproxy, scipy) on its own.
    children = {
        module: subprocess.Popen(
            [sys.executable, "-m", module, "--help"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO_ROOT,
        )
        for module in modules
    }
    helps: dict[str, str] = {}
    for module, child in children.items():
        stdout, stderr = child.communicate(timeout=120)
        assert child.returncode == 0, f"python -m {module} --help: {stderr}"
        helps[module] = stdout
    for name, command in commands.items():
        module = MODULE_ENTRIES[command[0]]
        flags = {token.split("=")[0] for token in command[1:] if token.startswith("--")}
        unknown = sorted(flag for flag in flags if flag not in helps[module])
        assert unknown == [], f"{name}: python -m {module} does not accept {unknown}"


def test_resolver_variables_are_resolver_settings(compose: dict[str, Any]) -> None:
    try:
        from resolver.settings import Settings
    except ImportError as error:
        pytest.skip(f"resolver.settings is not importable yet: {error}")
    fields = {f"GROUNDHOG_{name.upper()}" for name in Settings.model_fields}
    for name, service in compose["services"].items():
        if is_groundhog_service(service) and service_command(name, service)[0] == "resolver":
            unknown = sorted(set(service["environment"]) - fields)
            assert unknown == [], f"{name} sets variables the resolver does not read: {unknown}"


def test_every_resolver_requires_branch_capabilities(compose: dict[str, Any]) -> None:
    resolvers = [
        service
        for name, service in compose["services"].items()
        if is_groundhog_service(service) and service_command(name, service)[0] == "resolver"
    ]
    assert len(resolvers) >= 3  # the benchmark's, and the two replicas'
    for service in resolvers:
        assert service["environment"]["GROUNDHOG_BRANCH_CAPABILITIES"] == "required"
