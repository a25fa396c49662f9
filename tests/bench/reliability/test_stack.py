"""Unit tests for the reliability stack wiring: who asks whom, where the store and ledger live."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.reliability import stack as stack_module
from bench.reliability.processes import Child, children
from bench.reliability.stack import Stack, start_stack


class RecordingGroup:
    """Stands in for Children: records each start and hands back an unstarted Child."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.starts: list[tuple[str, list[str], dict[str, Any]]] = []

    def start(self, name: str, module_args: list[str], **kwargs: Any) -> Child:
        self.starts.append((name, list(module_args), kwargs))
        port = 20000 + len(self.starts)
        return Child(name, list(module_args), port, self.root / f"{name}.log")


def argument(args: list[str], flag: str) -> str:
    return args[args.index(flag) + 1]


def test_without_tap_proxies_ask_the_resolver(tmp_path: Path) -> None:
    group = RecordingGroup(tmp_path)
    stack = start_stack(group, tmp_path, proxies=2)  # type: ignore[arg-type]
    names = [name for name, _, _ in group.starts]
    assert names == ["upstream", "resolver", "proxy0", "proxy1"]
    assert stack.tap is None
    for proxy in stack.proxies:
        assert argument(proxy.module_args, "--resolver-url") == stack.resolver.url
    data_dirs = {argument(proxy.module_args, "--data") for proxy in stack.proxies}
    assert data_dirs == {str(tmp_path / "proxy0"), str(tmp_path / "proxy1")}
    assert (tmp_path / "data").is_dir()
    assert argument(stack.resolver.module_args, "--data") == str(tmp_path / "data")


def test_with_tap_proxies_ask_the_tap_which_asks_the_resolver(tmp_path: Path) -> None:
    group = RecordingGroup(tmp_path)
    stack = start_stack(group, tmp_path, with_tap=True, upstream_timeout=3.0)  # type: ignore[arg-type]
    assert stack.tap is not None
    tap_args = stack.tap.module_args
    assert tap_args[0] == "bench.reliability.tap"
    assert argument(tap_args, "--target") == stack.resolver.url
    assert argument(tap_args, "--ledger") == str(tmp_path / "ledger.jsonl")
    (proxy,) = stack.proxies
    assert argument(proxy.module_args, "--resolver-url") == stack.tap.url
    assert float(argument(proxy.module_args, "--upstream-timeout")) == 3.0
    health = {name: kwargs.get("health") for name, _, kwargs in group.starts}
    assert health["tap"] == "tcp" and health["proxy0"] == "tcp"


def test_resolver_gets_its_environment_and_database(tmp_path: Path) -> None:
    group = RecordingGroup(tmp_path)
    url = "postgresql+psycopg://postgres@127.0.0.1/test"
    start_stack(group, tmp_path, proxies=0, resolver_env={"GROUNDHOG_TOKEN": "t"}, database_url=url)  # type: ignore[arg-type]
    name, args, kwargs = group.starts[1]
    assert name == "resolver"
    assert kwargs["env"] == {"GROUNDHOG_TOKEN": "t"}
    assert argument(args, "--database-url") == url


def test_store_and_ledger_paths(tmp_path: Path) -> None:
    data = tmp_path / "run" / "data"
    child = Child("x", [], 1, tmp_path / "x.log")
    stack = Stack(None, data, child, child)  # type: ignore[arg-type]
    assert stack.store_path == data / "groundhog.sqlite3"
    assert stack.ledger_path == tmp_path / "run" / "ledger.jsonl"


def test_open_tape_gives_unique_names_and_passes_the_token(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    asked: list[dict[str, Any]] = []

    def fake_open(base_url: str, name: str, children: int, **kwargs: Any) -> list[str]:
        asked.append({"base_url": base_url, "name": name, "children": children, **kwargs})
        return [f"root/{index}" for index in range(children)]

    monkeypatch.setattr(stack_module, "open_forked_tape", fake_open)
    child = Child("resolver", [], 7001, tmp_path / "r.log")
    stack = Stack(None, tmp_path, child, child, token="tok")  # type: ignore[arg-type]
    first, branches = stack.open_tape("soak", 2)
    second, _ = stack.open_tape("soak", 1, dependency_model="closure")
    assert first != second
    assert first.startswith("soak-") and second.startswith("soak-")
    assert branches == ["root/0", "root/1"]
    assert asked[0]["base_url"] == "http://127.0.0.1:7001"
    assert asked[0]["token"] == "tok"
    assert asked[0]["dependency_model"] == "path"
    assert asked[1]["dependency_model"] == "closure"


def test_upstream_stats_and_log_come_from_the_real_upstream(tmp_path: Path) -> None:
    with children(tmp_path) as group:
        upstream = group.start("upstream", ["bench.reliability.upstream"])
        stack = Stack(group, tmp_path, upstream, upstream)
        httpx.get(f"{upstream.url}/item/1", trust_env=False, timeout=10)
        httpx.post(f"{upstream.url}/docs/2", content=b"x", trust_env=False, timeout=10)
        assert stack.upstream_stats() == {"calls": 2, "by_path": {"/item/1": 1, "/docs/2": 1}}
        assert [entry[1:] for entry in stack.upstream_log()] == [
            ["GET", "/item/1"],
            ["POST", "/docs/2"],
        ]
