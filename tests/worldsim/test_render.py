"""Unit tests of worldsim/render.py: the pure renderers behind every world read."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math

import pytest

from worldsim import noise, render
from worldsim.corpus import BASE_DOCS, BASE_VIEW, TOPICS, Brief, CorpusView, publish


def test_encode_is_canonical_ascii_json() -> None:
    assert render.encode({"b": 1, "a": ["é", None]}) == b'{"a":["\\u00e9",null],"b":1}'


def test_request_key_sorts_the_query_and_hashes_the_body() -> None:
    assert render.request_key("get", "/search", [], b"") == "GET /search"
    key = render.request_key("GET", "/s", [("q", "b c"), ("a", "1")], b"")
    assert key == "GET /s?a=1&q=b+c"
    body_key = render.request_key("POST", "/docs", [], b"{}")
    assert body_key == "POST /docs#" + hashlib.sha256(b"{}").hexdigest()


def test_latency_is_a_rounded_lognormal_draw() -> None:
    expected = round(noise.lognormal(5, 120.0, 0.5, "latency", "GET /x", 2), 1)
    assert render.latency_ms(5, "GET /x", 2) == expected
    assert render.latency_ms(5, "GET /x", 3) != expected


def test_context_clock_advances_fifteen_minutes_per_reading() -> None:
    first = render.render_context(9, "GET /context", 0)
    later = render.render_context(9, "GET /context", 4)
    assert first.status == 200 and first.reads == () and first.writes == ()
    origin = 1_767_225_600 + math.floor(noise.uniform(9, "clock-origin") * 365) * 86_400
    for occurrence, rendered in ((0, first), (4, later)):
        clock = rendered.payload["clock"]
        assert isinstance(clock, int)
        assert origin + occurrence * 900 <= clock < origin + occurrence * 900 + 300
        day, second = divmod(clock, 86_400)
        assert (rendered.payload["day"], rendered.payload["hour"]) == (day, second // 3600)
        moment = dt.datetime.fromtimestamp(clock, tz=dt.UTC)
        assert rendered.payload["time"] == moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert render.render_context(9, "GET /context", 0) == first  # pure


def test_trends_rank_every_topic_by_mentions() -> None:
    rendered = render.render_trends(2, "GET /trends", 0)
    trends = rendered.payload["trends"]
    assert isinstance(trends, list)
    assert sorted(item["topic"] for item in trends) == sorted(TOPICS)
    keys = [(-item["mentions"], item["topic"]) for item in trends]
    assert keys == sorted(keys)
    assert render.render_trends(3, "GET /trends", 0) != rendered


def test_search_returns_at_most_five_matching_docs_with_their_reads() -> None:
    topic = TOPICS[0]
    rendered = render.render_search(BASE_VIEW, 1, "k", 0, topic.upper())
    hits = rendered.payload["hits"]
    assert isinstance(hits, list) and 0 < len(hits) <= render.SEARCH_LIMIT
    matching = {doc.id for doc in BASE_DOCS.values() if topic in doc.terms}
    assert {hit["id"] for hit in hits} <= matching
    assert len(hits) == min(render.SEARCH_LIMIT, len(matching))
    assert rendered.reads == tuple(sorted({f"index:{topic}"} | {f"doc:{h['id']}" for h in hits}))
    assert hits[0]["snippet"] == BASE_DOCS[hits[0]["id"]].body[:80]


def test_search_without_words_finds_nothing_but_reads_nothing_either() -> None:
    rendered = render.render_search(BASE_VIEW, 1, "k", 0, "!!!")
    assert rendered.payload == {"query": "!!!", "hits": []} and rendered.reads == ()


def test_doc_and_missing_doc() -> None:
    found = render.render_doc(BASE_VIEW, "d01")
    assert found.payload == BASE_DOCS["d01"].to_json() and found.reads == ("doc:d01",)
    missing = render.render_doc(BASE_VIEW, "nope")
    assert missing.status == 404 and missing.media_type == "application/problem+json"
    assert missing.payload["doc"] == "nope" and missing.reads == ("doc:nope",)
    assert "'nope'" in str(missing.payload["detail"])


def test_review_of_a_study_or_unknown_doc_does_not_exist() -> None:
    for doc_id in ("d01", "ghost"):
        rendered = render.render_review(BASE_VIEW, 1, "k", 0, doc_id)
        assert rendered.payload == {"doc": doc_id, "exists": False}
        assert rendered.reads == (f"doc:{doc_id}", f"review:{doc_id}")


def _view_with_brief(sources: tuple[str, ...], revisions: int = 1) -> CorpusView:
    view = CorpusView()
    for _ in range(revisions):
        doc, _writes = publish(view, Brief("mine", TOPICS[0], "A brief", "text", sources))
        view = CorpusView({**view.overlay, "mine": doc})
    return view


def test_review_scores_a_brief_from_its_sources() -> None:
    sources = ("d01", "d02")
    rendered = render.render_review(_view_with_brief(sources), 4, "k", 0, "mine")
    payload = rendered.payload
    insights = [BASE_DOCS[s].insight or 0.0 for s in sources]
    mean = sum(insights) / len(insights)
    strictness = math.exp(-0.195 + 0.6 * noise.normal(4, "strictness", "k", 0))
    assert payload["strictness"] == pytest.approx(strictness, abs=1e-6)
    assert payload["score"] == round(100 * (0.2 + 0.8 * mean) / (1.0 + strictness))
    assert payload["uplift"] == pytest.approx(strictness * (0.095 + 0.24 * mean), abs=1e-6)
    assert payload["notes"][0] == "cite more studies"
    assert ("quantify the evidence strength" in payload["notes"]) == (strictness > 1.0)
    assert rendered.reads == ("doc:d01", "doc:d02", "doc:mine", "review:mine")
    json.dumps(payload)


def test_a_revised_brief_has_no_uplift_left() -> None:
    rendered = render.render_review(_view_with_brief(("d01", "d02", "d03"), 2), 4, "k", 0, "mine")
    assert rendered.payload["revision"] == 2
    assert rendered.payload["uplift"] == 0.0
    assert rendered.payload["notes"] == ["revision addresses the earlier notes"]


def test_the_call_weight_scales_only_the_per_call_part_of_attention() -> None:
    """bench --noise-curve sweeps it: at zero, two calls of one day see one attention."""
    first = render.render_context(9, "GET /context", 0, epoch=5, call_weight=0.0)
    other_call = render.render_context(10, "GET /context", 0, epoch=5, call_weight=0.0)
    assert first.payload["attention"] == other_call.payload["attention"]
    noisy = render.render_context(10, "GET /context", 0, epoch=5)
    assert noisy.payload["attention"] != other_call.payload["attention"]
    assert noisy == render.render_context(
        10, "GET /context", 0, epoch=5, call_weight=render.ATTENTION_CALL_WEIGHT
    )
