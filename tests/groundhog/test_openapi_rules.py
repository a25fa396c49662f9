"""groundhog/openapi_rules.py: an OpenAPI 3.x document judged operation by operation."""

from __future__ import annotations

import pytest

from groundhog.openapi_rules import OpenAPIError, import_openapi


def _document(**paths: dict) -> dict:
    return {
        "openapi": "3.0.3",
        "servers": [{"url": "https://api.example.com/v1"}],
        "paths": paths or {"/items": {"get": {"operationId": "listItems"}}},
    }


def test_safe_methods_read_and_unknown_posts_stay_writes() -> None:
    imported = import_openapi(
        _document(
            **{
                "/items": {"get": {"operationId": "listItems"}, "post": {"operationId": "create"}},
                "/items/{item-id}": {"delete": {}, "head": {}},
            }
        )
    )
    judged = {(op.method, op.path): (op.kind, op.inferred) for op in imported.operations}
    assert judged == {
        ("GET", "/v1/items"): ("read", False),
        ("POST", "/v1/items"): ("write", False),
        ("DELETE", "/v1/items/{param0}"): ("write", False),
        ("HEAD", "/v1/items/{param0}"): ("read", False),
    }
    assert imported.origin == "https://api.example.com"


@pytest.mark.parametrize(
    ("operation", "why"),
    [
        ({"operationId": "searchDocuments"}, "operationId 'searchDocuments' says 'search'"),
        ({"operationId": "query_index"}, "says 'query'"),
        ({"operationId": "doThing", "tags": ["Retrieve"]}, "tag 'Retrieve' says 'retrieve'"),
        ({"operationId": "doThing", "x-readonly": True}, "x-readonly is set"),
    ],
)
def test_a_post_read_by_convention_is_inferred_for_the_user_to_confirm(operation, why) -> None:
    imported = import_openapi(
        _document(**{"/search": {"post": operation}}), read_extensions=["x-readonly"]
    )
    [judged] = imported.operations
    assert judged.kind == "read" and judged.inferred and why in judged.why
    [kept] = imported.rules(accept_inferred=False)
    assert kept["writes"] == ["origin:https://api.example.com"] and "reads" not in kept
    [accepted] = imported.rules(accept_inferred=True)
    assert accepted == {
        "method": "POST",
        "host": "api.example.com",
        "path": "/v1/search",
        "reads": ["origin:https://api.example.com"],
    }


def test_words_are_matched_whole_not_as_substrings() -> None:
    imported = import_openapi(_document(**{"/x": {"post": {"operationId": "forgetUser"}}}))
    assert imported.operations[0].kind == "write"


@pytest.mark.parametrize(
    ("document", "says"),
    [
        ({"swagger": "2.0", "paths": {}}, "not an OpenAPI 3.x document"),
        ({"openapi": "3.1.0", "paths": {}}, "no `paths`"),
        ({"openapi": "3.1.0", "paths": {"/a": {"get": {}}}}, "--server"),
    ],
)
def test_documents_it_cannot_import_are_refused_naming_the_fix(document, says) -> None:
    with pytest.raises(OpenAPIError, match=says):
        import_openapi(document)


def test_a_server_given_by_hand_wins_and_keeps_its_port() -> None:
    imported = import_openapi(_document(), server="http://127.0.0.1:8123/api/")
    assert imported.origin == "http://127.0.0.1:8123"
    assert imported.operations[0].path == "/api/items"
