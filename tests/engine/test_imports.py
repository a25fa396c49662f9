"""The layering holds: engine/ beneath both shells, and the proxy on neither the resolver nor
the store nor FastAPI.

engine/ imports no SQL, HTTP, web framework or mitmproxy, and nothing of the shells (not even
for type checking: the store's rows are read through engine/refs.py's protocols); the proxy
imports no store and no resolver module: the ask path it runs as a lease holder is engine/'s;
and neither the resolver nor the store imports the proxy: what both need (the resolve ask a
request becomes, a served answer's sandbox headers) is engine/'s or groundhog/protocol's.
A sidecar process loads neither FastAPI nor SQLAlchemy nor the store nor the resolver.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.servers import REPO_ROOT

FRAMEWORKS = {"sqlalchemy", "fastapi", "starlette", "mitmproxy", "httpx", "uvicorn", "alembic"}
SHELLS = {"resolver", "store"}


def imported_modules(package: str) -> dict[str, set[Path]]:
    """Every module a package's files import (at any depth of the file), with its importers."""
    found: dict[str, set[Path]] = {}
    for path in sorted((REPO_ROOT / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
                names += [f"{node.module}.{alias.name}" for alias in node.names]
            for name in names:
                found.setdefault(name, set()).add(path.relative_to(REPO_ROOT))
    return found


def roots(modules: dict[str, set[Path]]) -> set[str]:
    return {name.split(".")[0] for name in modules}


def test_the_engine_imports_no_framework_and_neither_shell() -> None:
    imported = imported_modules("engine")
    assert not roots(imported) & FRAMEWORKS, {
        name: paths for name, paths in imported.items() if name.split(".")[0] in FRAMEWORKS
    }
    shells = SHELLS | {"proxy", "services", "worldsim", "bench"}
    assert not roots(imported) & shells, {
        name: paths for name, paths in imported.items() if name.split(".")[0] in shells
    }


def test_the_proxy_imports_neither_the_resolver_nor_the_store() -> None:
    imported = imported_modules("proxy")
    shells = {name: paths for name, paths in imported.items() if name.split(".")[0] in SHELLS}
    assert shells == {}, "the proxy imports a shell's module: what it needs belongs in engine/"


@pytest.mark.parametrize("shell", sorted(SHELLS))
def test_neither_the_resolver_nor_the_store_imports_the_proxy(shell: str) -> None:
    imported = imported_modules(shell)
    proxy = {name: paths for name, paths in imported.items() if name.split(".")[0] == "proxy"}
    assert proxy == {}, f"{shell}/ imports the proxy: what both need belongs in engine/"


def test_a_sidecar_process_loads_no_web_framework_no_database_no_store_no_resolver() -> None:
    program = (
        "import proxy.addon, sys; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'fastapi', 'starlette', 'sqlalchemy', 'alembic', 'uvicorn', 'store', 'resolver'}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", program],
        capture_output=True, text=True, cwd=REPO_ROOT, timeout=120, check=True,
    )  # fmt: skip
    assert done.stdout.strip() == "[]", done.stdout
