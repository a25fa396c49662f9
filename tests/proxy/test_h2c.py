"""What counts as HTTP/2 prior knowledge (end to end: tests/proxy/test_grpc_end_to_end.py)."""

from __future__ import annotations

from proxy.h2c import starts_with_preface


def test_only_the_http2_preface_counts_as_prior_knowledge() -> None:
    assert starts_with_preface(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
    assert not starts_with_preface(b"GET / HTTP/1.1\r\n")
    assert not starts_with_preface(b"PRI * HTTP/1.1\r\n")
