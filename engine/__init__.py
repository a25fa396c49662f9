"""The pure core both shells run: the decisions, their value types and the tape's settings.

No SQL, HTTP, web framework or mitmproxy is imported here (tests/engine/test_imports.py holds
it): the resolver is an HTTP shell over this package and the store, the proxy a mitmproxy shell
over it and a resolver client (docs/internals.md, "engine/").
"""
