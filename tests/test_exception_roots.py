"""One exception root per package: every exception a module of `groundhog`, `engine`, `store`,
`proxy`, `resolver` or `worldsim` defines derives from its package's root, so "one of ours" is
one `except`."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

from engine.errors import EngineError
from groundhog.errors import GroundhogError, LocalProblem
from proxy.errors import ProxyError
from resolver.errors import ResolverError
from store.errors import StoreError
from worldsim.errors import WorldError

ROOTS: dict[str, type[Exception]] = {
    "groundhog": GroundhogError,
    "engine": EngineError,
    "store": StoreError,
    "proxy": ProxyError,
    "resolver": ResolverError,
    "worldsim": WorldError,
}


def exceptions_defined_in(package: str) -> list[type[BaseException]]:
    """Every exception class a module of `package` defines (not those it imports)."""
    found = []
    root = importlib.import_module(package)
    for module_info in pkgutil.walk_packages(root.__path__, prefix=f"{package}."):
        if module_info.name.endswith("__main__") or ".migrations." in module_info.name:
            continue
        if ".sitecustomize_dir" in module_info.name:
            continue  # importing it runs the interpreter's own sitecustomize a second time
        module = importlib.import_module(module_info.name)
        for _, value in inspect.getmembers(module, inspect.isclass):
            if (
                issubclass(value, BaseException)
                and not issubclass(value, Warning)
                and value.__module__ == module.__name__
            ):
                found.append(value)
    return found


@pytest.mark.parametrize("package", sorted(ROOTS))
def test_every_exception_of_a_package_derives_from_its_root(package: str) -> None:
    defined = exceptions_defined_in(package)
    assert ROOTS[package] in defined  # the scan sees the package's own classes
    strays = [f"{kind.__module__}.{kind.__qualname__}" for kind in defined]
    strays = [
        name
        for kind, name in zip(defined, strays, strict=True)
        if not issubclass(kind, ROOTS[package])
    ]
    assert strays == [], f"derive these from {ROOTS[package].__name__}"


def test_a_local_problem_reads_as_its_detail_and_keeps_its_builtin_base() -> None:
    from groundhog.launcher import LaunchError
    from groundhog.verifiers_v1 import UnstableGroupKey

    error = LaunchError("the resolver exited with code 3")
    assert isinstance(error, LocalProblem) and isinstance(error, RuntimeError)
    assert (str(error), error.status, error.title) == (
        "the resolver exited with code 3",
        None,
        "Launch failed",
    )
    assert issubclass(UnstableGroupKey, TypeError)
