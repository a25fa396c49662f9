"""The store's exception root: every error the store package raises is a `StoreError`.

A caller that must tell "the store refused or failed" from a bug (the resolver's error
handlers, the CLI's messages) catches one type; without a root each new store error had to be
added to every such `except` by hand. Each concrete error keeps the builtin base its callers
already catch (a `SchemaError` is still a `RuntimeError`).
"""

from __future__ import annotations


class StoreError(Exception):
    """An error of the store package."""
