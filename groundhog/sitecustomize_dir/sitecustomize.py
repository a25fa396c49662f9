"""Installs the Groundhog shim at interpreter start-up when GROUNDHOG_SHIM=1 (opt-in).

`groundhog run --shim` puts this directory first on PYTHONPATH so a worker's Python code gets
keyed time/random/uuid without changing a line. Any sitecustomize this one shadows is still
run, and a shim that cannot be installed says so loudly instead of running unshimmed quietly.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _run_shadowed_sitecustomize() -> None:
    others = [entry for entry in sys.path if os.path.abspath(entry or ".") != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", others)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


def _install_shim() -> None:
    try:
        import groundhog.shim  # noqa: F401
    except ImportError:
        package_root = os.environ.get("GROUNDHOG_PACKAGE_ROOT")
        if package_root:
            sys.path.append(package_root)  # appended: it shadows none of the worker's packages
    try:
        from groundhog.shim import install, store_sync
        from groundhog.shim.state import resolve_branch

        worker = store_sync.from_environment()
        counters = None
        if worker is not None:
            # The branch's counters live in the store: resume where any earlier process of this
            # branch (or its parent, before the fork) stood.
            resolver_url, tape, token = worker
            try:
                counters = store_sync.load_counters(resolver_url, tape, resolve_branch(None), token)
            except store_sync.StoreUnavailable as error:
                sys.stderr.write(f"groundhog: shim counters not loaded from the store: {error}\n")
        state = install(counters=counters or None)
        if worker is not None:
            store_sync.Reporter(
                resolver_url, tape, state, token=token, interval=store_sync.report_interval()
            ).start()
    except Exception as error:  # start-up must go on, but never silently unshimmed
        sys.stderr.write(f"groundhog: GROUNDHOG_SHIM=1 but the shim was not installed: {error}\n")


_run_shadowed_sitecustomize()
if os.environ.get("GROUNDHOG_SHIM") == "1":
    _install_shim()
