"""deploy/kubernetes/rollout-worker-captured.yaml: the capture init container keeps its promises.

The manifest is schema-checked with the others (tests/deploy/test_kubernetes.py); this module
checks what only the captured pod promises: the rules redirect the worker's TCP to the port the
proxy's transparent listener uses, exempt exactly the proxy's own uid, drop what is left, and
parse as iptables-restore input (checked with `iptables-restore --test` in a throwaway network
namespace where the machine allows it).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from typing import Any

import pytest

from tests.deploy import kube

Manifests = list[tuple[str, dict[str, Any]]]
DEPLOYMENT = "rollout-worker-captured"


def rules(manifests: Manifests, name: str) -> str:
    return str(kube.find(manifests, "ConfigMap", "groundhog-capture-rules")["data"][name])


def argument(item: dict[str, Any], flag: str) -> str:
    return str(item["args"][item["args"].index(flag) + 1])


def test_the_worker_tcp_goes_to_the_proxys_transparent_port_and_nothing_else_leaves(
    manifests: Manifests,
) -> None:
    worker = kube.find(manifests, "Deployment", DEPLOYMENT)
    proxy = kube.container(worker, "groundhog-proxy")
    port = argument(proxy, "--transparent-port")
    proxy_uid = proxy["securityContext"]["runAsUser"]
    assert proxy_uid != kube.pod_spec(worker)["securityContext"]["runAsUser"]
    assert {"name": "transparent", "containerPort": int(port)} in proxy["ports"]
    v4 = rules(manifests, "rules-v4").splitlines()
    assert f"-A GROUNDHOG_OUTPUT -p tcp -j REDIRECT --to-ports {port}" in v4
    for table in ("rules-v4", "rules-v6"):
        lines = rules(manifests, table).splitlines()
        exempt = [line for line in lines if "--uid-owner" in line]
        assert exempt and all(f"--uid-owner {proxy_uid} -j RETURN" in line for line in exempt)
        egress = [line for line in lines if line.startswith("-A GROUNDHOG_EGRESS")]
        assert egress[-1] == "-A GROUNDHOG_EGRESS -j DROP", table


def test_the_init_container_runs_first_with_only_network_capabilities(
    manifests: Manifests,
) -> None:
    worker = kube.find(manifests, "Deployment", DEPLOYMENT)
    names = [item["name"] for item in kube.pod_spec(worker)["initContainers"]]
    assert names.index("capture-init") < names.index("groundhog-proxy")
    init = kube.container(worker, "capture-init")
    context = init["securityContext"]
    assert context["capabilities"] == {"drop": ["ALL"], "add": ["NET_ADMIN", "NET_RAW"]}
    assert "restartPolicy" not in init, "the rules outlast it: it runs once"
    script = " ".join(init["command"])
    for name in ("rules-v4", "rules-v6"):
        assert re.search(rf"\b(ip6?tables-restore) /etc/groundhog/capture/{name}\b", script)
    assert kube.mounted_volume(worker, init, "/etc/groundhog/capture")["configMap"] == {
        "name": "groundhog-capture-rules"
    }


def test_the_captured_worker_sets_no_proxy_but_trusts_the_ca(manifests: Manifests) -> None:
    worker = kube.find(manifests, "Deployment", DEPLOYMENT)
    variables = kube.env(kube.container(worker, "worker"))
    assert not {name for name in variables if name.lower().endswith("_proxy")}
    assert variables["SSL_CERT_FILE"] == variables["REQUESTS_CA_BUNDLE"]
    assert variables["NODE_EXTRA_CA_CERTS"].endswith("mitmproxy-ca-cert.pem")
    proxy = kube.container(worker, "groundhog-proxy")
    assert argument(proxy, "--tape") == "$(GROUNDHOG_TAPE)" and "GROUNDHOG_TAPE" in kube.env(proxy)


@pytest.mark.parametrize(
    ("name", "program"), [("rules-v4", "iptables-restore"), ("rules-v6", "ip6tables-restore")]
)
def test_the_rules_parse_as_iptables_restore_input(
    manifests: Manifests, name: str, program: str
) -> None:
    if os.geteuid() != 0 or not shutil.which(program) or not shutil.which("unshare"):
        pytest.skip(f"needs root, unshare and {program} to check the rules in a throwaway netns")
    checked = subprocess.run(
        ["unshare", "--net", program, "--test"],
        input=rules(manifests, name),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert checked.returncode == 0, checked.stderr
    broken = rules(manifests, name).replace("--uid-owner", "--uid-ownr")
    refused = subprocess.run(
        ["unshare", "--net", program, "--test"],
        input=broken,
        capture_output=True,
        text=True,
        check=False,
    )
    assert refused.returncode != 0
