"""Relative links in the user docs point at files and headings that exist."""

from __future__ import annotations

import re

import pytest

from engine.policy import Decision
from tests.support.servers import REPO_ROOT

DOCS = REPO_ROOT / "docs"
PAGES = ["quickstart.md", "concepts.md", "troubleshooting.md", "api.md"]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _anchors(markdown: str) -> set[str]:
    """GitHub-style heading slugs: lowercase, punctuation dropped, spaces to hyphens."""
    slugs = set()
    for heading in re.findall(r"^#+ (.+)$", markdown, flags=re.M):
        text = re.sub(r"[^\w\- ]", "", heading.replace("`", "").lower())
        slugs.add(text.replace(" ", "-"))
    return slugs


@pytest.mark.parametrize("page", PAGES)
def test_relative_links_resolve(page: str) -> None:
    text = (DOCS / page).read_text()
    for target in LINK.findall(text):
        if re.match(r"^[a-z]+://", target) or target.startswith("<"):
            continue
        path, _, anchor = target.partition("#")
        document = (DOCS / path) if path else DOCS / page
        assert document.exists(), f"{page} links to missing {target}"
        if anchor:
            assert anchor in _anchors(document.read_text()), f"{page}: no heading #{anchor}"


def test_concepts_has_mermaid_diagrams() -> None:
    text = (DOCS / "concepts.md").read_text()
    blocks = re.findall(r"```mermaid\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 2 and all(block.split()[0] == "flowchart" for block in blocks)
    decisions = re.findall(r"^\| `([a-z-]+)` \| (?:yes|no) \|", text, flags=re.M)
    assert sorted(decisions) == sorted(str(d) for d in Decision)
