"""Unit tests of worldsim/dispatch.py: the single reading of a request's headers and route."""

from __future__ import annotations

import json

import pytest

from worldsim import render
from worldsim.corpus import BASE_VIEW
from worldsim.dispatch import (
    OCCURRENCE_PATTERN,
    SEED_PATTERN,
    endpoint_label,
    parse_branch,
    parse_brief,
    parse_int_header,
    render_read,
    world_headers,
)
from worldsim.errors import InvalidRequest, UnknownEndpoint


@pytest.mark.parametrize(
    ("raw", "expected"), [(None, "root"), ("", "root"), ("root/b.1", "root/b.1")]
)
def test_branch_defaults_to_root(raw: str | None, expected: str) -> None:
    assert parse_branch(raw) == expected


@pytest.mark.parametrize("raw", ["root//b", "root/..", "./x", "root/b 1", "/root", "a" * 257])
def test_malformed_branches_are_refused(raw: str) -> None:
    with pytest.raises(InvalidRequest) as raised:
        parse_branch(raw)
    assert "is not a branch path" in raised.value.detail
    assert "at most 256 characters" in raised.value.detail


def test_integer_headers() -> None:
    assert parse_int_header("X-Groundhog-Seed", None, SEED_PATTERN) is None
    assert parse_int_header("X-Groundhog-Seed", " -42 ", SEED_PATTERN) == -42
    assert parse_int_header("X-Groundhog-Occurrence", "7", OCCURRENCE_PATTERN) == 7
    with pytest.raises(InvalidRequest, match="must be a non-negative integer, got '-1'"):
        parse_int_header("X-Groundhog-Occurrence", "-1", OCCURRENCE_PATTERN)
    with pytest.raises(InvalidRequest, match="X-Groundhog-Seed must be an integer, got 'abc'"):
        parse_int_header("X-Groundhog-Seed", "abc", SEED_PATTERN)


@pytest.mark.parametrize(
    ("method", "path", "label"),
    [
        ("get", "/context", "GET /context"),
        ("GET", "/search", "GET /search"),
        ("GET", "/docs/d01", "GET /docs/{id}"),
        ("POST", "/docs", "POST /docs"),
    ],
)
def test_endpoint_labels(method: str, path: str, label: str) -> None:
    assert endpoint_label(method, path) == label


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/docs/"), ("GET", "/docs/a/b"), ("POST", "/search"), ("PUT", "/docs")],
)
def test_unknown_endpoints(method: str, path: str) -> None:
    with pytest.raises(UnknownEndpoint, match=f"no endpoint {method} {path}"):
        endpoint_label(method, path)


def test_render_read_dispatches_to_the_renderer() -> None:
    query = [("q", "sleep")]
    key = render.request_key("GET", "/search", query, b"")
    assert render_read(BASE_VIEW, 3, "/search", query, 1) == render.render_search(
        BASE_VIEW, 3, key, 1, "sleep"
    )
    context_key = render.request_key("GET", "/context", [], b"")
    assert render_read(BASE_VIEW, 3, "/context", [], 2) == render.render_context(3, context_key, 2)
    assert render_read(BASE_VIEW, 3, "/docs/d01", [], 0) == render.render_doc(BASE_VIEW, "d01")


@pytest.mark.parametrize("query", [[], [("q", "  ")], [("other", "x")]])
def test_search_needs_a_non_empty_q(query: list[tuple[str, str]]) -> None:
    with pytest.raises(InvalidRequest, match="query parameter 'q' is required"):
        render_read(BASE_VIEW, 3, "/search", query, 0)


def test_parse_brief_derives_an_id_from_the_topic() -> None:
    brief = parse_brief(json.dumps({"topic": "Sleep & Memory!", "title": "T"}).encode())
    assert brief.id == "brief-sleep-memory"
    assert (brief.title, brief.body, brief.sources) == ("T", "", ())
    named = parse_brief(b'{"id": "mine", "topic": "x", "title": "T", "sources": ["d01"]}')
    assert named.id == "mine" and named.sources == ("d01",)
    assert parse_brief(b'{"topic": "!!!", "title": "T"}').id == "brief-untitled"


def test_parse_brief_errors_list_the_fields() -> None:
    with pytest.raises(InvalidRequest, match="not valid JSON"):
        parse_brief(b"{oops")
    with pytest.raises(InvalidRequest) as raised:
        parse_brief(b'{"topic": "", "title": 3, "extra": 1}')
    locations = sorted(item["loc"][0] for item in raised.value.extras["errors"])
    assert locations == ["extra", "title", "topic"]


def test_world_headers_read_any_case_insensitive_mapping() -> None:
    class Headers(dict[str, str]):
        def get(self, key: str, default: object = None) -> object:  # type: ignore[override]
            return super().get(key.lower(), default)

    headers = Headers({"x-groundhog-branch": "root/a", "x-groundhog-seed": "9"})
    assert world_headers(headers) == {
        "branch": "root/a",
        "seed": "9",
        "occurrence": None,
        "session": None,
    }
