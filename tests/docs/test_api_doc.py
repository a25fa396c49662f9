"""docs/api.md is generated from the resolver's OpenAPI schema and must match the code."""

from __future__ import annotations

import importlib.util
from types import ModuleType

import pytest

from tests.support.servers import REPO_ROOT


@pytest.fixture(scope="module")
def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "generate_api", REPO_ROOT / "docs/generate_api.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def schema(generator: ModuleType) -> dict:
    return generator.load_schema()


def test_committed_api_doc_is_up_to_date(generator: ModuleType, schema: dict) -> None:
    committed = (REPO_ROOT / "docs" / "api.md").read_text()
    assert committed == generator.render(schema), (
        "docs/api.md is stale: run `.venv/bin/python docs/generate_api.py` and commit it"
    )


def test_every_route_is_documented_and_every_purpose_is_a_route(generator, schema) -> None:
    page = generator.render(schema)
    routes = {
        (method, path)
        for path, item in schema["paths"].items()
        for method in generator.METHODS
        if method in item
    }
    for method, path in routes:
        assert f"### `{method.upper()} {path}`" in page
    stale = set(generator.PURPOSES) - routes
    assert not stale, f"PURPOSES names routes the resolver no longer has: {sorted(stale)}"


def test_types_render_readably(generator: ModuleType) -> None:
    type_of = generator.type_of
    assert type_of({"$ref": "#/components/schemas/TapeConfig"}) == "[TapeConfig](#tapeconfig)"
    assert type_of({"anyOf": [{"type": "string"}, {"type": "null"}]}) == "string \\| null"
    assert type_of({"type": "array", "items": {"type": "integer"}}) == "list of integer"
    pair = {"type": "array", "prefixItems": [{"type": "string"}, {"type": "string"}]}
    assert type_of(pair) == "[string, string]"
    assert generator.constraints({"minimum": 1, "default": 100}) == "≥ 1; default `100`"


def test_admin_answers_have_schemas_shared_with_the_client(schema: dict) -> None:
    from groundhog.protocol import admin

    schemas = schema["components"]["schemas"]
    for shape in (admin.TapeInfo, admin.TapeList, admin.BranchInfo, admin.EventPage):
        assert shape.__name__ in schemas, shape
    # The client keeps a newer server's fields aside; that is no part of the answer.
    assert "extra" not in schemas["TapeInfo"]["properties"]
    operation = schema["paths"]["/v1/tapes/{tape}"]["get"]
    answer = operation["responses"]["200"]["content"]["application/json"]["schema"]
    assert answer == {"$ref": "#/components/schemas/TapeInfo"}
