"""Pure renderers: each read is a function of (corpus view, seed, request key, occurrence).

Every endpoint the agent reads is rendered here and nowhere else, so the HTTP server, the
in-process world and the oracle produce the same bytes from the same inputs. If a renderer
consulted anything else (a wall clock, a counter, the branch name), a Groundhog rollout could
no longer equal a live one bit for bit, and the oracle's ground truth would drift from what the
server actually answers.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlencode

from worldsim import noise
from worldsim.corpus import TOPICS, CorpusView, tokens
from worldsim.errors import PROBLEM_MEDIA_TYPE, problem_document

# Declared before the benchmark's runs (bench/protocol.toml): the attention shock's standard
# deviation is about nine times the expected verify-minus-deep reward gap. The day's share of it
# is slow state (every call on one day sees it); the rest is drawn per call.
ATTENTION_SD = 1.45
ATTENTION_DAY_WEIGHT = 0.8
ATTENTION_CALL_WEIGHT = 0.6
CLOCK_ORIGIN = 1_767_225_600  # 2026-01-01T00:00:00Z; the world's calendar, not the host's
CLOCK_STEP_SECONDS = 900
LATENCY_MEDIAN_MS = 120.0
LATENCY_SIGMA = 0.5
SEARCH_LIMIT = 5
STRICTNESS_LOG_MEAN = -0.195
STRICTNESS_LOG_SD = 0.6
UPLIFT_BASE = 0.095
UPLIFT_PER_INSIGHT = 0.24

JsonObject = dict[str, object]


@dataclass(frozen=True)
class Rendered:
    """A world answer before it becomes bytes: status, JSON payload, dependency hints."""

    status: int
    payload: JsonObject
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    media_type: str = "application/json"


def encode(payload: object) -> bytes:
    """The canonical JSON bytes: sorted keys, no whitespace, ASCII only."""
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def request_key(method: str, path: str, query: Sequence[tuple[str, str]], body: bytes) -> str:
    """The world's own canonical form of a request, used for noise and occurrence counts."""
    key = f"{method.upper()} {path}"
    if query:
        key += "?" + urlencode(sorted(query))
    if body:
        key += "#" + hashlib.sha256(body).hexdigest()
    return key


def latency_ms(seed: int, key: str, occurrence: int) -> float:
    """Lognormal per-call latency, reported to the agent in a header and never slept by default."""
    return round(
        noise.lognormal(seed, LATENCY_MEDIAN_MS, LATENCY_SIGMA, "latency", key, occurrence), 1
    )


def _round(value: float) -> float:
    return round(value, 6)


def render_context(
    seed: int,
    key: str,
    occurrence: int,
    *,
    epoch: int | None = None,
    call_weight: float = ATTENTION_CALL_WEIGHT,
) -> Rendered:
    """The world clock advances with each reading; attention has a day part and a call part.

    ``epoch`` is the slow state a live service shares across simultaneous calls (which day it
    is); ``seed``/``key``/``occurrence`` draw the per-call part. A cooperative world without a
    session uses one seed for both. ``call_weight`` scales the per-call part (the benchmark's
    noise-share curve sweeps it; the declared world uses ATTENTION_CALL_WEIGHT).
    """
    epoch = seed if epoch is None else epoch
    origin = CLOCK_ORIGIN + math.floor(noise.uniform(epoch, "clock-origin") * 365) * 86_400
    jitter = math.floor(noise.uniform(seed, "clock", key, occurrence) * CLOCK_STEP_SECONDS / 3)
    clock = origin + occurrence * CLOCK_STEP_SECONDS + jitter
    day, second_of_day = divmod(clock, 86_400)
    hour = second_of_day // 3600
    shock = ATTENTION_DAY_WEIGHT * noise.normal(
        epoch, "attention-day", day
    ) + call_weight * noise.normal(seed, "attention-call", key, occurrence)
    iso = dt.datetime.fromtimestamp(clock, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    payload: JsonObject = {
        "clock": clock,
        "time": iso,
        "day": day,
        "hour": hour,
        "attention": _round(ATTENTION_SD * shock),
    }
    return Rendered(200, payload)


def render_trends(seed: int, key: str, occurrence: int, *, epoch: int | None = None) -> Rendered:
    """Topic mentions elsewhere on the web today: exogenous, slow, and no local model of it.

    The day's counts are slow state (keyed by ``epoch``); each call adds a small sampling
    jitter, so two calls rarely give the same bytes but almost always the same leading topic.
    """
    epoch = seed if epoch is None else epoch
    mentions = {
        topic: round(
            noise.lognormal(epoch, 100.0, 0.6, "trend", topic)
            * noise.lognormal(seed, 1.0, 0.01, "trend-call", key, occurrence, topic)
        )
        for topic in TOPICS
    }
    ranked = sorted(TOPICS, key=lambda topic: (-mentions[topic], topic))
    return Rendered(200, {"trends": [{"topic": t, "mentions": mentions[t]} for t in ranked]})


def render_search(view: CorpusView, seed: int, key: str, occurrence: int, q: str) -> Rendered:
    """Every matching document is equally relevant; the world ranks them in a random order."""
    words = tuple(dict.fromkeys(tokens(q)))
    hits = [doc for doc in view.all_docs() if words and all(w in doc.terms for w in words)]
    hits.sort(key=lambda doc: (noise.uniform(seed, "rank", key, occurrence, doc.id), doc.id))
    shown = hits[:SEARCH_LIMIT]
    payload: JsonObject = {
        "query": q,
        "hits": [{"id": d.id, "title": d.title, "snippet": d.body[:80]} for d in shown],
    }
    reads = tuple(sorted({f"index:{w}" for w in words} | {f"doc:{d.id}" for d in shown}))
    return Rendered(200, payload, reads)


def not_found(doc_id: str, reads: tuple[str, ...]) -> Rendered:
    problem = problem_document(
        404,
        "not-found",
        "Document not found",
        f"no document with id {doc_id!r} in this branch's corpus",
        doc=doc_id,
    )
    return Rendered(404, problem, reads, media_type=PROBLEM_MEDIA_TYPE)


def render_doc(view: CorpusView, doc_id: str) -> Rendered:
    reads = (f"doc:{doc_id}",)
    doc = view.get(doc_id)
    if doc is None:
        return not_found(doc_id, reads)
    return Rendered(200, doc.to_json(), reads)


def render_review(view: CorpusView, seed: int, key: str, occurrence: int, doc_id: str) -> Rendered:
    """The review of an agent's own brief; strictness is exogenous, quality comes from state."""
    reads = {f"doc:{doc_id}", f"review:{doc_id}"}
    doc = view.get(doc_id)
    if doc is None or doc.author != "agent":
        return Rendered(200, {"doc": doc_id, "exists": False}, tuple(sorted(reads)))
    reads.update(f"doc:{source}" for source in doc.sources)
    insights = [
        cited.insight
        for source in doc.sources
        if (cited := view.get(source)) is not None and cited.insight is not None
    ]
    mean_insight = sum(insights) / len(insights) if insights else 0.0
    strictness = math.exp(
        STRICTNESS_LOG_MEAN + STRICTNESS_LOG_SD * noise.normal(seed, "strictness", key, occurrence)
    )
    addressed = doc.revision > 1
    uplift = 0.0 if addressed else strictness * (UPLIFT_BASE + UPLIFT_PER_INSIGHT * mean_insight)
    notes = ["revision addresses the earlier notes"] if addressed else []
    if not addressed:
        notes.append("cite more studies" if len(insights) < 3 else "tighten the summary")
        if strictness > 1.0:
            notes.append("quantify the evidence strength")
    payload: JsonObject = {
        "doc": doc_id,
        "exists": True,
        "revision": doc.revision,
        "strictness": _round(strictness),
        "score": round(100 * (0.2 + 0.8 * mean_insight) / (1.0 + strictness)),
        "uplift": _round(uplift),
        "notes": notes,
    }
    return Rendered(200, payload, tuple(sorted(reads)))
