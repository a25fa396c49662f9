"""deploy/kubernetes: schema-valid offline, and the sidecar pattern's promises hold.

Every document is validated against the Kubernetes JSON schemas that the kubernetes-validate
wheel ships (strict: unknown fields fail), so no network is needed. Where `kubectl` exists,
`kubectl kustomize` renders the kustomization and the rendered output is validated too.
"""

from __future__ import annotations

import copy
import shutil
import subprocess
from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.deploy import kube
from tests.deploy.compose_local import MODULE_ENTRIES, REPO_ROOT
from tests.deploy.conftest import KUBERNETES_DIR
from tests.deploy.dockerfile_parser import Dockerfile

KUBERNETES_VERSION = "1.30"  # native sidecars (initContainers with restartPolicy) need >= 1.29
INFERENCE_HOST = "model-inference.inference.svc.cluster.local"
PROXY_URL = "http://127.0.0.1:8080"
# Secrets the operator creates from files (they hold a private key); docs/deploy.md says how.
OPERATOR_SECRETS = {"groundhog-ca"}

Manifests = list[tuple[str, dict[str, Any]]]


def validate(document: dict[str, Any]) -> None:
    kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)


def test_the_kustomization_lists_every_manifest(kustomization: dict[str, Any]) -> None:
    listed = set(kustomization["resources"])
    present = {path.name for path in KUBERNETES_DIR.glob("*.yaml")} - {"kustomization.yaml"}
    assert listed == present
    assert kustomization["namespace"] == "groundhog"


def test_every_document_matches_the_kubernetes_schema(manifests: Manifests) -> None:
    assert manifests, "no manifests found"
    for filename, document in manifests:
        try:
            validate(document)
        except kubernetes_validate.ValidationError as error:
            pytest.fail(f"{filename}: {document['kind']} {document['metadata']['name']}: {error}")


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("spec", "replicas"), "two"),
        (("spec", "template", "spec", "containers", 0, "resourcez"), {}),
        (("spec", "template", "spec", "initContainers", 1, "restartPolicy"), 5),
    ],
)
def test_the_schema_check_catches_a_broken_document(
    manifests: Manifests, path: tuple[Any, ...], value: Any
) -> None:
    document = copy.deepcopy(kube.find(manifests, "Deployment", "rollout-worker"))
    target = document
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(kubernetes_validate.ValidationError):
        validate(document)


def test_kustomize_renders_valid_manifests() -> None:
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl not on PATH: `kubectl kustomize` rendering not checked")
    result = subprocess.run(
        ["kubectl", "kustomize", str(KUBERNETES_DIR)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    rendered = [document for document in yaml.safe_load_all(result.stdout) if document]
    for document in rendered:
        validate(document)
        if document["kind"] != "Namespace":
            assert document["metadata"]["namespace"] == "groundhog"
    images = {
        item["image"]
        for document in rendered
        if document["kind"] in kube.WORKLOAD_KINDS
        for item in kube.containers(document)
    }
    assert "groundhog:0.1.0" in images
    assert not {"groundhog", "rollout-worker"} & images, "kustomize `images:` did not apply"


def test_every_container_has_requests_and_limits(manifests: Manifests) -> None:
    for workload in kube.workloads(manifests):
        for item in kube.containers(workload):
            resources = item.get("resources", {})
            for kind in ("requests", "limits"):
                assert set(resources.get(kind, {})) >= {"cpu", "memory"}, (
                    f"{workload['metadata']['name']}/{item['name']} lacks {kind}"
                )


def test_every_service_selects_pods_and_names_their_ports(manifests: Manifests) -> None:
    templates = [workload["spec"]["template"] for workload in kube.workloads(manifests)]
    for _, service in manifests:
        if service["kind"] != "Service":
            continue
        selector = service["spec"]["selector"].items()
        matches = [t for t in templates if selector <= t["metadata"]["labels"].items()]
        assert matches, f"Service {service['metadata']['name']} selects no pod template"
        ports = {
            p.get("name")
            for t in matches
            for c in t["spec"]["containers"]
            for p in c.get("ports", [])
        }
        for port in service["spec"]["ports"]:
            assert port["targetPort"] in ports, f"{service['metadata']['name']}: {port}"


def test_the_resolver_runs_replicas_with_healthz_probes(manifests: Manifests) -> None:
    resolver = kube.find(manifests, "Deployment", "groundhog-resolver")
    assert resolver["spec"]["replicas"] >= 2
    container = kube.container(resolver, "resolver")
    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        assert container[probe]["httpGet"]["path"] == "/healthz", probe
    assert container["args"][:1] == ["resolver"]
    assert container["args"][container["args"].index("--port") + 1] == "8070"
    database = kube.env(container)["GROUNDHOG_DATABASE_URL"]["secretKeyRef"]
    secret = kube.find(manifests, "Secret", database["name"])
    assert secret["stringData"][database["key"]].startswith("postgresql+psycopg://")
    budget = kube.find(manifests, "PodDisruptionBudget", "groundhog-resolver")
    assert budget["spec"]["minAvailable"] < resolver["spec"]["replicas"]


def test_the_resolver_requires_branch_capabilities_under_the_shared_key(
    manifests: Manifests,
) -> None:
    resolver = kube.find(manifests, "Deployment", "groundhog-resolver")
    variables = kube.env(kube.container(resolver, "resolver"))
    assert variables["GROUNDHOG_BRANCH_CAPABILITIES"] == "required"
    # Capabilities derive from the deployment key: every replica must hold the same one.
    assert variables["GROUNDHOG_REDACTION_KEY"]["secretKeyRef"]["key"] == "redaction-key"


def test_postgres_is_a_statefulset_behind_its_headless_service(manifests: Manifests) -> None:
    database = kube.find(manifests, "StatefulSet", "groundhog-postgres")
    service = kube.find(manifests, "Service", database["spec"]["serviceName"])
    assert service["spec"]["clusterIP"] == "None"
    container = kube.container(database, "postgres")
    assert "pg_isready" in " ".join(container["readinessProbe"]["exec"]["command"])
    url = kube.find(manifests, "Secret", "groundhog-postgres")["stringData"]["database-url"]
    assert f"@{service['metadata']['name']}:5432/" in url


def test_the_proxy_is_a_sidecar_probed_on_its_port(manifests: Manifests) -> None:
    worker = kube.find(manifests, "Deployment", "rollout-worker")
    init = {item["name"]: item for item in kube.pod_spec(worker)["initContainers"]}
    proxy = init["groundhog-proxy"]
    assert proxy["restartPolicy"] == "Always", "a native sidecar keeps running beside the worker"
    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        assert proxy[probe] == {**proxy[probe], "tcpSocket": {"port": 8080}}, probe
    assert proxy["args"][0] == "proxy" and proxy["args"][0] in MODULE_ENTRIES
    assert {"name": "proxy", "containerPort": 8080} in proxy["ports"]
    resolver_service = kube.find(manifests, "Service", "groundhog-resolver")
    assert kube.env(proxy)["GROUNDHOG_RESOLVER_URL"] == (
        f"http://{resolver_service['metadata']['name']}:{resolver_service['spec']['ports'][0]['port']}"
    )
    # The proxy keeps its CA in <--data>/ca: the full Secret (with the key) is mounted there.
    data = proxy["args"][proxy["args"].index("--data") + 1]
    ca = kube.mounted_volume(worker, proxy, f"{data}/ca")
    assert ca["secret"]["secretName"] == "groundhog-ca" and "items" not in ca["secret"]


def test_the_worker_goes_through_the_proxy_except_for_inference(manifests: Manifests) -> None:
    worker = kube.find(manifests, "Deployment", "rollout-worker")
    variables = kube.env(kube.container(worker, "worker"))
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        assert variables[name] == PROXY_URL, name
    for name in ("NO_PROXY", "no_proxy"):
        bypass = variables[name].split(",")
        assert INFERENCE_HOST in bypass and "groundhog-resolver" in bypass, name


def test_the_worker_trusts_the_ca_but_never_sees_its_key(manifests: Manifests) -> None:
    worker = kube.find(manifests, "Deployment", "rollout-worker")
    container = kube.container(worker, "worker")
    variables = kube.env(container)
    ca_volume = kube.mounted_volume(worker, container, variables["NODE_EXTRA_CA_CERTS"])
    assert ca_volume["secret"]["secretName"] == "groundhog-ca"
    assert [item["key"] for item in ca_volume["secret"]["items"]] == ["mitmproxy-ca-cert.pem"]
    bundle = variables["SSL_CERT_FILE"]
    assert variables["REQUESTS_CA_BUNDLE"] == bundle == variables["CURL_CA_BUNDLE"]
    assert "emptyDir" in kube.mounted_volume(worker, container, bundle)
    # The bundle is written before the worker starts, from the public roots plus the CA.
    writer = kube.container(worker, "ca-bundle")
    script = " ".join(writer["command"])
    assert "/etc/ssl/certs/ca-certificates.crt" in script and f"> {bundle}" in script
    assert variables["NODE_EXTRA_CA_CERTS"] in script


def test_every_secret_referenced_exists_or_is_documented(manifests: Manifests) -> None:
    defined = {doc["metadata"]["name"] for _, doc in manifests if doc["kind"] == "Secret"}
    referenced: set[str] = set()
    for workload in kube.workloads(manifests):
        for volume in kube.pod_spec(workload).get("volumes", []):
            if "secret" in volume:
                referenced.add(volume["secret"]["secretName"])
        for item in kube.containers(workload):
            for value in kube.env(item).values():
                if isinstance(value, dict) and "secretKeyRef" in value:
                    referenced.add(value["secretKeyRef"]["name"])
    assert referenced - defined == OPERATOR_SECRETS
    guide = (REPO_ROOT / "docs" / "deploy.md").read_text()
    for secret in OPERATOR_SECRETS:
        assert f"create secret generic {secret}" in guide


def test_pods_run_as_the_images_user(manifests: Manifests, dockerfile: Dockerfile) -> None:
    user = dockerfile.final.last("USER")
    assert user is not None
    uid = int(user.arguments.split(":")[0])
    for workload in kube.workloads(manifests):
        context = kube.pod_spec(workload)["securityContext"]
        assert context["runAsNonRoot"] is True
        images = {item["image"] for item in kube.containers(workload)}
        if "groundhog" in images:
            assert context["runAsUser"] == uid, workload["metadata"]["name"]
        for item in kube.containers(workload):
            assert item["securityContext"]["allowPrivilegeEscalation"] is False
