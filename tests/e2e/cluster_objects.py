"""What the local control plane needs to stand in for a user's GPU cluster: kwok nodes shaped like the stack's GPU
nodes (from the stack's own configuration and plan, so a change of shape moves the test with it) and a CPU node."""

from typing import Any

from k3infra import offline
from k3infra.planning import Plan

KWOK_ANNOTATION = "kwok.x-k8s.io/node"


def _node(name: str, labels: dict[str, str], capacity: dict[str, str], taints: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "annotations": {KWOK_ANNOTATION: "fake"},
                     "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "type": "kwok",
                                **labels}},
        "spec": {"taints": taints},
        "status": {"capacity": capacity, "allocatable": capacity,
                   "nodeInfo": {"architecture": labels.get("kubernetes.io/arch", "amd64"), "operatingSystem": "linux",
                                "kubeletVersion": "fake", "kernelVersion": "fake", "osImage": "fake",
                                "containerRuntimeVersion": "fake", "kubeProxyVersion": "fake", "machineID": "",
                                "systemUUID": "", "bootID": ""}},
    }


def _server_tolerations(plan: Plan) -> list[dict[str, Any]]:
    # The aggregated server's, or (a disaggregated topology) the first role's: every role runs on the one GPU pool.
    for r in plan.recording.ordered():
        if r.name.endswith("-workload") and r.type.split(":")[-1] in ("Deployment", "StatefulSet", "LeaderWorkerSet"):
            spec = offline.unwrap(r.inputs)["spec"]
            template = spec.get("template") or spec.get("leaderWorkerTemplate", {}).get("workerTemplate", {})
            return list(template.get("spec", {}).get("tolerations") or [])
    raise AssertionError("the plan has no server workload")


def gpu_nodes(plan: Plan) -> list[dict[str, Any]]:
    """One kwok node per GPU node of the stack: the labels its server selects, the taints it tolerates, the GPUs,
    vCPUs, memory and architecture of the catalog's (or the stack's) node shape."""
    accel = plan.config.accelerator
    gpus = plan.recording.outputs["gpuNodes"]
    selector = dict(gpus["nodeSelector"])
    topology = gpus.get("topologyLabel")
    taints = [{"key": t["key"], "value": t.get("value", ""), "effect": t["effect"]}
              for t in _server_tolerations(plan) if t.get("effect")]
    capacity = {"cpu": str(accel.vcpus), "memory": f"{accel.host_memory_gib}Gi", "pods": "110",
                gpus["gpuResource"]: str(gpus["gpusPerNode"]), "ephemeral-storage": "4Ti"}
    labels = {**selector, "kubernetes.io/arch": str(accel.cpu_arch), "node.kubernetes.io/instance-type": accel.sku}
    if topology:
        labels[topology] = "domain-0"
    return [_node(f"gpu-{i}", labels, capacity, taints) for i in range(int(gpus["nodes"]))]


def cpu_nodes(count: int = 2) -> list[dict[str, Any]]:
    """The cluster's ordinary nodes (the weight copier and the system pods run there)."""
    return [_node(f"cpu-{i}", {"kubernetes.io/arch": "amd64"}, {"cpu": "16", "memory": "64Gi", "pods": "110",
                                                              "ephemeral-storage": "500Gi"}, [])
            for i in range(count)]
