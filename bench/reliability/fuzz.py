"""Generated hostile input: the admin API fuzzed from its own OpenAPI schema, and the request
key checked as a property over generated requests.

Hand-written bad inputs only cover what someone thought of. Schemathesis derives valid and
invalid calls for every route from `create_app(settings).openapi()` and runs them in-process
(ASGI); any 5xx or unhandled exception is a finding. Hypothesis generates requests and checks
that computing a key never crashes and that the key ignores what must not matter: header order,
query order and JSON key order.
"""

from __future__ import annotations

import json
import logging
import tempfile
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis import APIOperation, Case, GenerationMode
from schemathesis.core.result import Ok

from engine.keys import request_key
from engine.request import RequestParts
from resolver.app import create_app
from resolver.settings import load_settings

logger = logging.getLogger(__name__)

SEEDED_TAPE = "fuzz"


def _settings(examples: int) -> settings:
    return settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.generate],
        database=None,
        derandomize=True,
    )


def _seed(client: Any) -> None:
    client.post("/v1/tapes", json={"name": SEEDED_TAPE, "world_seed": 1})
    client.post(f"/v1/tapes/{SEEDED_TAPE}/fork", json={"parent": "root", "children": 2})


def fuzz_admin_api(examples_per_operation: int = 25) -> dict[str, Any]:
    """Every operation, positive and negative examples; half aimed at an existing tape."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # starlette nags about its httpx-based test client
        from starlette.testclient import TestClient

    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="gh-fuzz-") as data:
        app = create_app(load_settings(data_dir=Path(data)))
        with TestClient(app) as client:
            _seed(client)
        schema = schemathesis.openapi.from_asgi("/openapi.json", app)
        statuses: Counter[int] = Counter()
        failures: list[dict[str, Any]] = []
        operations: list[APIOperation] = []
        for result in schema.get_all_operations():
            if not isinstance(result, Ok):
                raise result.err()  # a route the schema cannot describe is not fuzzed, it fails
            operations.append(result.ok())
        for operation in operations:
            for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
                _fuzz_operation(operation, mode, examples_per_operation, statuses, failures)
    return {
        "operations": len(operations),
        "calls": sum(statuses.values()),
        "statuses": {str(code): count for code, count in sorted(statuses.items())},
        "server_errors": len(failures),
        "failure_examples": failures[:5],
        "seconds": round(time.perf_counter() - started, 1),
        "held": not failures,
    }


def _fuzz_operation(
    operation: APIOperation,
    mode: GenerationMode,
    examples: int,
    statuses: Counter[int],
    failures: list[dict[str, Any]],
) -> None:
    @_settings(examples)
    @given(case=operation.as_strategy(generation_mode=mode), aim=st.booleans())
    def check(case: Case, aim: bool) -> None:
        if aim and case.path_parameters and "tape" in case.path_parameters:
            case.path_parameters["tape"] = SEEDED_TAPE
        where = f"{operation.method.upper()} {operation.path}"
        try:
            response = case.call()
        except Exception as error:  # an unhandled exception inside the app is the finding
            failures.append({"operation": where, "mode": str(mode), "exception": repr(error)})
            return
        statuses[response.status_code] += 1
        if response.status_code >= 500:
            failures.append(
                {
                    "operation": where,
                    "mode": str(mode),
                    "status": response.status_code,
                    "body": response.text[:300],
                }
            )

    try:
        check()
    except Unsatisfiable:
        logger.debug("no %s examples exist for %s %s", mode, operation.method, operation.path)


# -- the request key as a property -----------------------------------------------------------

_text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | _text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_text, inner, max_size=4),
    max_leaves=20,
)
_pairs = st.lists(st.tuples(_text, _text), max_size=6)


def _shuffle_json(value: Any, random: Any) -> Any:
    """The same JSON document with every object's keys in another order."""
    if isinstance(value, dict):
        items = list(value.items())
        random.shuffle(items)
        return {key: _shuffle_json(item, random) for key, item in items}
    if isinstance(value, list):
        return [_shuffle_json(item, random) for item in value]
    return value


def check_key_properties(examples: int = 200) -> dict[str, Any]:
    """Run the key properties; counts of examples tried and of failures found."""
    tried = Counter[str]()
    failures: list[str] = []

    @_settings(examples)
    @given(
        query=_pairs,
        headers=_pairs,
        document=_json,
        random=st.randoms(use_true_random=False),
    )
    def stable(
        query: list[tuple[str, str]],
        headers: list[tuple[str, str]],
        document: Any,
        random: Any,
    ) -> None:
        tried["stability"] += 1
        names = [name for name, _ in headers]
        body = json.dumps(document).encode()
        base = RequestParts(
            "POST",
            "http",
            "example.test",
            80,
            "/p",
            tuple(query),
            (("Content-Type", "application/json"), *headers),
            body,
        )
        # Names in any order; a repeated query name keeps its values' order (key v2).
        names_order = list(dict.fromkeys(name for name, _ in query))
        random.shuffle(names_order)
        shuffled_query = [pair for name in names_order for pair in query if pair[0] == name]
        shuffled_headers = list(base.headers)
        random.shuffle(shuffled_headers)
        other_body = json.dumps(_shuffle_json(document, random), indent=random.choice([None, 2]))
        other = base.with_changes(
            query=tuple(shuffled_query),
            headers=tuple(shuffled_headers),
            body=other_body.encode(),
        )
        one = request_key(base, match_headers=names)
        two = request_key(other, match_headers=names)
        if one != two:
            failures.append(f"key changed: {one.readable!r} != {two.readable!r}")

    @_settings(examples)
    @given(
        method=st.sampled_from(["GET", "POST", "PUT", "delete", "PATCH"]),
        path=_text,
        query=_pairs,
        headers=_pairs,
        body=st.binary(max_size=256),
        content_type=st.sampled_from(
            [None, "application/json", "application/x-www-form-urlencoded", "text/plain"]
        ),
        encoding=st.sampled_from([None, "gzip", "deflate", "br", "identity", "x-gzip"]),
    )
    def total(
        method: str,
        path: str,
        query: list[tuple[str, str]],
        headers: list[tuple[str, str]],
        body: bytes,
        content_type: str | None,
        encoding: str | None,
    ) -> None:
        tried["no_crash"] += 1
        extra = [("Content-Type", content_type)] if content_type else []
        extra += [("Content-Encoding", encoding)] if encoding else []
        parts = RequestParts(
            method, "https", "Example.TEST", 443, "/" + path, tuple(query), (*extra, *headers), body
        )
        try:
            request_key(parts, match_headers=[name for name, _ in headers])
        except Exception as error:  # any exception here is the finding
            failures.append(f"request_key raised {error!r} for body {body[:40]!r}")

    stable()
    total()
    return {
        "examples": dict(tried),
        "failures": len(failures),
        "failure_examples": failures[:5],
        "held": not failures,
    }
