"""Branch capabilities over the resolver's routes: handed out by fork and the branch view,
checked by `/v1/resolve` before the ask takes anything (resolver/capabilities.py)."""

from __future__ import annotations

import base64
from typing import Any

import httpx

from tests.resolver.proxy_double import ProxyDouble


def _fork(proxy: ProxyDouble, tape: str, children: Any = 2, parent: str = "root") -> dict:
    reply = proxy.http.post(f"/v1/tapes/{tape}/fork", json={"parent": parent, "children": children})
    assert reply.status_code == 201, reply.text
    return reply.json()


def _branch(proxy: ProxyDouble, tape: str, branch: str) -> dict:
    reply = proxy.http.get(f"/v1/tapes/{tape}/branches/{branch}")
    assert reply.status_code == 200, reply.text
    return reply.json()


def _resolve(
    proxy: ProxyDouble, tape: str, branch: str, capability: str | None, path: str = "/q"
) -> httpx.Response:
    ask: dict[str, Any] = {
        "tape": tape,
        "branch": branch,
        "method": "GET",
        "scheme": "https",
        "host": "api.example.com",
        "port": 443,
        "path": path,
        "body": base64.b64encode(b"").decode(),
    }
    if capability is not None:
        ask["capability"] = capability
    return proxy.http.post("/v1/resolve", json=ask)


def test_the_fork_answer_and_the_branch_view_carry_each_branch_its_own(
    proxy: ProxyDouble, tape_name: str
) -> None:
    proxy.open(tape_name)
    forked = _fork(proxy, tape_name)
    capabilities = forked["capabilities"]
    assert set(capabilities) == {"root/b0", "root/b1"} == set(forked["branches"])
    assert capabilities["root/b0"] != capabilities["root/b1"]
    for path, capability in capabilities.items():
        assert _branch(proxy, tape_name, path)["capability"] == capability
    root = _branch(proxy, tape_name, "root")["capability"]
    assert root not in capabilities.values()
    listed = proxy.http.get(f"/v1/tapes/{tape_name}/branches").json()["branches"]
    assert all(branch.get("capability") is None for branch in listed)  # only where asked for


def test_a_required_tape_serves_only_the_branch_whose_capability_is_presented(
    proxy: ProxyDouble, tape_name: str
) -> None:
    info = proxy.open(tape_name, branch_capabilities="required")
    assert info["branch_capabilities"] == "required"
    other = f"{tape_name}-other"
    proxy.open(other, branch_capabilities="required")
    own, sibling = _fork(proxy, tape_name)["capabilities"].values()
    other_capability = _fork(proxy, other)["capabilities"]["root/b0"]

    for capability in (None, sibling, other_capability, own.upper(), "x" * 32):
        refused = _resolve(proxy, tape_name, "root/b0", capability)
        assert refused.status_code == 403, refused.text
        assert refused.headers["content-type"] == "application/problem+json"
        problem = refused.json()
        assert problem["type"].endswith("capability-refused")
        assert problem["decision"] == "refused" and problem["branch"] == "root/b0"
        assert own not in refused.text
    # Nothing the refused asks did was kept: the branch's first served ask is occurrence 0.
    assert _branch(proxy, tape_name, "root/b0")["events"] == 0
    served = _resolve(proxy, tape_name, "root/b0", own)
    assert served.status_code == 200, served.text
    assert served.json()["occurrence"] == 0
    # The parent's capability opens no child, a child's no parent.
    root = _branch(proxy, tape_name, "root")["capability"]
    assert _resolve(proxy, tape_name, "root/b0", root).status_code == 403
    assert _resolve(proxy, tape_name, "root", own).status_code == 403
    assert _resolve(proxy, tape_name, "root", root).status_code == 200


def test_an_optional_tape_serves_without_one(proxy: ProxyDouble, tape_name: str) -> None:
    # A loopback resolver's default is `optional` (tests/resolver/test_capability_defaults.py).
    proxy.open(tape_name)
    _fork(proxy, tape_name)
    assert _resolve(proxy, tape_name, "root/b0", None).status_code == 200
    # ... and looks at nothing presented (any capability of any branch opens every branch).
    assert _resolve(proxy, tape_name, "root/b1", "junk", path="/r").status_code == 200
    explicit = f"{tape_name}-x"
    proxy.open(explicit, branch_capabilities="optional")
    assert _resolve(proxy, explicit, "root", None).status_code == 200


def test_a_tape_setting_that_is_no_policy_is_a_422_naming_the_values(
    proxy: ProxyDouble, tape_name: str
) -> None:
    reply = proxy.http.post("/v1/tapes", json={"name": tape_name, "branch_capabilities": "yes"})
    assert reply.status_code == 422
    detail = reply.json()["detail"]
    assert "branch_capabilities" in detail and "'required'" in detail and "'optional'" in detail


def test_reopening_with_another_policy_is_a_conflict(proxy: ProxyDouble, tape_name: str) -> None:
    proxy.open(tape_name, branch_capabilities="required")
    again = proxy.http.post(
        "/v1/tapes", json={"name": tape_name, "branch_capabilities": "optional"}
    )
    assert again.status_code == 409 and "branch_capabilities" in again.json()["detail"]


def test_a_raw_tunnel_of_a_required_tape_needs_its_branchs_capability(
    proxy: ProxyDouble, tape_name: str
) -> None:
    proxy.open(tape_name, branch_capabilities="required", passthrough_hosts=["db.internal"])
    own, sibling = _fork(proxy, tape_name)["capabilities"].values()

    def tunnel(capability: str | None) -> httpx.Response:
        body = {"tape": tape_name, "branch": "root/b0", "host": "db.internal", "port": 5432}
        return proxy.http.post("/v1/tunnel", json={**body, "capability": capability})

    for wrong in (None, sibling):
        refused = tunnel(wrong)
        assert refused.status_code == 403 and refused.json()["type"].endswith("capability-refused")
    assert tunnel(own).json()["decision"] == "passthrough"
