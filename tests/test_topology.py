"""Issue 37's topologies: the sizing's figures, and what the configuration refuses before any resource (each planted
mistake seen to fail here), every problem at once with its key."""

import pytest

from k3infra import planning
from k3infra.catalog import ACCELERATORS, KIMI_K3
from k3infra.catalog.topologies import (
    EAS_ROUTER_CODE,
    KIMI_K3_KV,
    PAI_BLADELLM_PD,
    PAI_EAS_ROLES,
    PAI_EP_PD,
    PAI_LLM_ROUTER,
    All2AllBackend,
    KvTransport,
    Parallelism,
    TopologyMode,
)
from k3infra.config import ConfigError
from k3infra.sizing import kv_transfer, role_fit, smallest_role_nodes
from tests.support import ROOT

PD_STACKS = ("gcp-a4xmax-pd", "azure-gb300-pd", "aws-eks-pd", "kubernetes-gb300-nvl72-pd")


def config(stack: str, *sets: str):
    return planning.validate(planning.load(stack, sets, root=ROOT))


def problems(stack: str, *sets: str) -> dict[str, str]:
    return {key: reason for key, (reason, _) in problems_allowed(stack, *sets).items()}


def problems_allowed(stack: str, *sets: str) -> dict[str, tuple[str, str]]:
    with pytest.raises(ConfigError) as e:
        config(stack, *sets)
    return {p.key: (p.reason, p.allowed) for p in planning.problems_of(e.value)}


def test_k3_kv_geometry() -> None:
    """24 MLA layers x (512 + 64) at FP8, and 69 KDA layers of 96 x 128 x 128 fp32 state + bf16 conv state."""
    assert KIMI_K3_KV.kv_bytes_per_token(1) == 13_824
    assert KIMI_K3_KV.state_bytes_per_request == 69 * (6_291_456 + 221_184) == 449_372_160
    t = kv_transfer(ACCELERATORS["a4x-maxgpu-4g-metal"], KvTransport.UCX_RDMA, 8192)
    assert t.bytes_per_request == 8192 * 13_824 + 449_372_160 and t.gbps == 3200.0 and t.seconds == 0.0014
    tcp = kv_transfer(ACCELERATORS["gb300-nvl72"], KvTransport.TCP, 8192)
    assert tcp.gbps == 100.0 and tcp.seconds == 0.0450


def test_dep_needs_sixteen_gb300s() -> None:
    """DEP replicates ~110 GB on every GPU: 8 GB300s do not hold K3 (the recipe's 16+), 16 do; TEP at 8 does."""
    gb300 = ACCELERATORS["gb300-nvl72"]
    assert not role_fit(KIMI_K3, gb300, Parallelism.DEP, 8, 0.95).fits
    assert role_fit(KIMI_K3, gb300, Parallelism.DEP, 16, 0.95).fits
    assert role_fit(KIMI_K3, gb300, Parallelism.TEP, 8, 0.95).fits


@pytest.mark.parametrize("stack,nodes,backend,transport", [
    ("gcp-a4xmax-pd", (2, 4), All2AllBackend.NVLINK_ONE_SIDED, KvTransport.UCX_RDMA),
    ("azure-gb300-pd", (2, 4), All2AllBackend.NVLINK_ONE_SIDED, KvTransport.UCX_RDMA),
    ("aws-eks-pd", (1, 2), All2AllBackend.ALLGATHER_REDUCESCATTER, KvTransport.LIBFABRIC),
    ("kubernetes-gb300-nvl72-pd", (2, 4), All2AllBackend.NVLINK_ONE_SIDED, KvTransport.TCP),
])
def test_the_disaggregated_stacks(stack: str, nodes: tuple[int, int], backend: All2AllBackend,
                                  transport: KvTransport) -> None:
    cfg = config(stack)
    top = cfg.sizing.topology
    assert top is not None and cfg.topology.mode == TopologyMode.DISAGGREGATED
    assert [(r.name, r.parallelism, r.groups, r.nodes, r.tensor_parallel, r.data_parallel) for r in top.roles] == [
        ("prefill", Parallelism.TEP, 1, nodes[0], 8, 1), ("decode", Parallelism.DEP, 1, nodes[1], 1, 16)]
    assert cfg.total_nodes == sum(nodes) and cfg.topology.transport == transport
    assert cfg.topology.all2all == {"decode": backend}
    assert top.aggregated_replicas * top.aggregated_nodes == cfg.total_nodes  # the same hardware, aggregated


def test_deepep_on_efa_is_refused() -> None:
    """Planted: DeepEP over EFA (no IBGDA: all-to-all RDMA is what DeepEP needs, llm-d wide-ep-lws)."""
    got = problems("aws-eks-pd", "topology.decode.all2allBackend=deepep_low_latency")
    assert "DeepEP needs all-to-all RDMA" in got["k3infra:topology.decode.all2allBackend"]


def test_a_group_split_across_nvlink_domains_is_refused() -> None:
    """Planted: an NVLink all-to-all over two 8-GPU NVLink domains (p6-b300 DEP16)."""
    got = problems("aws-eks-pd", "topology.decode.all2allBackend=flashinfer_nvlink_one_sided")
    assert "needs the whole group in one NVLink domain" in got["k3infra:topology.decode.all2allBackend"]


def test_roles_beyond_one_rack_are_refused() -> None:
    """Planted: the roles need more nodes than one NVL72 rack (one pool) holds."""
    got = problems("gcp-a4xmax-pd", "topology.decode.groups=5")
    assert "more than one a4x-maxgpu-4g-metal pool holds" in got["k3infra:topology.decode.groups"]


def test_every_problem_at_once() -> None:
    """A DEP group too small, a transport the fabric lacks, an old engine and HyperPod-style keys: each refused with
    its key in one error (each role's scaler: tests/test_role_autoscaling.py)."""
    got = problems("gcp-a4xmax-pd", "topology.decode.nodes=2", "topology.kvTransport=libfabric", "engineVersion=0.30.0",
                   "nodes=2")
    assert set(got) >= {"k3infra:topology.decode.nodes", "k3infra:topology.kvTransport", "k3infra:engineVersion",
                        "k3infra:nodes"}
    assert "a DEP group needs 16 GPUs or more" in got["k3infra:topology.decode.nodes"]


def test_platforms_and_engines_without_roles_name_the_stack_that_can() -> None:
    hyperpod = problems("aws-hyperpod", "topology={mode: disaggregated, prefill: {nodes: 1}, decode: {nodes: 2}}")
    assert "aws-eks-pd" in hyperpod["k3infra:topology.mode"]
    sglang = problems("aws-eks-pd", "engine=sglang", "image=null", "engineVersion=null", "imagePlatforms=null")
    assert "gcp-a4-sglang or gcp-a4x-sglang" in sglang["k3infra:topology.mode"]


def test_the_gateway_is_required_on_every_platform() -> None:
    """Every Kubernetes platform has a gateway (AKS, EKS, ACK: the installed agentgateway), so no disaggregated
    stack plans without the picker that sends requests to the prefill."""
    for stack in ("gcp-a4xmax-pd", "aws-eks-pd", "azure-gb300-pd", "kubernetes-gb300-nvl72-pd"):
        got = problems(stack, "endpoint.gateway=false")
        assert "P/D profile handler" in got["k3infra:endpoint.gateway"], stack


def test_aggregated_keys_stay_aggregated() -> None:
    """Role keys without a mode that has roles are refused; the ten aggregated stacks have no topology."""
    got = problems("gcp-a4xmax", "topology.prefill.nodes=2")
    assert "applies to mode disaggregated" in got["k3infra:topology.prefill"]
    cfg = config("gcp-a4xmax")
    assert cfg.sizing.topology is None and "topology" not in cfg.sizing.as_dict()


def test_status_reports_each_role() -> None:
    """`k3infra status` of a disaggregated stack: each role's server with its own group size and budget, each role's
    scale in the read-only role, and a line per role while its ranks do not exist."""
    from datetime import datetime, timezone

    from k3infra.status import access
    from k3infra.status.expected import expected
    from k3infra.status.report import Snapshot, evaluate

    exp = expected(planning.plan("gcp-a4xmax-pd", root=ROOT))
    assert [(r.role, r.server_kind, r.server_name, r.groups, r.group_size, r.load_budget_seconds) for r in exp.roles] == [
        ("prefill", "LeaderWorkerSet", "k3-prefill-lws", 1, 2, 1190),
        ("decode", "LeaderWorkerSet", "k3-decode-lws", 1, 4, 1050)]
    scale = [r["resourceNames"] for r in access.roles(exp)[1]["rules"] if r["resources"] == ["leaderworkersets/scale"]]
    assert scale == [["k3-decode-lws"], ["k3-prefill-lws"]]
    snap = Snapshot(nodes=[], gpu_nodes=[], server_pods=[], job_pods={}, jobs={}, services={})
    report = evaluate(exp, snap, datetime(2026, 12, 6, tzinfo=timezone.utc))
    creating = [line.name for line in report.lines if line.section == "server"]
    assert creating == ["LeaderWorkerSet k3-prefill-lws", "LeaderWorkerSet k3-decode-lws"]


def test_the_fewest_nodes_per_group() -> None:
    """By memory alone, TEP holds K3 from 2 GB300 trays or 3 ebmgn8v nodes, DEP from 3 trays (the recipe's 16-GPU
    minimum is a rule of its own), and on 96 GB GPUs DEP at no size: every GPU brings the ~110 GB replicated outside
    the experts again."""
    gb300, h20 = ACCELERATORS["gb300-nvl72"], ACCELERATORS["ecs.ebmgn8v.48xlarge"]
    assert smallest_role_nodes(KIMI_K3, gb300, Parallelism.TEP, 0.95, 72) == 2
    assert smallest_role_nodes(KIMI_K3, gb300, Parallelism.DEP, 0.95, 72) == 3
    assert smallest_role_nodes(KIMI_K3, h20, Parallelism.TEP, 0.97, 72) == 3
    assert smallest_role_nodes(KIMI_K3, h20, Parallelism.DEP, 0.97, 72) is None
    assert smallest_role_nodes(KIMI_K3, h20, Parallelism.TEP, 0.97, 2) is None


def test_pai_eas_refuses_roles_and_says_why() -> None:
    """The mode alone is refused on PAI-EAS (no role, gateway or node keys beside it), naming what Alibaba documents
    and the stacks that can; every fact of PAI_EAS_ROLES has one of the four sources."""
    for sets in (("topology.mode=disaggregated",), ("topology={mode: wide-ep}",),
                 ("topology={mode: disaggregated, prefill: {nodes: 1}, decode: {nodes: 2}}", "autoscaling.enabled=true")):
        got = problems_allowed("alicloud-pai", *sets)
        assert list(got) == ["k3infra:topology.mode"], sets
        reason, allowed = got["k3infra:topology.mode"]
        assert allowed == "aggregated"
        for words in ("console templates, not as a service JSON", "'EP+PD Separation-PAI Optimized'", "Qwen models only",
                      "not the NixlConnector", "catalog.topologies.PAI_EAS_ROLES",
                      "Use stack gcp-a4xmax-pd, azure-gb300-pd or aws-eks-pd; alicloud-ack cannot"):
            assert words in reason, words
    sources = {source.split(" pkg/")[0].split(" cmd/")[0] for source in PAI_EAS_ROLES.values()}
    assert sources == {PAI_EP_PD, PAI_BLADELLM_PD, PAI_LLM_ROUTER, EAS_ROUTER_CODE}
    assert len(PAI_EAS_ROLES) == 8


def test_alicloud_ack_cannot_disaggregate_k3() -> None:
    """ACK's ebmgn8v: a TEP prefill needs 3 nodes and would all-reduce over TCP across them, and no DEP decode of any
    size holds K3 on 96 GB GPUs; wide-ep likewise. Each problem names what would be accepted."""
    got = problems_allowed("alicloud-ack", "topology={mode: disaggregated, prefill: {nodes: 3}, decode: {nodes: 3}}")
    assert sorted(got) == ["k3infra:topology.decode.nodes", "k3infra:topology.prefill.nodes"]
    assert got["k3infra:topology.prefill.nodes"][1] == "at most 1 node(s) per TEP group"
    assert "TCP over the VPC" in got["k3infra:topology.prefill.nodes"][0]
    assert got["k3infra:topology.decode.nodes"][1].startswith(
        "none of H20-class (96 GB): every GPU of a DEP group holds the 110 GB outside the experts (ESTIMATE) and 5 GB "
        "runtime, more than its 93.1 GB usable, whatever the group's size: topology.decode.parallelism tep")
    small = problems_allowed("alicloud-ack", "topology={mode: disaggregated, prefill: {nodes: 1}, decode: {nodes: 2}}")
    assert small["k3infra:topology.prefill.nodes"][1] == "at least 3 nodes per tep group"
    assert "(DEP replicates" not in small["k3infra:topology.prefill.nodes"][0]
    wide = problems_allowed("alicloud-ack", "topology={mode: wide-ep}")
    assert list(wide) == ["k3infra:nodes"] and "topology.mode aggregated" in wide["k3infra:nodes"][1]
