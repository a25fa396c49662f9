"""The layering holds: engine/ beneath both shells, and the proxy on neither the store nor FastAPI.

engine/ imports no SQL, HTTP, web framework or mitmproxy, and nothing of the shells; the proxy
imports no store module, and of the resolver only what is still listed below, which may only
shrink (issue 54: the decision path those modules run moves into engine/ next). A sidecar
process loads neither FastAPI nor SQLAlchemy nor the store.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from tests.support.servers import REPO_ROOT

FRAMEWORKS = {"sqlalchemy", "fastapi", "starlette", "mitmproxy", "httpx", "uvicorn", "alembic"}
# The lease holder's decision path (resolver/leased_hits.py, resolver/draft_memo.py): it runs
# resolver/asks.py and the modules it drafts with, which are pure but not yet in engine/.
PROXY_STILL_IMPORTS = {"resolver.draft_memo", "resolver.leased_hits"}


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
    shells = {"resolver", "store", "proxy", "services", "worldsim", "bench"}
    assert not roots(imported) & shells, {
        name: paths for name, paths in imported.items() if name.split(".")[0] in shells
    }


def test_the_proxy_imports_no_store_and_only_the_listed_resolver_modules() -> None:
    imported = imported_modules("proxy")
    assert not {name for name in imported if name.split(".")[0] == "store"}
    resolver = {name for name in imported if name.split(".")[0] == "resolver"}
    modules = {name for name in resolver if (REPO_ROOT / f"{name.replace('.', '/')}.py").exists()}
    assert modules <= PROXY_STILL_IMPORTS, "the proxy imports the resolver: use engine/"
    assert modules == PROXY_STILL_IMPORTS, "an edge is gone: drop it from PROXY_STILL_IMPORTS"


def test_a_sidecar_process_loads_no_web_framework_no_database_and_no_store() -> None:
    program = (
        "import proxy.addon, sys; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'fastapi', 'starlette', 'sqlalchemy', 'alembic', 'uvicorn', 'store'}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", program],
        capture_output=True, text=True, cwd=REPO_ROOT, timeout=120, check=True,
    )  # fmt: skip
    assert done.stdout.strip() == "[]", done.stdout
