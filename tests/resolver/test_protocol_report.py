"""The report names, per host, which profile read its requests and which failed."""

from __future__ import annotations

from resolver.protocol_report import profile_counts


def test_fired_and_failed_profiles_per_host() -> None:
    rows = [
        ("tools.example", 'v3 POST http://tools.example/mcp op:mcp tools/list body:{"a":1}'),
        ("tools.example", "v3 POST http://tools.example/mcp op:mcp tools/call search"),
        ("tools.example", "v3 POST http://tools.example/mcp op:jsonrpc! body is not JSON body:sha"),
        ("api.example", "v3 GET http://api.example/items"),
        ("gql.example", "v3 POST http://gql.example/ op:graphql query Q headers:[]"),
    ]
    assert profile_counts(rows) == {
        "gql.example": {"fired": {"graphql": 1}, "failed": {}},
        "tools.example": {"fired": {"mcp": 2}, "failed": {"jsonrpc: body is not JSON": 1}},
    }
