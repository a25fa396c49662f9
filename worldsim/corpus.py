"""The world's state: a fixed base corpus plus the briefs a branch has published.

State is what an agent can change; noise is what the world does regardless. Keeping state in
plain immutable values (and nothing exogenous in it) is what lets the oracle re-render any read
against the base corpus and against a branch's corpus and say exactly whether the branch's
writes changed the answer. Without a separate, pure state the dependency ground truth could
only be guessed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from worldsim import noise
from worldsim.errors import WorldError

TOPICS: tuple[str, ...] = ("solar", "wind", "battery", "grid", "hydrogen", "nuclear")
DOCS_PER_TOPIC = 5
BRIEF_ID_PATTERN = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
_TOKEN = re.compile(r"[a-z0-9]+")
# The corpus is the same in every world: only the noise seed varies between worlds.
_CORPUS_SEED = 0


@dataclass(frozen=True)
class Doc:
    """One document: a base study (with an insight value) or an agent's brief (with sources)."""

    id: str
    title: str
    topic: str
    terms: tuple[str, ...]
    body: str
    author: str
    insight: float | None = None
    sources: tuple[str, ...] = ()
    revision: int = 1

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "title": self.title,
            "topic": self.topic,
            "terms": list(self.terms),
            "body": self.body,
            "author": self.author,
            "insight": self.insight,
            "sources": list(self.sources),
            "revision": self.revision,
        }


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def _base_docs() -> dict[str, Doc]:
    docs: dict[str, Doc] = {}
    for topic_index, topic in enumerate(TOPICS):
        neighbour = TOPICS[(topic_index + 1) % len(TOPICS)]
        for number in range(DOCS_PER_TOPIC):
            doc_id = f"d{topic_index * DOCS_PER_TOPIC + number + 1:02d}"
            # Two of five studies also mention the next topic, so searches overlap.
            terms = (topic, neighbour) if number >= 3 else (topic,)
            insight = round(0.2 + 0.8 * noise.uniform(_CORPUS_SEED, "insight", doc_id), 3)
            title = f"{topic.title()} study {number + 1}"
            body = (
                f"{title}: findings on {' and '.join(terms)}. "
                f"Evidence strength {insight:.3f} on a scale from 0 to 1."
            )
            docs[doc_id] = Doc(doc_id, title, topic, tuple(sorted(terms)), body, "corpus", insight)
    return docs


BASE_DOCS: Mapping[str, Doc] = MappingProxyType(_base_docs())


@dataclass(frozen=True)
class CorpusView:
    """The documents one branch sees: the base corpus overlaid with its own briefs."""

    overlay: Mapping[str, Doc] = field(default_factory=dict)

    def get(self, doc_id: str) -> Doc | None:
        return self.overlay.get(doc_id) or BASE_DOCS.get(doc_id)

    def all_docs(self) -> Iterable[Doc]:
        yield from BASE_DOCS.values()
        yield from self.overlay.values()


BASE_VIEW = CorpusView()


@dataclass(frozen=True)
class Brief:
    """A validated publication request (the body of `POST /docs`)."""

    id: str
    topic: str
    title: str
    body: str
    sources: tuple[str, ...]


class ReadOnlyDocument(WorldError):
    """A brief tried to overwrite a base-corpus study."""


def brief_terms(brief: Brief) -> tuple[str, ...]:
    """The vocabulary words a brief is indexed under (its topic and title words)."""
    words = set(tokens(brief.topic)) | set(tokens(brief.title))
    return tuple(sorted(word for word in words if word in TOPICS))


def publish(view: CorpusView, brief: Brief) -> tuple[Doc, tuple[str, ...]]:
    """The document a publication creates (a new revision if the id exists) and what it writes.

    Pure: the caller stores the document in the branch's overlay.
    """
    if brief.id in BASE_DOCS:
        raise ReadOnlyDocument(brief.id)
    previous = view.overlay.get(brief.id)
    terms = brief_terms(brief)
    doc = Doc(
        id=brief.id,
        title=brief.title,
        topic=brief.topic,
        terms=terms,
        body=brief.body,
        author="agent",
        sources=brief.sources,
        revision=previous.revision + 1 if previous else 1,
    )
    stale_terms = previous.terms if previous else ()
    writes = {f"doc:{brief.id}", f"review:{brief.id}"}
    writes.update(f"index:{term}" for term in (*terms, *stale_terms))
    return doc, tuple(sorted(writes))
