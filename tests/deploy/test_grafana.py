"""The Grafana dashboard queries only what a real resolver's /metrics exposes.

A dashboard whose queries name a metric or label the resolver never exports shows empty panels
and nobody notices until an incident. This drives real traffic (including a single-flight wait)
through a real resolver, scrapes /metrics, and checks every metric, label and decision word the
dashboard uses.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from engine.policy import Decision
from tests.resolver.proxy_double import ProxyDouble, World
from tests.support.servers import REPO_ROOT, ServerProcess, running_server, wait_until

DASHBOARD = REPO_ROOT / "deploy" / "grafana" / "groundhog.json"
METRIC = re.compile(r"\bgroundhog_[a-z0-9_]+\b")
LABEL_MATCHER = re.compile(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*\"([^\"]*)\"")
GROUPING = re.compile(r"\b(?:by|without)\s*\(([^)]*)\)")
# Labels Prometheus adds at scrape time or Grafana's variables, not the resolver.
SCRAPE_LABELS = {"job", "instance"}


def _expressions(dashboard: dict[str, Any]) -> list[str]:
    expressions = [t["expr"] for panel in dashboard["panels"] for t in panel.get("targets", [])]
    for variable in dashboard.get("templating", {}).get("list", []):
        query = variable.get("query")
        expressions.append(query["query"] if isinstance(query, dict) else str(query))
    return expressions


@pytest.fixture(scope="module")
def dashboard() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text())


@pytest.fixture(scope="module")
def resolver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    data: Path = tmp_path_factory.mktemp("grafana-resolver")
    with running_server(["resolver", "--data", str(data)]) as server:
        yield server


def _scrape(url: str) -> dict[str, list[dict[str, str]]]:
    text = httpx.get(f"{url}/metrics", trust_env=False).text
    samples: dict[str, list[dict[str, str]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append(dict(sample.labels))
    return samples


def _waits(url: str) -> float:
    for family in text_string_to_metric_families(httpx.get(f"{url}/metrics").text):
        for sample in family.samples:
            if sample.name == "groundhog_single_flight_waits_total":
                return sample.value
    return 0.0


@pytest.fixture(scope="module")
def scraped(resolver: ServerProcess) -> dict[str, list[dict[str, str]]]:
    """/metrics after shared, recorded, refetched and write decisions and one single-flight wait."""
    proxy = ProxyDouble(resolver.url, World())
    proxy.open("metrics-tape")
    b0, b1 = proxy.fork("metrics-tape", children=2)
    first = proxy.resolve("metrics-tape", b0, path="/race").json()
    assert first["action"] == "forward"
    with ThreadPoolExecutor(max_workers=1) as pool:
        waiter = pool.submit(proxy.resolve, "metrics-tape", b1, "GET", "/race")
        wait_until(lambda: _waits(resolver.url) >= 1, timeout=20, what="a single-flight wait")
        body = base64.b64encode(b'{"ok": true}').decode()
        recorded = proxy.http.post(
            "/v1/record",
            json={"ticket": first["ticket"], "response": {"status": 200, "body": body}},
        )
        assert recorded.status_code == 200, recorded.text
        assert waiter.result(timeout=30).json()["decision"] == "shared"
    proxy.ask("metrics-tape", b1, "POST", "/docs/1", body=b"x")
    proxy.ask("metrics-tape", b1, path="/docs/1")
    proxy.http.close()
    return _scrape(resolver.url)


def test_every_queried_metric_is_exposed(dashboard, scraped) -> None:
    expressions = _expressions(dashboard)
    assert len(expressions) >= 8
    for expression in expressions:
        names = METRIC.findall(expression)
        assert names, f"query names no groundhog metric: {expression}"
        for name in names:
            assert name in scraped, f"{name} (in {expression!r}) is not on /metrics"


def test_every_label_the_dashboard_uses_is_exposed(dashboard, scraped) -> None:
    for expression in _expressions(dashboard):
        exposed = {
            label for name in METRIC.findall(expression) for s in scraped[name] for label in s
        }
        used = {label for label, _, _ in LABEL_MATCHER.findall(expression)}
        for group in GROUPING.findall(expression):
            used |= {label.strip() for label in group.split(",") if label.strip()}
        missing = used - exposed - SCRAPE_LABELS
        assert not missing, f"{expression!r} uses labels {missing} the metrics do not carry"


def test_decision_words_in_queries_are_real_decisions(dashboard, scraped) -> None:
    valid = {str(decision) for decision in Decision}
    for expression in _expressions(dashboard):
        for label, _, value in LABEL_MATCHER.findall(expression):
            if label == "decision":
                assert set(value.split("|")) <= valid, f"unknown decision in {expression!r}"
    seen = {sample["decision"] for sample in scraped["groundhog_decisions_total"]}
    assert {"shared", "recorded", "refetched", "write"} <= seen


def test_dashboard_is_importable(dashboard) -> None:
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids)) and dashboard["uid"] and dashboard["title"]
    for panel in dashboard["panels"]:
        assert panel["datasource"]["uid"] == "${DS_PROMETHEUS}"
        assert {"x", "y", "w", "h"} <= set(panel["gridPos"])
