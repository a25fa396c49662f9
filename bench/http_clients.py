"""HTTP clients for the benchmark's rollouts, sharing one TLS context.

A run opens a client per rollout (each branch through the proxy, each live reference run), and
`httpx.Client()` builds a fresh TLS context each time by loading the whole CA bundle: about
80 ms of CPU per client with a proxy, which was half of a quick run's own CPU. The bundle does
not change during a run, so one context serves every client; verification is unchanged.
"""

from __future__ import annotations

import functools
import ssl
from typing import Any

import httpx


@functools.cache
def tls_context() -> ssl.SSLContext:
    """httpx's default verifying context, built once per process."""
    return httpx.create_ssl_context()


def client(**settings: Any) -> httpx.Client:
    """An ``httpx.Client`` that ignores proxy variables and reuses the shared TLS context."""
    return httpx.Client(trust_env=False, verify=tls_context(), **settings)
