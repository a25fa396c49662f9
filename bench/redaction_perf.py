"""What default-deny redaction costs on the hit path: keying after redaction against a resolve.

Every ask is redacted before it is keyed, hits included, so the scan for secrets (names at any
JSON depth, formats in every value) is paid on the path that matters most. This script measures,
in one run: the p50 of a real resolver's `/v1/resolve` answering a hit for a realistic worker
request (credential headers, a key in the query, a JSON body with a nested password), and the
in-process time to redact and key that same request, and to key it without redaction. The row
is the ratio of redaction plus keying to the hit's p50 (target: under 5%), cold (a request
never seen) and warm (a sibling repeating it: redaction results are cached per process). One
more row sets the 64 KiB text body's redaction against the 64 KiB JSON body's, round by round
(issue 55: within 1.5x of the JSON figure, in one run).

    python -m bench.redaction_perf [--quick] [--json out.json]
"""

from __future__ import annotations

import argparse
import base64
import json
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.harness import start_child
from engine.keys import request_key
from engine.redaction import policy_from_config, redact_request, redact_request_cached
from engine.request import RequestParts
from engine.tape_settings import TapeSettings

logger = logging.getLogger("bench.redaction_perf")

TAPE = "redaction-perf"
TARGET_RATIO = 0.05
HEADERS = (
    ("User-Agent", "python-httpx/0.27.0"),
    ("Accept", "application/json"),
    ("Accept-Encoding", "gzip, deflate"),
    ("Authorization", "Bearer sk-proj-Zq3xT9vLmN2pQ8rS4tU6wY1aB5cD7eF0"),
    ("X-Goog-Api-Key", "AIzaSyA-1234567890abcdefghijklmnopqrstu"),
    ("Content-Type", "application/json"),
)
DOCUMENT = {
    "query": "solar capacity factors in northern europe",
    "filters": {"years": [2021, 2022, 2023], "lang": "en"},
    "items": [{"id": i, "title": f"result {i}", "score": i / 7} for i in range(12)],
}
LARGE_BODY_BYTES = 64 * 1024
_WORDS = [
    "wind",
    "solar",
    "capacity",
    "factor",
    "grid",
    "storage",
    "demand",
    "turbine",
    "offshore",
    "model",
    "agent",
    "tool",
    "result",
    "search",
    "query",
    "page",
    "report",
    "northern",
    "europe",
    "battery",
    "price",
    "hour",
    "season",
    "forecast",
]


def large_document(size: int = LARGE_BODY_BYTES) -> dict:
    """A 64 KiB model-API request (issue 31's speed row): long prose in messages, ids, counts
    and digests beside it; deterministic, so before and after measure the same bytes."""
    messages: list[dict] = []
    index = 0
    document: dict = {"model": "m-1", "max_tokens": 256, "messages": messages}
    while len(json.dumps(document)) < size:
        words = [_WORDS[(index * 7 + i * 3) % len(_WORDS)] for i in range(60)]
        messages.append(
            {
                "role": "user" if index % 2 else "assistant",
                "content": " ".join(words),
                "id": f"msg_{index:06d}",
                "digest": f"{index:064x}",
                "usage": {"prompt_tokens": index, "completion_tokens": 2 * index},
            }
        )
        index += 1
    return document


def large_text(size: int = LARGE_BODY_BYTES) -> str:
    """The large document as a 64 KiB `text/plain` body (issue 55's speed row): prose lines and
    `name: value` lines, which the assignment-line rule reads, with no secret in them."""
    lines = []
    for message in large_document(2 * size)["messages"]:
        lines += [f"role: {message['role']}", f"id = {message['id']}", message["content"], ""]
    return "\n".join(lines)[:size]


# Typical: the credentials ride in headers and the query. Worst: the body holds one too, so
# it is parsed, walked and re-serialised. Large: 64 KiB of JSON (or of text) with no secret.
TEXT_KIND = "64 KiB text"
JSON_KIND = "64 KiB JSON"
TEXT_BUDGET = 1.5  # issue 55: redacting 64 KiB of text costs at most 1.5x 64 KiB of JSON
BODIES = {
    "typical": json.dumps(DOCUMENT).encode(),
    "secret in body": json.dumps(
        {**DOCUMENT, "session": {"user": "ann", "auth": {"password": "hunter2-correct-horse"}}}
    ).encode(),
    JSON_KIND: json.dumps(large_document()).encode(),
    TEXT_KIND: large_text().encode(),
}


def worker_request(kind: str = "typical") -> RequestParts:
    headers: tuple[tuple[str, str], ...] = HEADERS
    if kind == TEXT_KIND:
        headers = tuple(
            (name, "text/plain" if name == "Content-Type" else value) for name, value in HEADERS
        )
    return RequestParts(
        "POST", "https", "api.example.com", 443, "/v1/search", (("api_key", "q-key-8c1d"),),
        headers, BODIES[kind],
    )  # fmt: skip


def resolve_body(branch: str) -> dict[str, Any]:
    request = worker_request("secret in body")
    return {
        "tape": TAPE,
        "branch": branch,
        "method": "GET",  # a read, so siblings hit
        "scheme": request.scheme,
        "host": request.host,
        "port": request.port,
        "path": request.path,
        "query": [list(pair) for pair in request.query],
        "headers": [list(pair) for pair in request.headers],
        "body": base64.b64encode(request.body).decode(),
    }


def per_call_us(function, repeats: int) -> float:
    """The mean time of one call over `repeats` calls, in microseconds."""
    started = time.perf_counter()
    for _ in range(repeats):
        function()
    return (time.perf_counter() - started) / repeats * 1e6


def keying_functions(kind: str):
    request = worker_request(kind)
    policy = policy_from_config(TapeSettings())
    key = b"k" * 32
    redacted = redact_request(request, policy, key).request
    return (
        lambda: request_key(redact_request(request, policy, key).request),
        lambda: request_key(redact_request_cached(request, policy, key).request),
        lambda: request_key(redacted),
    )


def prepare_hits(client: httpx.Client, asks: int) -> list[str]:
    """Record the request once on root; every fork asking it afterwards is a hit."""
    client.post("/v1/tapes", json={"name": TAPE}).raise_for_status()
    forked = client.post(f"/v1/tapes/{TAPE}/fork", json={"parent": "root", "children": asks})
    branches = forked.raise_for_status().json()["branches"]
    first = client.post("/v1/resolve", json=resolve_body("root")).raise_for_status().json()
    response = {"status": 200, "headers": [], "body": base64.b64encode(b"{}").decode()}
    client.post("/v1/record", json={"ticket": first["ticket"], "response": response})
    return branches


def hit_ms(client: httpx.Client, branch: str) -> float:
    started = time.perf_counter()
    answer = client.post("/v1/resolve", json=resolve_body(branch)).json()
    elapsed = (time.perf_counter() - started) * 1000
    if answer.get("decision") != "shared":
        raise RuntimeError(f"expected a hit, got {answer.get('decision')}")
    return elapsed


def run(rounds: int, hits_per_round: int, repeats: int) -> dict[str, Any]:
    """Rounds alternate hits and in-process keying, so a load change on the machine moves
    both sides of each round's ratio; the row is the median over rounds."""
    functions = {kind: keying_functions(kind) for kind in BODIES}
    samples: dict[str, dict[str, list[float]]] = {
        kind: {
            "ratio": [],
            "redaction_ratio": [],
            "warm_ratio": [],
            "redact_and_key_us": [],
            "warm_redact_and_key_us": [],
            "key_only_us": [],
            "redaction_us": [],
        }
        for kind in BODIES
    }
    p50s: list[float] = []
    with tempfile.TemporaryDirectory(prefix="gh-redaction-perf-") as temporary:
        directory = Path(temporary)
        resolver = start_child(
            "resolver",
            ["resolver", "--data", str(directory), "--log-level", "warning"],
            health="http",
            log_dir=directory,
        )
        try:
            with httpx.Client(base_url=resolver.url, timeout=30, trust_env=False) as client:
                branches = iter(prepare_hits(client, (rounds + 1) * hits_per_round))
                for _ in range(hits_per_round):
                    hit_ms(client, next(branches))  # warm-up
                for _ in range(rounds):
                    p50 = statistics.median(
                        hit_ms(client, next(branches)) for _ in range(hits_per_round)
                    )
                    p50s.append(p50)
                    for kind, (redact_and_key, warm_and_key, key_only) in functions.items():
                        full = per_call_us(redact_and_key, repeats)
                        warm = per_call_us(warm_and_key, repeats)
                        bare = per_call_us(key_only, repeats)
                        sample = samples[kind]
                        sample["warm_redact_and_key_us"].append(warm)
                        sample["warm_ratio"].append(warm / (p50 * 1000))
                        sample["redact_and_key_us"].append(full)
                        sample["key_only_us"].append(bare)
                        sample["ratio"].append(full / (p50 * 1000))
                        sample["redaction_ratio"].append((full - bare) / (p50 * 1000))
                        sample["redaction_us"].append(full - bare)
        finally:
            resolver.stop()
    rows = {}
    for kind, sample in samples.items():
        ratio = statistics.median(sample["ratio"])
        rows[kind] = {
            "redact_and_key_us": statistics.median(sample["redact_and_key_us"]),
            "key_only_us": statistics.median(sample["key_only_us"]),
            "warm_redact_and_key_us": statistics.median(sample["warm_redact_and_key_us"]),
            "warm_ratio": statistics.median(sample["warm_ratio"]),
            "keying_after_redaction_ratio": ratio,
            "redaction_only_ratio": statistics.median(sample["redaction_ratio"]),
            "under_target": ratio < TARGET_RATIO,
        }
    return {
        "hit_p50_ms": statistics.median(p50s),
        "rounds": rounds,
        "target_ratio": TARGET_RATIO,
        "requests": rows,
        "text_against_json": text_against_json(samples),
    }


def text_against_json(samples: dict[str, dict[str, list[float]]]) -> dict[str, Any]:
    """The 64 KiB text body's redaction (redact + key, less key alone) over the 64 KiB JSON
    body's, per round (the two were measured back to back), and its median."""
    text, document = samples[TEXT_KIND], samples[JSON_KIND]
    per_round = [t / j for t, j in zip(text["redaction_us"], document["redaction_us"], strict=True)]
    ratio = statistics.median(per_round)
    return {
        "text_redaction_us": statistics.median(text["redaction_us"]),
        "json_redaction_us": statistics.median(document["redaction_us"]),
        "text_over_json": ratio,
        "per_round": per_round,
        "budget": TEXT_BUDGET,
        "within_budget": ratio <= TEXT_BUDGET,
    }


def measure(quick: bool) -> list[dict[str, Any]]:
    """The row for `python -m bench` (bench/speed.py)."""
    result = run(rounds=5 if quick else 20, hits_per_round=20 if quick else 50, repeats=200)
    return [
        {
            "name": f"keying after redaction ({kind}), as a share of a resolve hit",
            "summary": (
                f"redact + key {row['redact_and_key_us']:.0f} us (key alone "
                f"{row['key_only_us']:.0f} us) against a hit p50 of "
                f"{result['hit_p50_ms']:.2f} ms, interleaved in the same run: "
                f"{row['keying_after_redaction_ratio']:.1%} (redaction alone "
                f"{row['redaction_only_ratio']:.1%}; target < {TARGET_RATIO:.0%}); a sibling's "
                f"repeat of a redacted request (cached) {row['warm_ratio']:.1%}"
            ),
            "hit_p50_ms": result["hit_p50_ms"],
            "target_ratio": TARGET_RATIO,
            **row,
        }
        for kind, row in result["requests"].items()
    ] + [text_row(result["text_against_json"])]


def text_row(against: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": "redaction of 64 KiB text against 64 KiB JSON",
        "summary": (
            f"text {against['text_redaction_us']:.0f} us, JSON {against['json_redaction_us']:.0f}"
            f" us (redaction alone, medians), text/JSON {against['text_over_json']:.2f}x "
            f"(median of per-round ratios, same run; budget {against['budget']:.1f}x)"
        ),
        **against,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.redaction_perf", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer asks and repeats")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    rows = measure(args.quick)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    for row in rows:
        sys.stdout.write(f"{row['name']}: {row['summary']}\n")


if __name__ == "__main__":
    main()
