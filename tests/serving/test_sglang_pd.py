"""Issue 37 §2: SGLang's prefill/decode disaggregation on the GKE SGLang stacks, routed as vLLM's is (one InferencePool
over both roles, llm-d's endpoint picker with its P/D profile handler) with llm-d-router v0.10.0's P/D sidecar and its
SGLang connector on the decode pods (catalog/topologies.py ``SGLANG_SIDECAR``). What the configuration refuses (each
planted mistake seen to fail), the roles' sizing, and the pods as rendered."""

import pytest

from k3infra import offline, planning
from k3infra.catalog.topologies import KvTransport, Parallelism, TopologyMode
from k3infra.config import ConfigError
from tests import support
from tests.serving.test_gateway import EPP, chart_pool
from tests.serving.test_pd_gateway import containers, ports, templates

SGLANG_PD = support.SGLANG_PD


def problems(stack: str, *sets: str) -> dict[str, str]:
    """Each problem's key to its reason and, after " | ", what is allowed."""
    with pytest.raises(ConfigError) as e:
        planning.validate(planning.load(stack, sets, root=support.ROOT))
    return {p.key: f"{p.reason} | {p.allowed}" for p in planning.problems_of(e.value)}


@pytest.mark.parametrize("stack,prefill,decode", [("gcp-a4-sglang", (2, 16), (7, 56)),
                                                  ("gcp-a4x-sglang", (4, 16), (14, 56))])
def test_the_roles_on_the_gke_sglang_stacks(stack: str, prefill: tuple[int, int], decode: tuple[int, int]) -> None:
    cfg = planning.validate(planning.load(stack, SGLANG_PD[stack], root=support.ROOT))
    top = cfg.sizing.topology
    assert top is not None and cfg.topology.mode == TopologyMode.DISAGGREGATED
    assert cfg.topology.transport == KvTransport.UCX_RDMA  # Mooncake over the RoCE GPUDirect RDMA NICs
    assert [(r.name, r.parallelism, r.groups, r.nodes, r.gpus_per_group, r.tensor_parallel, r.data_parallel)
            for r in top.roles] == [("prefill", Parallelism.TEP, 1, *prefill, prefill[1], 1),
                                    ("decode", Parallelism.DEP, 1, *decode, 1, decode[1])]
    assert cfg.total_nodes == prefill[0] + decode[0]


def test_sglang_off_rdma_is_refused_naming_the_stacks_that_can() -> None:
    """Planted: SGLang on EKS's EFA (NIXL over libfabric: no SGLang P/D guide runs it)."""
    got = problems("aws-eks-pd", "engine=sglang", "image=null", "engineVersion=null", "imagePlatforms=null")
    assert "Mooncake on RDMA" in got["k3infra:topology.mode"] and "gcp-a4-sglang" in got["k3infra:topology.mode"]


def test_sglang_groups_whose_gpus_do_not_divide_the_experts_are_refused() -> None:
    """Planted: DEP 48 on A4 (896 experts over 48 GPUs leaves a remainder SGLang asserts against); the smallest
    count that divides them is named."""
    sets = [s.replace("decode: {nodes: 7}", "decode: {nodes: 6}") for s in SGLANG_PD["gcp-a4-sglang"]]
    got = problems("gcp-a4-sglang", *sets)["k3infra:topology.decode.nodes"]
    assert "896 routed experts evenly over the group's 48 GPUs (6 x 8)" in got and "e.g. 7" in got


def test_a4x_decode_that_cannot_hold_k3_says_why() -> None:
    """Planted: DEP 32 on A4X (8 x 4 GB200): the replicated weights leave no room for the KV cache, with figures."""
    sets = [s.replace("decode: {nodes: 14}", "decode: {nodes: 8}") for s in SGLANG_PD["gcp-a4x-sglang"]]
    got = problems("gcp-a4x-sglang", *sets)["k3infra:topology.decode.nodes"]
    assert "a dep group of 32 x GB200 holds 5,059 GB usable; its weights take 4,970 GB" in got


def test_the_decode_pods_run_llm_d_router_s_sglang_sidecar() -> None:
    """Decode (DEP over 14 nodes, SGLang's HTTP on its leader only): the sidecar on 30000 with the SGLang connector,
    the engine behind it on 8200; prefill (TEP over 4): its leader's engine on 30000, no sidecar. Every engine
    registers the pod's IP with the bootstrap (SGLANG_HOST_IP)."""
    rec = support.plan("gcp-a4x-sglang", *SGLANG_PD["gcp-a4x-sglang"]).recording
    decode, prefill = templates(rec, "decode"), templates(rec, "prefill")
    serving = "llm-d.ai/inferenceServing"
    assert {(role, rank): t["metadata"]["labels"].get(serving) for role, ts in (("prefill", prefill),
                                                                              ("decode", decode))
            for rank, t in ts.items()} == {("prefill", "leader"): "true", ("prefill", "worker"): None,
                                           ("decode", "leader"): "true", ("decode", "worker"): None}
    sidecar = containers(decode["leader"])["routing-proxy"]
    assert sidecar["image"] == "ghcr.io/llm-d/llm-d-router-disagg-sidecar:v0.10.0"
    assert sidecar["args"] == ["--port=30000", "--model-server-port=8200", "--kv-connector=sglang",
                               "--secure-proxy=false", "--enable-ssrf-protection",
                               "--inference-pool=kimi-k3/k3-gateway", "--pool-group=inference.networking.k8s.io"]
    assert sidecar["env"] == [{"name": "SGLANG_BOOTSTRAP_PORT", "value": "8998"}]
    assert ports(sidecar) == {"http": 30000} and ports(containers(decode["leader"])["engine"])["engine"] == 8200
    assert "routing-proxy" not in containers(decode["worker"]) and "routing-proxy" not in containers(prefill["leader"])
    assert ports(containers(prefill["leader"])["engine"])["http"] == 30000
    for t in (*decode.values(), *prefill.values()):
        host = [e for e in containers(t)["engine"]["env"] if e["name"] == "SGLANG_HOST_IP"]
        assert host == [{"name": "SGLANG_HOST_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]
    pool = chart_pool(offline.plain(rec.one(*EPP).inputs))
    assert pool["spec"]["targetPorts"] == [{"number": 30000}]


def test_the_roles_admit_each_other_and_the_namespace_on_http_only() -> None:
    """The bootstrap port (8998) and SGLang's KV-manager ZMQ sockets (ephemeral ports, ``get_zmq_socket_on_host``)
    are admitted from the model-server pods only; anything else in the namespace reaches the serving port alone."""
    rec = support.plan("gcp-a4-sglang", *SGLANG_PD["gcp-a4-sglang"]).recording
    for role in ("prefill", "decode"):
        policy = offline.plain(rec.one("kubernetes:networking.k8s.io/v1:NetworkPolicy",
                                       f"k3-{role}-network-policy").inputs)
        open_rules = [[p["podSelector"].get("matchLabels") for p in rule["from"]] for rule in policy["spec"]["ingress"]
                      if "ports" not in rule]
        assert open_rules == [[policy["spec"]["podSelector"]["matchLabels"]],
                              [{"app.kubernetes.io/component": "model-server"}]], role


@pytest.mark.parametrize("stack,prefill,decode", [("gcp-a4-sglang", 2, 7), ("gcp-a4x-sglang", 4, 14)])
def test_the_mode_alone_names_what_else_it_needs(stack: str, prefill: int, decode: int) -> None:
    """``--set topology.mode=disaggregated`` on its own: every key the roles need, with the fewest nodes of each role
    that hold K3 (the sizes SGLANG_PD uses), and DSPARK, which is not validated with roles."""
    got = problems(stack, "topology.mode=disaggregated")
    assert got["k3infra:topology.prefill.nodes"].endswith(f"a tep group of sglang holds the model on: {prefill}")
    assert got["k3infra:topology.decode.nodes"].endswith(f"a dep group of sglang holds the model on: {decode}")
    assert "not validated with disaggregated roles" in got["k3infra:speculativeDecoding"]


def test_the_checklist_prefills_on_a_pod_not_the_service() -> None:
    """The verification Job names the prefill in ``x-prefiller-host-port``; SGLang's sidecar sends the decode to the
    bootstrap server on that host, so it is one prefill pod, where the prefill runs, not the Service, which could
    balance the two to different groups; and under SSRF protection the sidecar takes only a pool pod's IP or name
    (every engine). The Job names the prefill's headless Service, which the checklist resolves to one pod's IP
    (observability.checklist ``pod_host_port``)."""
    def prefill_host(rec: offline.Recording) -> str:
        job = offline.plain(rec.one("kubernetes:batch/v1:Job", "k3-verify-job").inputs)
        env = job["spec"]["template"]["spec"]["containers"][0]["env"]
        return next(e["value"] for e in env if e["name"] == "K3_PREFILL_HOST_PORT")

    sglang = support.plan("gcp-a4x-sglang", *SGLANG_PD["gcp-a4x-sglang"]).recording
    assert prefill_host(sglang) == "k3-prefill-pods.kimi-k3.svc.cluster.local:30000"
    assert prefill_host(support.plan("gcp-a4xmax-pd").recording) == "k3-prefill-pods.kimi-k3.svc.cluster.local:8000"
