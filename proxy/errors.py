"""The proxy's exception root: every error the proxy package raises is a `ProxyError`.

The addon answers the worker with a problem for each failure it knows, and lets mitmproxy log
the rest as bugs; one root makes "one of ours" a single check. Each concrete error keeps the
builtin base its callers already catch (a `CredentialsError` is still a `ValueError`).
"""

from __future__ import annotations


class ProxyError(Exception):
    """An error of the proxy package."""
