"""tests/deploy/compose_local.py: compose services as local command lines and environments."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.deploy.compose_local import LocalService, local_services, start_order
from tests.deploy.compose_rewrite import (
    ComposeError,
    interpolate,
    local_folders,
    rewrite_hosts,
    rewrite_paths,
)

PORTS = {
    "resolver": 41070,
    "proxy": 41080,
    "worldsim": 41090,
    "worldsim-uncooperative": 41091,
    "worldsim-shop": 41092,
    "worldsim-shop-uncooperative": 41093,
    "worldsim-mcp": 41094,
}
WORLDS = [
    "worldsim",
    "worldsim-uncooperative",
    "worldsim-shop",
    "worldsim-shop-uncooperative",
    "worldsim-mcp",
]
POSTGRES_PORTS = {**PORTS, "resolver-a": 41071, "resolver-b": 41072}
POSTGRES_PORTS |= {"proxy-a": 41081, "proxy-b": 41082}


@pytest.fixture
def default_services(tmp_path: Path) -> dict[str, LocalService]:
    return local_services(volumes_root=tmp_path, ports=PORTS)


def minimal(**services: dict[str, Any]) -> dict[str, Any]:
    """A compose document of Groundhog-image services (they have `build`)."""
    return {"services": {name: {"build": ".", **body} for name, body in services.items()}}


# --- the real compose file ------------------------------------------------------------------


def test_default_profile_runs_the_four_parts_dependencies_first(
    default_services: dict[str, LocalService],
) -> None:
    order = list(default_services)
    assert set(order) == {*WORLDS, "resolver", "proxy", "bench"}
    assert order.index("resolver") < order.index("proxy") < order.index("bench")
    assert all(order.index(world) < order.index("bench") for world in WORLDS)
    assert default_services["bench"].depends_on == [*WORLDS, "resolver", "proxy"]


def test_servers_listen_on_loopback_at_the_chosen_ports(
    default_services: dict[str, LocalService],
) -> None:
    for name, port in PORTS.items():
        service = default_services[name]
        assert service.port == port
        assert service.command_line()[-4:] == ["--host", "127.0.0.1", "--port", str(port)]
        assert "--host" not in service.module_args() and "0.0.0.0" not in service.module_args()
    assert default_services["resolver"].container_port == 8070
    assert default_services["bench"].port is None
    assert "--port" not in default_services["bench"].command_line()


def test_service_host_names_become_local_addresses(
    default_services: dict[str, LocalService],
) -> None:
    assert default_services["proxy"].env["GROUNDHOG_RESOLVER_URL"] == "http://127.0.0.1:41070"
    bench = default_services["bench"]
    assert bench.env["GROUNDHOG_RESOLVER_URL"] == "http://127.0.0.1:41070"
    urls = dict(zip(bench.arguments[3::2], bench.arguments[4::2], strict=True))
    assert urls == {
        "--world-url": "http://127.0.0.1:41090",
        "--uncooperative-world-url": "http://127.0.0.1:41091",
        "--shop-world-url": "http://127.0.0.1:41092",
        "--shop-uncooperative-world-url": "http://127.0.0.1:41093",
        "--mcp-world-url": "http://127.0.0.1:41094",
        "--worlds-run": "research,shop,mcp",
        "--resolver-url": "http://127.0.0.1:41070",
        "--proxy-url": "http://127.0.0.1:41080",
    }


def test_volumes_become_folders_the_services_share(
    tmp_path: Path, default_services: dict[str, LocalService]
) -> None:
    resolver, proxy = default_services["resolver"], default_services["proxy"]
    assert resolver.arguments == ["--data", str(tmp_path / "store")]
    assert resolver.env["GROUNDHOG_DATABASE_URL"] == f"sqlite:///{tmp_path}/store/groundhog.sqlite3"
    assert resolver.env["GROUNDHOG_CA_DIR"] == str(tmp_path / "ca")
    # The proxy is not given the store; its --data is private, with the CA volume inside it
    # and its lease log on a volume of its own.
    proxy_data = Path(proxy.arguments[proxy.arguments.index("--data") + 1])
    assert proxy_data.is_relative_to(tmp_path / "scratch" / "proxy")
    assert proxy.links == {
        proxy_data / "ca": tmp_path / "ca",
        proxy_data / "leases": tmp_path / "proxy-leases",
    }
    bench = default_services["bench"]
    assert bench.arguments[:3] == ["--quick", "--out", str(tmp_path / "bind" / "bench-results")]


def test_prepare_makes_the_nested_ca_mount_a_shared_folder(
    default_services: dict[str, LocalService],
) -> None:
    resolver, proxy = default_services["resolver"], default_services["proxy"]
    resolver.prepare()
    proxy.prepare()
    proxy.prepare()  # idempotent: a second service start finds its links in place
    ca_file = Path(resolver.env["GROUNDHOG_CA_DIR"]) / "mitmproxy-ca-cert.pem"
    ca_file.write_text("certificate")
    proxy_data = Path(proxy.arguments[proxy.arguments.index("--data") + 1])
    assert (proxy_data / "ca" / "mitmproxy-ca-cert.pem").read_text() == "certificate"


def test_prepare_refuses_to_replace_a_real_folder(tmp_path: Path) -> None:
    service = local_services(volumes_root=tmp_path, ports=PORTS)["proxy"]
    (next(iter(service.links))).mkdir(parents=True)
    with pytest.raises(ComposeError, match="is not the mount of"):
        service.prepare()


def test_readiness_follows_each_healthcheck(default_services: dict[str, LocalService]) -> None:
    kinds = {name: (s.readiness, s.health_path) for name, s in default_services.items()}
    assert kinds == {
        "worldsim": ("http", "/healthz"),
        "worldsim-uncooperative": ("http", "/healthz"),
        "worldsim-shop": ("http", "/healthz"),
        "worldsim-shop-uncooperative": ("http", "/healthz"),
        "worldsim-mcp": ("http", "/healthz"),
        "resolver": ("http", "/v1/ca.pem"),
        "proxy": ("tcp", None),
        "bench": ("none", None),
    }


def test_tokens_take_the_callers_value_over_the_compose_default(tmp_path: Path) -> None:
    unset = local_services(volumes_root=tmp_path, ports=PORTS, environ={})["resolver"].env
    assert unset["GROUNDHOG_ADMIN_TOKEN"] == "compose-local-admin-token"
    given = local_services(
        volumes_root=tmp_path, ports=PORTS, environ={"GROUNDHOG_ADMIN_TOKEN": "secret"}
    )
    assert given["resolver"].env["GROUNDHOG_ADMIN_TOKEN"] == "secret"
    assert given["bench"].env["GROUNDHOG_ADMIN_TOKEN"] == "secret"
    assert "GROUNDHOG_ADMIN_TOKEN" not in given["proxy"].env


def test_postgres_profile_adds_two_resolvers_on_one_database(tmp_path: Path) -> None:
    services = local_services(
        volumes_root=tmp_path,
        profiles=["postgres"],
        ports=POSTGRES_PORTS,
        addresses={"postgres": "127.0.0.1:5432"},
        environ={"GROUNDHOG_POSTGRES_PASSWORD": "pw"},
    )
    assert {"resolver-a", "resolver-b", "proxy-a", "proxy-b"} <= set(services)
    assert "postgres" not in services, "postgres is not the Groundhog image: the caller runs it"
    urls = {services[name].env["GROUNDHOG_DATABASE_URL"] for name in ("resolver-a", "resolver-b")}
    assert urls == {"postgresql+psycopg://groundhog:pw@127.0.0.1:5432/groundhog"}
    assert services["proxy-b"].env["GROUNDHOG_RESOLVER_URL"] == "http://127.0.0.1:41072"
    replaced = services["resolver-a"].with_env(GROUNDHOG_DATABASE_URL="postgresql://x")
    assert replaced.env["GROUNDHOG_DATABASE_URL"] == "postgresql://x"
    assert services["resolver-a"].env["GROUNDHOG_DATABASE_URL"] != "postgresql://x"


def test_two_services_on_one_local_port_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ComposeError, match=r"both listen on local port 80[79]0"):
        local_services(volumes_root=tmp_path, profiles=["postgres"])


# --- synthetic compose documents ------------------------------------------------------------


def test_a_command_that_is_no_groundhog_subcommand_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ComposeError, match=r"'serve' is not a groundhog subcommand.*valid: bench"):
        local_services(minimal(api={"command": ["serve"]}), volumes_root=tmp_path)
    with pytest.raises(ComposeError, match="as a list"):
        local_services(minimal(api={"command": "resolver --port 1"}), volumes_root=tmp_path)
    with pytest.raises(ComposeError, match="no `command:`"):
        local_services(minimal(api={}), volumes_root=tmp_path)


def test_list_form_environment_and_inline_port(tmp_path: Path) -> None:
    compose = minimal(
        worldsim={
            "command": ["worldsim", "--port=9000", "--seed", "3"],
            "environment": ["A=1", "B"],
        }
    )
    (service,) = local_services(compose, volumes_root=tmp_path, environ={"B": "2"}).values()
    assert service.port == 9000 and service.arguments == ["--seed", "3"]
    assert {k: v for k, v in service.env.items() if len(k) == 1} == {"A": "1", "B": "2"}


def test_a_dependency_outside_the_active_profiles_is_refused(tmp_path: Path) -> None:
    compose = minimal(proxy={"command": ["proxy"], "depends_on": {"db": {}}})
    compose["services"]["db"] = {"image": "postgres", "profiles": ["postgres"]}
    with pytest.raises(ComposeError, match="depends on db, which is not active"):
        local_services(compose, volumes_root=tmp_path)


def test_start_order_rejects_cycles() -> None:
    assert start_order({"b": ["a"], "a": [], "c": ["b", "a"]}) == ["a", "b", "c"]
    with pytest.raises(ComposeError, match="cycle: a -> b -> a"):
        start_order({"a": ["b"], "b": ["a"]})


@pytest.mark.parametrize(
    ("value", "environ", "expected"),
    [
        ("${X:-d}", {}, "d"),
        ("${X:-d}", {"X": ""}, "d"),
        ("${X-d}", {"X": ""}, ""),
        ("${X-d}", {}, "d"),
        ("${X:-d}", {"X": "v"}, "v"),
        ("a$X/b", {"X": "v"}, "av/b"),
        ("${X}", {}, ""),
        ("cost $$5", {}, "cost $5"),
    ],
)
def test_interpolation_follows_compose(value: str, environ: dict[str, str], expected: str) -> None:
    assert interpolate(value, environ) == expected


def test_host_rewriting_matches_whole_service_names_only() -> None:
    addresses = {"resolver:8070": "127.0.0.1:1", "resolver-a:8070": "127.0.0.1:2", "db": "h"}
    assert rewrite_hosts("http://resolver-a:8070/x", addresses) == "http://127.0.0.1:2/x"
    assert rewrite_hosts("http://resolver:8070", addresses) == "http://127.0.0.1:1"
    assert rewrite_hosts("postgresql://u:p@db:5432/d", addresses) == "postgresql://u:p@h:5432/d"
    assert rewrite_hosts("http://resolvers:8070", addresses) == "http://resolvers:8070"
    with pytest.raises(ComposeError, match="listens on no port 9"):
        rewrite_hosts("http://resolver:9/", addresses)


def test_path_rewriting_takes_the_longest_folder(tmp_path: Path) -> None:
    local, links = local_folders(["/data", "/data/ca"], {"/data/ca": tmp_path / "ca"}, tmp_path)
    assert rewrite_paths("sqlite:////data/x.db", local) == f"sqlite:///{tmp_path}/data/x.db"
    assert rewrite_paths("/data/ca", local) == str(tmp_path / "ca")
    assert rewrite_paths("/database", local) == "/database"
    assert rewrite_paths("http://h/data", local) == "http://h/data"
    assert links == {tmp_path / "data" / "ca": tmp_path / "ca"}
