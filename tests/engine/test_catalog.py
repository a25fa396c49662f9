"""engine/catalog: the shipped tool catalog, a tape's view of it, and what it does to an ask."""

from __future__ import annotations

import json
import re

import pytest
from pydantic import ValidationError

from engine.asks import classify_draft, draft_ask
from engine.catalog import shipped
from engine.catalog.matching import match_request, view_for
from engine.operations import Kind
from engine.policy import DependencyModel
from engine.redaction import policy_from_config, redact_request
from engine.refs import BranchRef, TapeRef
from engine.request import RequestParts
from engine.resolve_request import ResolveRequest
from engine.tape_settings import CatalogSetting, TapeSettings
from resolver.schemas import TapeConfig

SECRET = "vendorsecret0123456789abcdefXYZ"


def _post(host: str, path: str, body: object, **extra) -> RequestParts:
    return RequestParts("POST", "https", host, 443, path, body=json.dumps(body).encode(), **extra)


def test_every_entry_is_written_from_the_vendors_documentation() -> None:
    entries = shipped()
    assert len({entry.id for entry in entries}) == len(entries) >= 20
    for entry in entries:
        assert entry.docs.startswith("https://"), entry.id
        assert entry.kind in (Kind.READ, Kind.WRITE)
        assert entry.query and entry.paths and entry.hosts
        assert all(path.startswith("/") for path in entry.paths)


@pytest.mark.parametrize("entry", shipped(), ids=lambda entry: entry.id)
def test_each_entrys_credential_is_redacted_where_it_travels(entry) -> None:
    """Where the catalog says the credential sits, the default redaction replaces it."""
    place = entry.credential
    header = re.match(r"header ([A-Za-z-]+)", place)
    headers: tuple[tuple[str, str], ...] = ()
    query: tuple[tuple[str, str], ...] = ()
    if header:
        value = f"Bearer {SECRET}" if "Bearer" in place else SECRET
        headers = ((header.group(1), value),)
    else:
        assert place.startswith("query parameter "), place
        query = ((place.removeprefix("query parameter "), SECRET),)
    host = entry.hosts[0] if entry.hosts[0] != "*" else "judge.internal"
    request = RequestParts(entry.method, "https", host, 443, entry.paths[0], query, headers)
    redacted = redact_request(request, policy_from_config(TapeSettings()), b"k" * 32).request
    assert SECRET not in repr(redacted)
    if "api_key in the body" in place:
        body = _post(host, entry.paths[0], {"query": "q", "api_key": SECRET})
        assert SECRET not in repr(
            redact_request(body, policy_from_config(TapeSettings()), b"k" * 32).request
        )


def test_a_search_post_reads_and_another_shape_at_its_path_does_not() -> None:
    view = view_for(CatalogSetting())
    found = match_request(view, _post("api.tavily.com", "/search", {"query": "groundhog"}))
    assert found is not None and found.kind is Kind.READ and found.keyed_body is None
    assert match_request(view, _post("api.tavily.com", "/search", {"other": 1})) is None
    assert match_request(view, _post("api.tavily.com", "/elsewhere", {"query": "q"})) is None
    assert match_request(view, _post("example.com", "/search", {"query": "q"})) is None
    crawl = match_request(view, _post("api.firecrawl.dev", "/v1/crawl", {"url": "u"}))
    assert crawl is not None and crawl.kind is Kind.WRITE


def test_noise_fields_leave_the_keyed_body() -> None:
    view = view_for(CatalogSetting())
    one = match_request(
        view, _post("api.openai.com", "/v1/embeddings", {"input": "a", "user": "1"})
    )
    two = match_request(
        view, _post("api.openai.com", "/v1/embeddings", {"input": "a", "user": "2"})
    )
    assert one is not None and two is not None
    assert one.keyed_body == two.keyed_body == '{"input":"a"}'


def test_chat_completions_are_world_only_where_the_tape_says() -> None:
    chat = {"model": "m", "messages": [{"role": "user", "content": "grade this"}]}
    default = view_for(CatalogSetting())
    assert match_request(default, _post("api.openai.com", "/v1/chat/completions", chat)) is None
    assert match_request(default, _post("judge.internal", "/v1/chat/completions", chat)) is None
    world = view_for(CatalogSetting(**{"world_model_hosts": ["api.openai.com", "Judge.Internal"]}))
    for host in ("api.openai.com", "judge.internal"):
        found = match_request(world, _post(host, "/v1/chat/completions", chat))
        assert found is not None and found.kind is Kind.READ
    assert match_request(world, _post("policy.internal", "/v1/chat/completions", chat)) is None


def test_a_tape_switches_entries_off_overrides_them_or_the_whole_catalog() -> None:
    search = _post("api.exa.ai", "/search", {"query": "q"})
    assert (
        match_request(view_for(CatalogSetting(**{"entries": {"exa-search": "off"}})), search)
        is None
    )
    pinned = match_request(view_for(CatalogSetting(**{"entries": {"exa-search": "write"}})), search)
    assert pinned is not None and pinned.kind is Kind.WRITE
    assert match_request(view_for(CatalogSetting(**{"enabled": False})), search) is None


def test_an_unknown_entry_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(
        ValidationError, match=r"no catalog entry is named tavily-serch.*tavily-search"
    ):
        TapeConfig(name="t", catalog={"entries": {"tavily-serch": "off"}})


def _draft(model: str, body: dict, config: dict | None = None):
    tape = TapeRef(7, "t", 42, "groundhog", True, model, config or {})
    wire = ResolveRequest(
        tape="t", branch="root", method="POST", scheme="https", host="api.openai.com", port=443,
        path="/v1/embeddings", headers=[["Content-Type", "application/json"]],
    )  # fmt: skip
    return draft_ask(
        tape, BranchRef(3, "root"), wire, json.dumps(body).encode(), redaction_key=b"k" * 32
    )


@pytest.mark.parametrize(
    ("model", "is_write"),
    [("closure", False), ("rules", False), ("path", True), ("hints", True)],
)
def test_the_catalog_applies_under_closure_and_rules_only(model: str, is_write: bool) -> None:
    draft = _draft(model, {"input": "a", "user": "u1"})
    assert classify_draft(draft, None).is_write is is_write
    same = _draft(model, {"input": "a", "user": "u2"})
    assert (draft.key.hash == same.key.hash) is (not is_write)


def test_a_tapes_own_rule_wins_over_the_catalog() -> None:
    rule = {"method": "POST", "path": "/v1/embeddings", "writes": ["embeddings"]}
    draft = _draft(DependencyModel.RULES, {"input": "a"}, {"rules": [rule]})
    assert classify_draft(draft, None).is_write
