"""Header names are declared once: no runtime module spells one as a string of its own."""

from __future__ import annotations

import ast
import re

from groundhog.protocol import headers
from tests.support.servers import REPO_ROOT

RUNTIME = ("groundhog", "resolver", "store", "proxy", "worldsim", "bench")
HEADER_NAME = re.compile(r"^x-groundhog-[a-z-]+$", re.IGNORECASE)


def spelled_header_names(path: str) -> list[str]:
    tree = ast.parse((REPO_ROOT / path).read_text())
    return [
        f"{path}:{node.lineno} {node.value!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str | bytes)
        and HEADER_NAME.match(
            node.value if isinstance(node.value, str) else node.value.decode("latin-1")
        )
    ]


def test_no_runtime_module_redeclares_a_header_name() -> None:
    found = []
    for package in RUNTIME:
        for path in sorted((REPO_ROOT / package).rglob("*.py")):
            relative = str(path.relative_to(REPO_ROOT))
            if not relative.startswith("groundhog/protocol/"):
                found += spelled_header_names(relative)
    assert found == [], "import the name from groundhog.protocol.headers"


def test_the_check_finds_a_spelled_header() -> None:
    # The check above must be able to fail: the protocol module itself spells them all.
    assert len(spelled_header_names("groundhog/protocol/headers.py")) >= 11


def test_names_share_the_prefix_and_are_recognised_in_any_case() -> None:
    names = [value for key, value in vars(headers).items() if key.isupper() and key != "PREFIX"]
    names = [name for name in names if isinstance(name, str)]
    assert names and all(name.startswith(headers.PREFIX) for name in names)
    assert all(headers.is_groundhog_header(name.lower()) for name in names)
    assert not headers.is_groundhog_header("X-Groundhogish")
    assert headers.PREFIX_BYTES == b"x-groundhog-"
