"""The dataset card (README.md) of a published tape: what it is, what it holds, how to use it.

Someone who downloads a tape must learn from the folder alone which world it recorded (config,
world seed), how it branched, that it is the tape it claims to be (the digest) and how to load
or replay it. The YAML header names one Hugging Face config per table, so `load_dataset(DIR,
"exchanges")` and the Hub's viewer find the tables too.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from groundhog.dataset.folder import SQLITE_NAME, TABLES
from groundhog.dataset.tables import TableCounts
from groundhog.models import TapeInfo


def _front_matter() -> str:
    configs = "".join(
        f"- config_name: {table}\n  data_files: {table}/*.parquet\n" for table in TABLES
    )
    return f"---\nconfigs:\n{configs}tags:\n- groundhog\n- agent-rl\n- recorded-world\n---\n"


def _tree(branches: list[dict[str, Any]]) -> str:
    children: dict[str | None, list[dict[str, Any]]] = {}
    for branch in branches:
        children.setdefault(branch["parent"], []).append(branch)
    lines: list[str] = []

    def add(parent: str | None, depth: int) -> None:
        for branch in sorted(children.get(parent, []), key=lambda b: b["branch"]):
            fork = f", forked at event {branch['fork_point']}" if branch["parent"] else ""
            lines.append(f"{'  ' * depth}- `{branch['branch']}` ({branch['events']} events{fork})")
            add(branch["branch"], depth + 1)

    add(None, 0)
    return "\n".join(lines)


def dataset_card(
    tape: TapeInfo,
    digest: str,
    counts: TableCounts,
    branches: list[dict[str, Any]],
    verification: dict[str, Any],
    audit: str,
) -> str:
    settings = {k: v for k, v in asdict(tape).items() if k not in ("name", "exchanges", "branches")}
    config = json.dumps(settings, indent=2, sort_keys=True)
    replayed = sum(b["replayed"] for b in verification.get("branches", []))
    live = verification.get("live_connections", 0)
    return f"""{_front_matter()}
# Groundhog tape `{tape.name}`

A recorded world for branching agent RL, made with Groundhog (`pip install groundhog-rl`):
every branch of a fork was served the same exogenous bytes, and anything a branch's own writes
changed was fetched again. Replaying this tape serves each branch exactly what it was served.

| | |
|---|---|
| world seed | `{tape.world_seed}` |
| mode | `{tape.mode}` |
| dependency model | `{tape.dependency_model}` |
| digest | `{digest}` |
| exchanges | {counts.exchanges} |
| bodies | {counts.bodies} ({counts.body_bytes} bytes) |
| events | {counts.events} |
| branches | {counts.branches} |
| verified | {replayed} asks replayed byte for byte with the world closed, {live} live connections |
| secrets audit | {audit} |

## Branch tree

{_tree(branches)}

## Tape config

```json
{config}
```

## Files

- `{SQLITE_NAME}`: the standalone SQLite export (`groundhog tape export`), the source of truth.
- `exchanges/`: one row per recorded answer: readable key, address (key hash, occurrence,
  fingerprint), the decision that recorded it, how often it was served, request and response
  headers (JSON), body hashes and sizes.
- `bodies/`: body bytes by SHA-256 (join on `request_body_sha256` / `response_body_sha256`).
- `events/`: what each branch was served, in order (`branch`, `seq`).
- `branches/`: the branch tree and each branch's shim counters.

## Load

```python
import pandas as pd
exchanges = pd.read_parquet("DIR/exchanges")

from datasets import load_dataset
events = load_dataset("parquet", data_dir="DIR/events")["train"]
```

## Replay

```sh
groundhog up                                   # a resolver and proxy
groundhog tape import DIR --name {tape.name}   # checks every body against its hash
groundhog tape digest {tape.name}              # {digest}
groundhog tape verify {tape.name}              # replays every branch, world closed
groundhog run --tape {tape.name} --branch root -- python your_rollout.py
```
"""
