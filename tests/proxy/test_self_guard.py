"""Which targets are Groundhog's own (proxy/self_guard.py): refused, and nothing else is."""

from __future__ import annotations

import asyncio

import pytest

from proxy.self_guard import AdminAddressError, SelfGuard, parse_admin_address


def _guard(resolver_url: str = "http://127.0.0.1:8070", *, resolve_name: bool = True) -> SelfGuard:
    return SelfGuard.build(
        resolver_url=resolver_url,
        listen=[("127.0.0.1", 8080)],
        admin_addresses=["9000", "10.1.2.3:9443"],
        resolve_name=resolve_name,
    )


def _refusal(guard: SelfGuard, host: str, port: int) -> str | None:
    return asyncio.run(guard.refusal(host, port))


@pytest.mark.parametrize(
    ("host", "port", "what"),
    [
        ("127.0.0.1", 8070, "the resolver"),
        ("127.0.0.2", 8070, "the resolver"),  # every loopback address reaches a loopback bind
        ("localhost", 8070, "the resolver"),
        ("::1", 8070, "the resolver"),
        ("[::1]", 8070, "the resolver"),
        ("::ffff:127.0.0.1", 8070, "the resolver"),
        ("0.0.0.0", 8070, "the resolver"),
        ("127.0.0.1", 8080, "this proxy's listen address"),
        ("localhost.", 8080, "this proxy's listen address"),
        ("127.0.0.1", 9000, "an admin address (9000)"),
        ("10.1.2.3", 9443, "an admin address (10.1.2.3:9443)"),
    ],
)
def test_groundhogs_own_endpoints_are_refused(host: str, port: int, what: str) -> None:
    reason = _refusal(_guard(), host, port)
    assert reason is not None and what in reason and f"{host}:{port}" in reason


@pytest.mark.parametrize(
    ("host", "port"),
    [
        ("127.0.0.1", 8071),  # a world on loopback at another port is a world
        ("127.0.0.1", 443),
        ("10.1.2.3", 9000),  # 9000 is guarded on local addresses only
        ("10.1.2.4", 9443),
        ("api.example.com", 8443),
    ],
)
def test_other_targets_pass(host: str, port: int) -> None:
    assert _refusal(_guard(), host, port) is None


def test_a_name_that_resolves_to_a_guarded_address_is_refused() -> None:
    guard = _guard("http://localhost:8070")
    reason = _refusal(guard, "127.0.0.1", 8070)
    assert reason is not None and "the resolver" in reason
    # `localhost` itself resolves (via the system resolver) to loopback.
    assert _refusal(_guard(), "localhost", 9000) is not None


def test_a_named_resolver_is_guarded_by_name_and_by_its_addresses() -> None:
    guard = _guard("http://resolver.internal:8070", resolve_name=False)
    assert _refusal(guard, "resolver.internal", 8070) is not None
    assert _refusal(guard, "RESOLVER.internal", 8070) is not None
    assert _refusal(guard, "other.internal", 8070) is None


def test_an_https_resolver_without_a_port_is_guarded_at_443() -> None:
    guard = _guard("https://127.0.0.1")
    assert _refusal(guard, "127.0.0.1", 443) is not None


@pytest.mark.parametrize(
    ("entry", "parsed"),
    [("8070", ("0.0.0.0", 8070)), ("10.0.0.1:81", ("10.0.0.1", 81)), ("[::1]:82", ("::1", 82))],
)
def test_admin_addresses_parse(entry: str, parsed: tuple[str, int]) -> None:
    assert parse_admin_address(entry) == parsed


@pytest.mark.parametrize("entry", ["", "host", "host:", "70000", "a:b", "0"])
def test_bad_admin_addresses_name_the_form(entry: str) -> None:
    with pytest.raises(AdminAddressError, match="PORT or HOST:PORT"):
        parse_admin_address(entry)
