"""aws-eks-pd's GPU pods get EFA although each prefill group is one node: the decode groups span nodes and the KV
transfer rides EFA (NIXL LIBFABRIC; the independent review of the PD stacks, M2)."""

from typing import Any

from k3infra.aws.efa import needs_efa
from tests.support import plan


def _engines(spec: dict[str, Any]) -> list[dict[str, Any]]:
    if "leaderWorkerTemplate" in spec:
        lwt = spec["leaderWorkerTemplate"]
        templates = [lwt["leaderTemplate"], lwt["workerTemplate"]]
    else:
        templates = [spec["template"]]
    return [c for t in templates for c in t["spec"]["containers"] if c["name"] == "engine"]


def test_pd_stack_pods_request_efa_and_ipc_lock() -> None:
    p = plan("aws-eks-pd")
    assert p.config.nodes == 1 and needs_efa(p.config)
    workloads = {r.name: r.inputs["spec"] for r in p.recording.ordered()
                 if r.type in ("kubernetes:apps/v1:Deployment", "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet")
                 and r.name.startswith(("k3-prefill", "k3-decode"))}
    assert sorted(workloads) == ["k3-decode-workload", "k3-prefill-workload"]
    for name, spec in workloads.items():
        engines = _engines(spec)
        assert engines, name
        for c in engines:
            assert c["resources"]["limits"]["vpc.amazonaws.com/efa"] == "16", name
            assert c["securityContext"]["capabilities"]["add"] == ["IPC_LOCK"], name
            env = {e["name"]: e.get("value") for e in c["env"]}
            assert env["FI_PROVIDER"] == "efa" and env["FI_EFA_USE_DEVICE_RDMA"] == "1", name


def test_single_node_aggregated_stack_follows_its_node_count() -> None:
    p = plan("aws-eks")
    assert needs_efa(p.config) == (p.config.nodes > 1)
