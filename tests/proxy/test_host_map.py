"""`--map-host HOST=ADDR:PORT` parsed and applied (proxy/host_map.py)."""

from __future__ import annotations

import asyncio

import pytest
import typer
from mitmproxy import connection
from mitmproxy.exceptions import OptionsError
from mitmproxy.proxy import server_hooks
from mitmproxy.test import taddons

from groundhog.cli_servers import egress_args
from proxy.__main__ import main as proxy_main
from proxy.addon import GroundhogAddon
from proxy.host_map import HostMapError, mapped, parse_entry, parse_host_map


def test_an_entry_names_a_host_and_where_its_connections_go() -> None:
    assert parse_entry("API.Tavily.com.=127.0.0.1:9000") == ("api.tavily.com", ("127.0.0.1", 9000))
    assert parse_entry("api.example=[::1]:443") == ("api.example", ("::1", 443))
    assert parse_entry("api.example=staging.internal:8443") == (
        "api.example",
        ("staging.internal", 8443),
    )


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ("api.example", "HOST=ADDR:PORT"),
        ("api.example=127.0.0.1", "names no port"),
        ("api.example=127.0.0.1:0", "is not a port"),
        ("api.example=127.0.0.1:http", "is not a port"),
        ("api.example:443=127.0.0.1:9000", "is not a host name"),
        ("=127.0.0.1:9000", "HOST=ADDR:PORT"),
    ],
)
def test_a_malformed_entry_is_refused_naming_the_form(entry: str, says: str) -> None:
    with pytest.raises(HostMapError, match=says):
        parse_entry(entry)


def test_a_host_mapped_twice_to_different_places_is_refused() -> None:
    with pytest.raises(HostMapError, match="twice"):
        parse_host_map(["a.example=127.0.0.1:1", "a.example=127.0.0.1:2"])


def test_only_the_named_host_moves_whatever_its_port() -> None:
    table = parse_host_map(["api.tavily.com=127.0.0.1:9000"])
    assert mapped(table, "api.tavily.com", 443) == ("127.0.0.1", 9000)
    assert mapped(table, "API.TAVILY.COM.", 80) == ("127.0.0.1", 9000)
    assert mapped(table, "api.exa.ai", 443) == ("api.exa.ai", 443)
    assert mapped({}, "api.tavily.com", 443) == ("api.tavily.com", 443)


def test_the_addon_moves_a_mapped_connection_and_refuses_a_bad_map() -> None:
    addon = GroundhogAddon()
    with taddons.context(addon) as context:
        context.configure(addon, groundhog_map_host=["api.tavily.com=127.0.0.1:9000"])
        server = connection.Server(address=("api.tavily.com", 443), sni="api.tavily.com")
        client = connection.Client(
            peername=("127.0.0.1", 1), sockname=("127.0.0.1", 2), timestamp_start=0
        )
        hook = server_hooks.ServerConnectionHookData(client=client, server=server)

        dialled: list[tuple[str, int] | None] = []

        async def connect() -> None:  # the hook arms a connect timer on the running loop
            addon.server_connect(hook)
            dialled.append(server.address)
            addon.server_connected(hook)

        asyncio.run(connect())
        assert dialled == [("127.0.0.1", 9000)]
        assert server.sni == "api.tavily.com"
        # Once connected it answers to its own name again, so mitmproxy reuses it for the
        # host's next request (tests/proxy/test_tool_apis_end_to_end.py, kept-alive client).
        assert server.address == ("api.tavily.com", 443)
        with pytest.raises(OptionsError, match="HOST=ADDR:PORT"):
            context.configure(addon, groundhog_map_host=["api.tavily.com"])


def test_the_command_line_refuses_a_bad_map_before_starting(capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        proxy_main(["--map-host", "api.tavily.com=127.0.0.1"])
    assert exited.value.code == 2
    assert "names no port" in capsys.readouterr().err
    with pytest.raises(typer.Exit):
        egress_args(None, False, None, None, ["api.tavily.com"])
    assert egress_args(None, False, None, None, ["a.test=127.0.0.1:9"]) == [
        "--map-host",
        "a.test=127.0.0.1:9",
    ]


def test_a_captured_workers_stand_in_address_is_named_first_then_mapped() -> None:
    addon = GroundhogAddon()
    stand_in = addon.capture.stand_ins.address_for("api.tavily.com")
    with taddons.context(addon) as context:
        context.configure(addon, groundhog_map_host=["api.tavily.com=127.0.0.1:9000"])
        server = connection.Server(address=(str(stand_in), 443), sni="api.tavily.com")
        client = connection.Client(
            peername=("127.0.0.1", 1), sockname=("127.0.0.1", 2), timestamp_start=0
        )
        hook = server_hooks.ServerConnectionHookData(client=client, server=server)

        dialled: list[tuple[str, int] | None] = []

        async def connect() -> None:
            addon.server_connect(hook)
            dialled.append(server.address)
            addon.server_connected(hook)

        asyncio.run(connect())
        assert dialled == [("127.0.0.1", 9000)] and server.error is None
