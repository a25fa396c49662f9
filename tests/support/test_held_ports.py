"""The held ports stand in for a running `make up`: taken while held, free again afterwards."""

from __future__ import annotations

import contextlib
import socket

from tests.support.held_ports import held_ports, port_taken
from tests.support.servers import free_port


def test_a_held_port_cannot_be_listened_on_and_closes_connections_at_once() -> None:
    port = free_port()
    with held_ports([port]) as held:
        assert held == [port]
        assert port_taken(port)
        with socket.create_connection(("127.0.0.1", port), timeout=30) as client:
            client.settimeout(30)
            # Closed by the holder, not left hanging; a reset is as good: the client fails fast.
            with contextlib.suppress(ConnectionResetError):
                assert client.recv(1) == b""
    assert not port_taken(port)


def test_a_port_someone_else_holds_is_left_to_them() -> None:
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        with held_ports([port]) as held:
            assert held == [] and port_taken(port)
        assert port_taken(port), "still theirs after we let go"
