"""`POST /v1/tunnel` against a real resolver process: the tape's state decides, bad input is 4xx."""

from __future__ import annotations

from tests.resolver.proxy_double import ProxyDouble


def _ask(proxy: ProxyDouble, **body):
    return proxy.http.post("/v1/tunnel", json={"branch": "root", "port": 5432, **body})


def test_listed_host_passes_while_online_and_not_once_sealed(
    proxy: ProxyDouble, tape_name: str
) -> None:
    proxy.open(tape_name, passthrough_hosts=["db.internal"])
    listed = _ask(proxy, tape=tape_name, host="db.internal")
    unlisted = _ask(proxy, tape=tape_name, host="cache.internal")
    by_proxy = _ask(proxy, tape=tape_name, host="cache.internal", listed_by_proxy=True)
    assert [r.json()["decision"] for r in (listed, unlisted, by_proxy)] == [
        "passthrough",
        "refused",
        "passthrough",
    ]
    assert proxy.http.post(f"/v1/tapes/{tape_name}/seal").status_code == 200
    sealed = _ask(proxy, tape=tape_name, host="db.internal", listed_by_proxy=True)
    assert sealed.json()["decision"] == "refused" and "sealed" in sealed.json()["detail"]
    metrics = proxy.http.get("/metrics").text
    assert 'groundhog_tunnels_total{decision="refused"}' in metrics


def test_unknown_tape_or_branch_and_bad_input_are_problems(
    proxy: ProxyDouble, tape_name: str
) -> None:
    proxy.open(tape_name)
    missing_tape = _ask(proxy, tape=f"{tape_name}-absent", host="db.internal")
    missing_branch = _ask(proxy, tape=tape_name, host="db.internal", branch="root/nope")
    bad_port = _ask(proxy, tape=tape_name, host="db.internal", port=70000)
    assert (missing_tape.status_code, missing_branch.status_code) == (404, 404)
    assert missing_tape.headers["content-type"] == "application/problem+json"
    assert bad_port.status_code == 422 and "port" in bad_port.text
