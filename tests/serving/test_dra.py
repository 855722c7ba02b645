"""The DRA hook of the serving contract: device claims, a ComputeDomain per LeaderWorkerSet group, the group's
NVLink domain, and the objects validated strictly (ComputeDomain against its vendored CRD, ``resource.k8s.io/v1``
against Kubernetes 1.34)."""

import copy
from typing import Any

import jsonschema
import pytest

from k3infra.offline import Recording, Registration
from k3infra.serving import dra
from tests.serving.shapes import record, variant
from tests.validation import crd_errors, embedded_pod_templates, kubernetes_version, validate_kubernetes

LWS = "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet"
CD = "kubernetes:resource.nvidia.com/v1beta1:ComputeDomain"
RCT = "kubernetes:resource.k8s.io/v1:ResourceClaimTemplate"
DRA_POOL = {
    "device_claims": [{"name": "rdma", "device_class": "mrdma.google.com", "count": 8}],
    "compute_domains": True,
    "group_topology_label": "cloud.google.com/gce-topology-subblock",
    "capabilities": ["IPC_LOCK"],
}


def recorded(replicas: int = 1, nodes: int = 2, **config: Any) -> Recording:
    shape = variant("a4xmax-gateway", pool={**DRA_POOL, "node_count": nodes * replicas},
                    config={"k3infra:replicas": replicas, "k3infra:nodes": nodes, **config})
    return record(shape).recording


def server_of(rec: Recording, type_: str) -> list[Registration]:
    """The server's objects of ``type_`` (the fabric check claims the same shapes under its own names)."""
    return [r for r in rec.by_type(type_) if r.name.startswith("k3-server")]


def lws_of(rec: Recording) -> list[Registration]:
    return sorted(rec.by_type(LWS), key=lambda r: r.name)


def claims(template: dict[str, Any]) -> tuple[list[tuple[str, str]], list[str]]:
    """(the pod's resourceClaims as (name, template), the engine container's claim names)."""
    spec = template["spec"]
    pod = [(c["name"], c["resourceClaimTemplateName"]) for c in spec.get("resourceClaims", [])]
    engine = next(c for c in spec["containers"] if c["name"] == "engine")
    return pod, [c["name"] for c in engine["resources"].get("claims", [])]


def test_one_replica_one_compute_domain_claimed_by_leader_and_worker() -> None:
    rec = recorded()
    (domain,) = server_of(rec, CD)
    assert domain.inputs["metadata"]["name"] == "k3-server-nvlink-0"
    assert domain.inputs["spec"] == {"numNodes": 0, "channel": {"resourceClaimTemplate": {"name": "k3-server-nvlink-0-channel"}}}
    (rdma,) = server_of(rec, RCT)
    assert rdma.inputs["spec"] == {"spec": {"devices": {"requests": [{"name": "rdma", "exactly": {
        "deviceClassName": "mrdma.google.com", "allocationMode": "ExactCount", "count": 8}}]}}}
    (lws,) = lws_of(rec)
    assert lws.inputs["spec"]["replicas"] == 1
    lwt = lws.inputs["spec"]["leaderWorkerTemplate"]
    for role in ("leaderTemplate", "workerTemplate"):
        pod, container = claims(lwt[role])
        assert pod == [("rdma", "k3-server-rdma"), ("nvlink-channel", "k3-server-nvlink-0-channel")]
        assert container == ["rdma", "nvlink-channel"]
    # the workload waits for the objects its claims resolve to
    assert {domain.urn, rdma.urn} <= set(lws.dependencies)


def test_each_group_gets_a_compute_domain_and_a_leaderworkerset_of_its_own() -> None:
    """LWS templates are shared by all groups, so per-group claims need one LWS per group (replicas: 1 each)."""
    rec = recorded(replicas=3)
    domains = sorted(d.inputs["metadata"]["name"] for d in server_of(rec, CD))
    assert domains == ["k3-server-nvlink-0", "k3-server-nvlink-1", "k3-server-nvlink-2"]
    sets = lws_of(rec)
    assert [s.inputs["metadata"]["name"] for s in sets] == ["k3-server-lws", "k3-server-lws-1", "k3-server-lws-2"]
    assert [s.name for s in sets] == ["k3-server-workload", "k3-server-workload-1", "k3-server-workload-2"]
    for i, s in enumerate(sets):
        assert s.inputs["spec"]["replicas"] == 1
        for role in ("leaderTemplate", "workerTemplate"):
            pod, _ = claims(s.inputs["spec"]["leaderWorkerTemplate"][role])
            assert dict(pod)["nvlink-channel"] == f"k3-server-nvlink-{i}-channel"
            assert dict(pod)["rdma"] == "k3-server-rdma"  # one template: each pod gets its own claim from it
    # an update replaces one group at a time: each LWS waits for the one before it
    assert sets[0].urn in sets[1].dependencies and sets[1].urn in sets[2].dependencies
    # the Services, the PDB and the gateway select every group's pods by the same labels
    labels = {tuple(sorted(s.inputs["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["metadata"]["labels"].items()))
              for s in sets}
    assert len(labels) == 1


def test_without_compute_domains_groups_share_one_leaderworkerset() -> None:
    shape = variant("a4xmax-gateway", pool={**DRA_POOL, "compute_domains": False, "node_count": 4},
                    config={"k3infra:replicas": 2})
    rec = record(shape).recording
    assert not server_of(rec, CD)
    (lws,) = lws_of(rec)
    assert lws.inputs["spec"]["replicas"] == 2
    pod, container = claims(lws.inputs["spec"]["leaderWorkerTemplate"]["workerTemplate"])
    assert pod == [("rdma", "k3-server-rdma")] and container == ["rdma"]


def test_pipeline_layout_claims_no_channel_even_where_compute_domains_exist() -> None:
    """TP=4 x PP=2 keeps tensor parallelism inside each node: nothing to claim from a ComputeDomain."""
    rec = recorded(**{"k3infra:tensorParallel": 4, "k3infra:pipelineParallel": 2})
    assert not server_of(rec, CD)
    (lws,) = lws_of(rec)
    engine = next(c for c in lws.inputs["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"])
    assert "NCCL_MNNVL_ENABLE" not in {e["name"] for e in engine["env"]}


def test_a_channel_claim_turns_on_nccl_multi_node_nvlink() -> None:
    (lws,) = lws_of(recorded())
    for role in ("leaderTemplate", "workerTemplate"):
        engine = lws.inputs["spec"]["leaderWorkerTemplate"][role]["spec"]["containers"][0]
        env = {e["name"]: e.get("value") for e in engine["env"]}
        assert (env["NCCL_CUMEM_ENABLE"], env["NCCL_MNNVL_ENABLE"]) == ("1", "1")
        assert engine["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["IPC_LOCK"]}


def test_a_group_stays_in_one_nvlink_domain_without_excluding_other_groups() -> None:
    (lws,) = lws_of(recorded())
    for role in ("leaderTemplate", "workerTemplate"):
        affinity = lws.inputs["spec"]["leaderWorkerTemplate"][role]["spec"]["affinity"]
        assert affinity == {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
            "topologyKey": "cloud.google.com/gce-topology-subblock",
            "labelSelector": {"matchLabels": {"app.kubernetes.io/instance": "k3-server",
                                              "app.kubernetes.io/component": "model-server"}},
            "matchLabelKeys": ["leaderworkerset.sigs.k8s.io/group-key"],
        }]}}
    assert "leaderworkerset.sigs.k8s.io/exclusive-topology" not in lws.inputs["metadata"].get("annotations", {})


def test_immutable_specs_are_replaced_not_updated() -> None:
    """ComputeDomain (CEL self == oldSelf) and ResourceClaimTemplate specs cannot change in place."""
    rec = recorded()
    for r in [*server_of(rec, CD), *server_of(rec, RCT)]:
        assert r.replace_on_changes == ("spec",) and r.delete_before_replace, r.name


def test_numnodes_is_zero_whatever_the_replica_spans() -> None:
    # v25.12.0's CRD (schemas/crds/nvidia-dra-computedomains.yaml): numNodes is deprecated and, with the default
    # IMEXDaemonsWithDNSNames, "recommended to be set to zero"; it gates nothing and only drives the status.
    for nodes in (2, 4):
        (domain,) = server_of(recorded(nodes=nodes), CD)
        assert domain.inputs["spec"]["numNodes"] == 0, nodes


def test_objects_validate_strictly_and_a_planted_field_fails() -> None:
    rec = recorded()
    (domain,) = server_of(rec, CD)
    (rdma,) = server_of(rec, RCT)
    (lws,) = lws_of(rec)
    cd_doc = {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomain", **{
        k: v for k, v in domain.inputs.items() if k in ("metadata", "spec")}}
    assert crd_errors(cd_doc) == []
    bad = copy.deepcopy(cd_doc)
    bad["spec"]["channel"]["allocationMode"] = "Some"
    assert crd_errors(bad)
    bad = copy.deepcopy(cd_doc)
    bad["spec"]["numNode"] = 2
    assert crd_errors(bad)
    assert kubernetes_version("resource.k8s.io/v1") == "1.34"
    validate_kubernetes(dict(rdma.inputs))
    bad_rct = copy.deepcopy(dict(rdma.inputs))
    bad_rct["spec"]["spec"]["devices"]["requests"][0]["exactly"]["counts"] = 8
    with pytest.raises(jsonschema.ValidationError):
        validate_kubernetes(bad_rct)
    for _, template in embedded_pod_templates({"kind": "LeaderWorkerSet", **lws.inputs}):
        validate_kubernetes(template)


def test_uses_compute_domains_only_when_tensor_parallelism_spans_nodes() -> None:
    pool: Any = {"gpus_per_node": 4, "compute_domains": True}
    assert dra.uses_compute_domains(pool, 8) and not dra.uses_compute_domains(pool, 4)
    assert not dra.uses_compute_domains({**pool, "compute_domains": False}, 8)
