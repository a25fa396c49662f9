"""The store's transaction machinery is the door's private part (issue 29, "one door").

store/unit.py, loop_writes.py, prepared.py and fused.py decide how a transaction opens, where it
runs and how it commits. Outside the store package only resolver/resolve_tx/ may import them;
a step of the lifecycle that reached them itself would open or run a transaction the door did
not choose. The scan reads every import (under `TYPE_CHECKING` too) of the product's packages.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.support.servers import REPO_ROOT

PRIVATE = frozenset({"store.unit", "store.loop_writes", "store.prepared", "store.fused"})
PRODUCT_PACKAGES = ("resolver", "proxy", "bench", "groundhog", "worldsim")
DOOR = REPO_ROOT / "resolver" / "resolve_tx"


def imported_modules(source: str) -> Iterator[str]:
    """Every module an import statement in `source` names, `from store import unit` as
    `store.unit` (it may be a module; the scan errs on the side of naming it)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def private_imports(source: str) -> set[str]:
    return {name for name in imported_modules(source) if name in PRIVATE}


def product_files() -> Iterator[Path]:
    for package in PRODUCT_PACKAGES:
        yield from (REPO_ROOT / package).rglob("*.py")


def test_only_the_door_imports_the_stores_transaction_machinery() -> None:
    outside = {
        str(path.relative_to(REPO_ROOT)): sorted(found)
        for path in product_files()
        if DOOR not in path.parents and (found := private_imports(path.read_text(encoding="utf-8")))
    }
    assert outside == {}, "import these through resolver/resolve_tx instead"


def test_the_door_is_what_reaches_them() -> None:
    """The scan looks where the imports are: the door's own parts name every private module."""
    found = set().union(
        *(private_imports(path.read_text(encoding="utf-8")) for path in DOOR.glob("*.py"))
    )
    assert found == PRIVATE


def test_every_spelling_of_an_import_is_caught() -> None:
    source = """
from typing import TYPE_CHECKING
import store.unit
from store import fused
from store.loop_writes import LoopWriter
if TYPE_CHECKING:
    from store.prepared import Executor
from store import claims, exchanges
from .unit import relative
"""
    assert private_imports(source) == PRIVATE
