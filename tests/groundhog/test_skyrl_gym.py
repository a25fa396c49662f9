"""A real SkyRL-Gym `search` environment on Groundhog branches, through the real stack.

Four repetitions of one instance (SkyRL's `TrajectoryID(instance_id, repetition_id)`) each make
their own `SearchEnv` and step it with a search, in threads, the shim on; `route_tool_groups`
sends the tool group's POSTs through the real proxy on each repetition's branch. The retrieval
server answers every live call differently, so the repetitions see one result only if Groundhog
shared it: the server must be hit once per address and every observation must be the same
bytes. One repetition then adds a document to the index, and its next search goes live.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

skyrl_gym = pytest.importorskip("skyrl_gym", reason="the skyrl-gym extra is not installed")

from skyrl_gym.envs.search.env import SearchEnvConfig  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from groundhog.cli import app  # noqa: E402
from groundhog.client import Groundhog  # noqa: E402
from groundhog.rollout_groups import RolloutGroups  # noqa: E402
from groundhog.skyrl_gym import route_tool_groups  # noqa: E402
from tests.groundhog.upstream import send_json  # noqa: E402
from tests.support.threaded_server import ThreadedServer  # noqa: E402


class Retrieval:
    """A retrieval server in SkyRL's search format whose documents change on every call."""

    def __init__(self) -> None:
        self.calls = 0
        self.notes = 0
        self.documents = 0
        self.lock = threading.Lock()
        self.url = ""


@pytest.fixture
def retrieval() -> Iterator[Retrieval]:
    state = Retrieval()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            query = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if self.path == "/documents":  # adds a document to the index
                with state.lock:
                    state.documents += 1
                    send_json(self, {"documents": state.documents})
                return
            if self.path == "/notes":  # a write tool: each call files a note of its own
                with state.lock:
                    state.notes += 1
                    send_json(self, {"note": state.notes})
                return
            with state.lock:
                state.calls += 1
                serial = state.calls
            documents = [{"document": {"contents": f"{query['query']} result {serial}"}}]
            send_json(self, {"result": [documents]})

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_port}"
    with ThreadedServer(server):
        yield state


WRITER = 1


def test_repetitions_of_one_instance_share_one_search_result(
    gh_proxied: Groundhog, tape_name: str, retrieval: Retrieval
) -> None:
    # A search is a POST that reads the index, and adding a document writes it: rules say so, or
    # every POST would be a live write.
    rules = [
        {"method": "POST", "path": "/retrieve", "reads": ["index"]},
        {"method": "POST", "path": "/documents", "writes": ["index"]},
    ]
    tape = gh_proxied.open(tape_name, world_seed=6, dependency_model="rules", rules=rules)
    groups = RolloutGroups(tape)  # the shim on, as by default
    config = SearchEnvConfig(search_url=f"{retrieval.url}/retrieve", log_requests=False)

    def trajectory(repetition: int) -> tuple[str, str]:
        env = skyrl_gym.make(
            "search",
            env_config=config,
            extras={"reward_spec": {"ground_truth": "x"}, "max_turns": 3},
        )
        route_tool_groups(env, groups)
        with groups.rollout_sync("instance-7", repetition):
            env.init([{"role": "user", "content": "What is solar?"}])
            first = env.step("<search>solar</search>")
            if repetition == WRITER:  # one repetition adds a document to the index
                document = {"contents": "solar is bright"}
                added = groups.requests_session().post(
                    f"{retrieval.url}/documents", json=document, timeout=30
                )
                assert added.headers["X-Groundhog-Decision"] == "write", added.text
            second = env.step("<search>solar</search>")
        return first["observations"][0]["content"], second["observations"][0]["content"]

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(trajectory, range(4)))

    firsts = [first for first, _ in results]
    assert "solar result 1" in firsts[0]
    assert firsts == [firsts[0]] * 4  # one search result for the group
    assert retrieval.documents == 1
    # The writer's search after its write went live; its siblings share one second search.
    seconds = [second for _, second in results]
    readers = [second for i, second in enumerate(seconds) if i != WRITER]
    assert readers == [readers[0]] * 3 and seconds[WRITER] != readers[0]
    assert retrieval.calls == 3  # once per address, and once for the writer
    writer = f"root/instance-7/s{WRITER}"
    assert [e.decision for e in gh_proxied.iter_events(tape_name, branch=writer)][1:] == [
        "write",
        "refetched",
    ]
    decisions = sorted(
        event.decision
        for path in (f"root/instance-7/s{i}" for i in range(4))
        for event in gh_proxied.iter_events(tape_name, branch=path)
    )
    assert decisions == ["recorded"] * 2 + ["refetched"] + ["shared"] * 5 + ["write"]


def test_an_environment_without_routable_tool_groups_fails_loudly(
    gh_proxied: Groundhog, tape_name: str
) -> None:
    env = skyrl_gym.make("gsm8k", env_config={}, extras={"reward_spec": {"ground_truth": "4"}})
    with pytest.raises(TypeError, match="has no tool group with a requests session"):
        route_tool_groups(env, RolloutGroups(gh_proxied.open(tape_name, world_seed=1)))


def _run_group(
    groups: RolloutGroups, config: SearchEnvConfig, retrieval: Retrieval, instance: str
) -> list[str]:
    """Four repetitions: each searches (SkyRL's own POST /retrieve) and files its own note."""

    def trajectory(repetition: int) -> str:
        env = skyrl_gym.make(
            "search", env_config=config, extras={"reward_spec": {"ground_truth": "x"}}
        )
        route_tool_groups(env, groups)
        with groups.rollout_sync(instance, repetition):
            env.init([{"role": "user", "content": "What is solar?"}])
            step = env.step("<search>solar</search>")
            note = {"text": f"repetition {repetition} thinks solar"}
            filed = groups.requests_session().post(f"{retrieval.url}/notes", json=note, timeout=30)
            assert filed.status_code == 200, filed.text
        return step["observations"][0]["content"]

    with ThreadPoolExecutor(4) as pool:
        return list(pool.map(trajectory, range(4)))


def test_the_advisor_names_the_search_shareable_and_the_write_tool_not(
    gh_proxied: Groundhog, tape_name: str, retrieval: Retrieval, tmp_path
) -> None:
    """Issue 56, done when: with no rules every POST is a write; the advisor's rules, applied,
    give one live call per address."""
    tape = gh_proxied.open(tape_name, world_seed=6)  # closure, no rules
    config = SearchEnvConfig(search_url=f"{retrieval.url}/retrieve", log_requests=False)
    _run_group(RolloutGroups(tape, use_shim=False), config, retrieval, "instance-1")
    assert retrieval.calls == 4 and retrieval.notes == 4  # nothing shared: all writes

    advice = gh_proxied.report(tape_name).advice
    verdicts = {item["path"]: item for item in advice["operations"]}
    assert verdicts["/retrieve"]["shareable"] and verdicts["/retrieve"]["could_share"] == 3
    assert not verdicts["/notes"]["shareable"]
    assert "no two siblings sent the identical request" in verdicts["/notes"]["why_not"]
    assert advice["could_share"] == 3

    rules_file = tmp_path / "advised.json"
    done = CliRunner().invoke(
        app,
        ["tape", "advise", tape_name, "--out", str(rules_file)],
        env={"GROUNDHOG_RESOLVER_URL": gh_proxied.transport.url, "COLUMNS": "200"},
    )
    assert done.exit_code == 0, done.output
    advised = json.loads(rules_file.read_text())
    assert [rule["path"] for rule in advised["rules"]] == ["/retrieve"]
    # Never applied by itself: the advised tape is still the closure model with no rules.
    assert gh_proxied.get_tape(tape_name).rules == []

    applied = gh_proxied.open(f"{tape_name}-advised", world_seed=6, **advised)
    observations = _run_group(RolloutGroups(applied, use_shim=False), config, retrieval, "i-2")
    assert retrieval.calls == 5  # one live call for the address the four shared
    assert observations == [observations[0]] * 4
    assert retrieval.notes == 8  # the write tool stays each repetition's own
