"""Walk Kubernetes manifests: find a resource, list a pod template's containers.

The structural tests of deploy/kubernetes ask the same questions of several workloads (which
containers, which probes, which volumes); answering them in one place keeps each test to the
promise it checks.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

Manifest = dict[str, Any]
WORKLOAD_KINDS = {"Deployment", "StatefulSet", "DaemonSet", "Job"}


def find(manifests: list[tuple[str, Manifest]], kind: str, name: str) -> Manifest:
    for _, document in manifests:
        if document["kind"] == kind and document["metadata"]["name"] == name:
            return document
    raise AssertionError(f"no {kind} named {name} in deploy/kubernetes")


def workloads(manifests: list[tuple[str, Manifest]]) -> Iterator[Manifest]:
    for _, document in manifests:
        if document["kind"] in WORKLOAD_KINDS:
            yield document


def pod_spec(workload: Manifest) -> Manifest:
    return workload["spec"]["template"]["spec"]


def containers(workload: Manifest) -> list[Manifest]:
    """Init containers (including native sidecars) and containers, in start order."""
    spec = pod_spec(workload)
    return [*spec.get("initContainers", []), *spec["containers"]]


def container(workload: Manifest, name: str) -> Manifest:
    for item in containers(workload):
        if item["name"] == name:
            return item
    names = [item["name"] for item in containers(workload)]
    raise AssertionError(f"{workload['metadata']['name']} has no container {name}; has {names}")


def env(item: Manifest) -> dict[str, Any]:
    """A container's env as name -> value (or the valueFrom mapping)."""
    return {
        entry["name"]: entry.get("value", entry.get("valueFrom")) for entry in item.get("env", [])
    }


def volume(workload: Manifest, name: str) -> Manifest:
    for item in pod_spec(workload).get("volumes", []):
        if item["name"] == name:
            return item
    raise AssertionError(f"{workload['metadata']['name']} has no volume {name}")


def mounted_volume(workload: Manifest, item: Manifest, path: str) -> Manifest:
    """The pod volume that `item` sees at `path`: the deepest mount at or above it."""
    candidates = [
        mount
        for mount in item.get("volumeMounts", [])
        if path == mount["mountPath"] or path.startswith(mount["mountPath"].rstrip("/") + "/")
    ]
    if not candidates:
        raise AssertionError(f"container {item['name']} mounts nothing at {path}")
    deepest = max(candidates, key=lambda mount: len(mount["mountPath"]))
    return volume(workload, deepest["name"])
