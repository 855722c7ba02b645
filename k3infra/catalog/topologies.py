"""Serving topologies: aggregated, wide expert parallelism, and prefill/decode disaggregation, as facts with sources.

What the engines' own recipes and the well-lit paths state about splitting Kimi K3 into roles, what each interconnect
can carry, and the model's KV-cache geometry the transfer between roles moves. The sources:

- ``RECIPE``: vllm-project/recipes ``models/moonshotai/Kimi-K3.yaml`` (read at 02c27aa): ``strategy_overrides.pd_cluster``
  (prefill ``parallelism: tep, tp: 8``; decode ``parallelism: dep, tp: 1`` with ``--data-parallel-hybrid-lb``,
  ``--moe-backend deep_gemm_mega_moe``; ``UCX_TLS: rc,cuda_copy`` on Blackwell), ``strategy_min_gpus``
  (``multi_node_dep: 16``) and its guide notes (``--all2all-backend deepep_v2`` for RDMA,
  ``flashinfer_nvlink_one_sided`` for NVLink);
- ``PD_STRATEGY``: vllm-project/recipes ``strategies/pd_cluster.yaml`` (read at 223c6c0): the NixlConnector
  ``--kv-transfer-config`` of each role, ``VLLM_NIXL_SIDE_CHANNEL_PORT`` (vLLM's default 5600 plus the DP rank, not the guide's 5557/5558), the side channel bound to the
  pod's own address;
- ``DEP_STRATEGY``: vllm-project/recipes ``strategies/multi_node_dep.yaml`` (read at 03927c9): ``--enable-expert-parallel
  --data-parallel-hybrid-lb``, parallel flag ``--data-parallel-size``;
- ``WIDE_EP``: llm-d/llm-d ``guides/wide-ep-lws`` (README, ``manifests/modelserver/base/decode.yaml`` at 03da3b0): one
  LeaderWorkerSet per role, each pod ``vllm serve`` with ``--data-parallel-size $((LWS_GROUP_SIZE * DP_SIZE_LOCAL))
  --data-parallel-size-local --data-parallel-address ${LWS_LEADER_ADDRESS} --data-parallel-rpc-port 5555
  --data-parallel-start-rank $((LWS_WORKER_INDEX * DP_SIZE_LOCAL))``, the routing sidecar on the decode pods, and
  "DeepEP ... requires All-to-All RDMA connectivity ... rail-only connectivity will fail";
- ``PD_GUIDE``: llm-d/llm-d ``guides/pd-disaggregation`` (``modelserver/gpu/vllm/aws/patch-decode.yaml`` at 2ad7f91: on
  EFA, NixlConnector with ``"kv_connector_extra_config":{"backends":["LIBFABRIC"]}`` and ``IPC_LOCK``).
"""

from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Mapping

from .accelerators import Accelerator, Fabric
from .types import EngineName, Platform

RECIPE = "vllm-project/recipes models/moonshotai/Kimi-K3.yaml@02c27aa"
PD_STRATEGY = "vllm-project/recipes strategies/pd_cluster.yaml@223c6c0"
DEP_STRATEGY = "vllm-project/recipes strategies/multi_node_dep.yaml@03927c9"
WIDE_EP = "llm-d/llm-d guides/wide-ep-lws (README; manifests/modelserver/base/decode.yaml@03da3b0)"
PD_GUIDE = "llm-d/llm-d guides/pd-disaggregation (modelserver/gpu/vllm/aws/patch-decode.yaml@2ad7f91)"
SGLANG_PD = ("sgl-project/sglang docs/advanced_features/pd_disaggregation.md and python/sglang/srt/server_args.py "
             "(--disaggregation-mode, --disaggregation-transfer-backend, --disaggregation-bootstrap-port)")


class TopologyMode(StrEnum):
    """How a stack's GPUs serve: one kind of group that prefills and decodes, or roles of their own."""

    AGGREGATED = "aggregated"
    """Every group prefills and decodes (the pilot shape: TP, or TP x PP, EP inside the TP group)."""
    WIDE_EP = "wide-ep"
    """Every group is data-parallel attention with expert parallelism across its nodes (DEP), still aggregated."""
    DISAGGREGATED = "disaggregated"
    """Prefill groups and decode groups, each with its own parallelism, the KV cache sent from one to the other."""


class RoleName(StrEnum):
    """A serving role of a disaggregated topology."""

    PREFILL = "prefill"
    DECODE = "decode"


class Parallelism(StrEnum):
    """How one group of a role splits the model (the recipe's ``parallelism``)."""

    TEP = "tep"
    """Tensor parallel over the group's GPUs with expert parallelism over the same ranks (recipe ``multi_node_tep``):
    every weight sharded, one engine, one HTTP server on the leader."""
    DEP = "dep"
    """Data-parallel attention (tensor parallel 1) with expert parallelism over every GPU of the group (recipe
    ``multi_node_dep``): the attention and dense weights replicated on every GPU, the routed experts sharded; one API
    server per node with ``--data-parallel-hybrid-lb``."""


class All2AllBackend(StrEnum):
    """vLLM ``--all2all-backend`` values k3infra chooses between (vllm 0.33.0 ``config/parallel.py`` All2AllBackend)."""

    NVLINK_ONE_SIDED = "flashinfer_nvlink_one_sided"
    """FlashInfer's one-sided all-to-all over (multi-node) NVLink: the recipe's pick for NVLink (RECIPE notes)."""
    DEEPEP_V2 = "deepep_v2"
    """DeepEP 2.0 over RDMA: the recipe's pick for RDMA (RECIPE notes); needs all-to-all RDMA (WIDE_EP)."""
    DEEPEP_LOW_LATENCY = "deepep_low_latency"
    """DeepEP's decode kernels over RDMA with IBGDA (WIDE_EP decode.yaml ``VLLM_ALL2ALL_BACKEND``)."""
    DEEPEP_HIGH_THROUGHPUT = "deepep_high_throughput"
    """DeepEP's prefill kernels over RDMA with IBGDA."""
    ALLGATHER_REDUCESCATTER = "allgather_reducescatter"
    """NCCL all-gather / reduce-scatter: vLLM's default, over whatever NCCL runs on (EFA through aws-ofi-nccl)."""


DEEPEP_BACKENDS = frozenset({All2AllBackend.DEEPEP_V2, All2AllBackend.DEEPEP_LOW_LATENCY,
                             All2AllBackend.DEEPEP_HIGH_THROUGHPUT})
"""The backends that need all-to-all RDMA between every NIC of every node (WIDE_EP README: rail-only fails)."""

NVLINK_BACKENDS = frozenset({All2AllBackend.NVLINK_ONE_SIDED})
"""The backends that need the whole group inside one NVLink domain."""


class KvTransport(StrEnum):
    """What NIXL moves the KV cache between the roles over (vLLM NixlConnector; SGLang's nixl transfer backend)."""

    UCX_RDMA = "ucx"
    """NIXL's UCX backend over RDMA verbs (InfiniBand, RoCE): ``UCX_TLS=rc,cuda_copy`` (RECIPE pd_cluster
    hardware_overrides.blackwell and its RDMA note)."""
    LIBFABRIC = "libfabric"
    """NIXL's LIBFABRIC backend, EFA's provider (PD_GUIDE: ``kv_connector_extra_config.backends: [LIBFABRIC]``)."""
    TCP = "tcp"
    """NIXL's UCX backend over TCP on the pod network, where the pods get no RDMA NIC: works, at the pod network's
    rate (``UCX_TLS=tcp,cuda_copy``)."""


@dataclass(frozen=True)
class FabricFacts:
    """What a node's scale-out fabric can carry for a disaggregated or wide-EP topology."""

    all_to_all_rdma: bool
    """Every NIC reaches every NIC of every other node over RDMA with GPU-initiated transfers (what DeepEP needs)."""
    kv_transport: KvTransport
    """How NIXL moves the KV cache between nodes on this fabric."""
    source: str


FABRICS: Mapping[str, FabricFacts] = MappingProxyType({
    "InfiniBand": FabricFacts(True, KvTransport.UCX_RDMA,
                              f"{WIDE_EP} README: validated on H200 with InfiniBand; UCX rc over verbs (RECIPE RDMA note)"),
    "RoCEv2 (GPUDirect RDMA)": FabricFacts(True, KvTransport.UCX_RDMA,
                                           f"{WIDE_EP} README: validated on GKE H200 and B200 with RoCE networking"),
    "EFA": FabricFacts(False, KvTransport.LIBFABRIC,
                       "EFA has no IBGDA, which DeepEP's internode kernels need (deepseek-ai/DeepEP#369; "
                       f"vllm-project/vllm#27898); NIXL reaches it through libfabric ({PD_GUIDE})"),
    "EFAv3": FabricFacts(False, KvTransport.LIBFABRIC, "as EFA (deepseek-ai/DeepEP#369; " + PD_GUIDE + ")"),
})
"""Fabrics by ``Fabric.name``. DeepEP v2 over EFA through NCCL GIN works only with an aws-ofi-nccl built with GDAKI,
which the EFA installer does not ship (vllm-project/vllm#41183 comment of 2026-05-05; awslabs/awsome-distributed-ai#1234):
k3infra does not count on it. A fabric not listed here, or one the pods do not get (``Fabric.pods_lack_it``), carries
the KV cache over TCP and gives no all-to-all RDMA."""


def fabric_facts(fabric: Fabric) -> FabricFacts:
    """The facts of ``fabric`` as the engine's pods see it (TCP and no all-to-all RDMA where they lack it)."""
    facts = FABRICS.get(fabric.name)
    if facts is None or fabric.pods_lack_it:
        why = fabric.pods_lack_it or f"the catalog states no RDMA transport for {fabric.name}"
        return FabricFacts(False, KvTransport.TCP, f"the pods reach other nodes over the pod network: {why}")
    return facts


def default_all2all(accelerator: Accelerator, group_gpus: int) -> All2AllBackend:
    """The recipe's choice for a DEP group of ``group_gpus`` GPUs: NVLink where the group fits one NVLink domain,
    DeepEP v2 over all-to-all RDMA, else NCCL's all-gather / reduce-scatter (RECIPE notes; FABRICS)."""
    if group_gpus <= accelerator.nvlink_domain_gpus:
        return All2AllBackend.NVLINK_ONE_SIDED
    if fabric_facts(accelerator.fabric).all_to_all_rdma:
        return All2AllBackend.DEEPEP_V2
    return All2AllBackend.ALLGATHER_REDUCESCATTER


@dataclass(frozen=True)
class RoleRecipe:
    """What the recipe adds to one role's vLLM command line and environment."""

    flags: tuple[tuple[str, ...], ...]
    env: Mapping[str, str]
    side_channel_port: int
    """``VLLM_NIXL_SIDE_CHANNEL_PORT``: vLLM's own default, 5600 (vllm 0.33.0 ``envs.py`` ``VLLM_NIXL_SIDE_CHANNEL_PORT``),
    on both roles. Not PD_STRATEGY's 5557/5558, written for both roles on one host: each role here has pods of its own,
    and vLLM binds the port plus the rank's ``data_parallel_index`` (``nixl/base_scheduler.py`` ``side_channel_port``),
    so 5557 would overlap the KV-events publisher's ``5557 + dp rank`` (``distributed/kv_events.py``
    ``offset_endpoint_port``) on a pod of several ranks (the independent review of the PD stacks, B1)."""
    kv_role: str
    """NixlConnector ``kv_role`` (PD_STRATEGY: kv_producer, kv_consumer)."""
    sources: Mapping[str, str]


VLLM_NIXL_SIDE_CHANNEL_PORT = 5600
"""vLLM's default NIXL side-channel port (vllm 0.33.0 ``envs.py``); a rank binds it plus its DP index."""

VLLM_ROLE_RECIPES: Mapping[RoleName, RoleRecipe] = MappingProxyType({
    RoleName.PREFILL: RoleRecipe(
        flags=(("--enforce-eager",), ("--max-num-batched-tokens", "16384"), ("--no-disable-hybrid-kv-cache-manager",),
               ("--no-enable-flashinfer-autotune",), ("--no-async-scheduling",)),
        env=MappingProxyType({"NCCL_CUMEM_ENABLE": "1", "VLLM_SSM_CONV_STATE_LAYOUT": "DS"}),
        side_channel_port=VLLM_NIXL_SIDE_CHANNEL_PORT, kv_role="kv_producer",
        sources=MappingProxyType({
            "flags": f"{RECIPE} strategy_overrides.pd_cluster.prefill.vllm_args; --no-async-scheduling: {PD_STRATEGY}",
            "env": f"{RECIPE} strategy_overrides.pd_cluster.env (NCCL_MNNVL_ENABLE / NCCL_NVLS_ENABLE come with the "
                   "ComputeDomain channel, serving/dra.py, only where the group spans an NVLink domain)",
            "kv": PD_STRATEGY,
        }),
    ),
    RoleName.DECODE: RoleRecipe(
        flags=(("--no-enable-prefix-caching",), ("--max-num-seqs", "32"), ("--max-num-batched-tokens", "32"),
               ("--no-disable-hybrid-kv-cache-manager",), ("--compilation-config", '{"cudagraph_mode":"FULL_DECODE_ONLY"}')),
        env=MappingProxyType({"NCCL_CUMEM_ENABLE": "1", "VLLM_SSM_CONV_STATE_LAYOUT": "DS"}),
        side_channel_port=VLLM_NIXL_SIDE_CHANNEL_PORT, kv_role="kv_consumer",
        sources=MappingProxyType({
            "flags": f"{RECIPE} strategy_overrides.pd_cluster.decode.vllm_args",
            "env": f"{RECIPE} strategy_overrides.pd_cluster.env",
            "kv": PD_STRATEGY,
        }),
    ),
})
"""The recipe's pd_cluster settings per role (vLLM)."""

VLLM_DEP_MOE_BACKEND = "deep_gemm_mega_moe"
"""``--moe-backend`` of a DEP group inside one NVLink domain: "Recommend to use deep_gemm_mega_moe for any DEP
environment" (RECIPE notes; pd_cluster.decode.vllm_args)."""

VLLM_DEP_MOE_BACKEND_ACROSS_DOMAINS = "auto"
"""``--moe-backend`` of a DEP group that spans NVLink domains (two HGX B300 nodes over EFA): DeepGEMM's MegaMoE
"fuses and overlaps EP dispatch ... and EP combine into a single mega-kernel, overlapping NVLink communication" over
a symmetric-memory buffer of the whole EP group (deepseek-ai/DeepGEMM README "CUDA Mega MoE"; vllm 0.33.0
``model_executor/layers/fused_moe/deep_gemm_mega_moe.py`` ``get_symm_buffer`` over ``get_ep_group()``, and
``models/kimi_k3`` builds the experts on it instead of FusedMoE, so ``--all2all-backend`` would not apply): such a
group keeps vLLM's own choice, whose experts dispatch through the all-to-all backend (independent review of issue 37,
B1)."""


def dep_moe_backend(group_gpus: int, nvlink_domain_gpus: int) -> str:
    """``--moe-backend`` of a DEP group of ``group_gpus`` GPUs where one NVLink domain holds ``nvlink_domain_gpus``."""
    return VLLM_DEP_MOE_BACKEND if group_gpus <= nvlink_domain_gpus else VLLM_DEP_MOE_BACKEND_ACROSS_DOMAINS

KV_LOAD_FAILURE_POLICY = "fail"
"""NixlConnector ``kv_load_failure_policy`` (PD_STRATEGY): a decode that cannot load the prefilled KV fails the request
rather than prefilling again on the decode GPUs."""

VLLM_DP_RPC_PORT = 5555
"""``--data-parallel-rpc-port`` of a DEP group's leader (WIDE_EP decode.yaml)."""

UCX_TLS = {KvTransport.UCX_RDMA: "rc,cuda_copy", KvTransport.TCP: "tcp,cuda_copy"}
"""``UCX_TLS`` per transport: RECIPE (``rc,cuda_copy`` "to make sure KV Cache transfer goes through RDMA"); over TCP,
UCX's tcp transport with CUDA copies."""

NIXL_BACKENDS = {KvTransport.UCX_RDMA: "UCX", KvTransport.TCP: "UCX", KvTransport.LIBFABRIC: "LIBFABRIC"}
"""NixlConnector ``kv_connector_extra_config.backends`` per transport (PD_GUIDE; UCX is NIXL's default)."""

SGLANG_BOOTSTRAP_PORT = 8998
"""SGLang's ``--disaggregation-bootstrap-port`` default on a prefill server (SGLANG_PD; sglang 0.5.23
``srt/arg_groups/fields/disagg.py`` ``disaggregation_bootstrap_port``), the port llm-d's SGLang connector sends the
decode to (``SGLANG_SIDECAR``: its ``SGLANG_BOOTSTRAP_PORT`` default)."""

SGLANG_TRANSFER_BACKEND = {KvTransport.UCX_RDMA: "mooncake", KvTransport.LIBFABRIC: "nixl", KvTransport.TCP: "nixl"}
"""SGLang ``--disaggregation-transfer-backend`` per transport: Mooncake over RDMA (SGLANG_PD's default and llm-d's
SGLang P/D guide), NIXL elsewhere (its UCX / LIBFABRIC backends). k3infra builds only the first
(``SGLANG_PD_TRANSPORTS``)."""

SGLANG_PD_TRANSPORTS = frozenset({KvTransport.UCX_RDMA})
"""The transports over which k3infra builds SGLang's disaggregation: Mooncake over RDMA verbs (GKE A4's and A4X's
GPUDirect RDMA NICs, RoCEv2). Mooncake's transfer engine is SGLang's default backend (0.5.23 ``disagg.py``:
``disaggregation_transfer_backend = "mooncake"``) and ships in SGLang's images (sgl-project/sglang
``docker/Dockerfile`` pip-installs ``mooncake-transfer-engine``; UNCONFIRMED for the ``kimi-k3`` tag, built
``FROM lmsysorg/sglang:v0.5.15.post1`` per ``docker/kimi_k3/Dockerfile``). Over EFA or the pod network SGLang
would use NIXL (``SGLANG_TRANSFER_BACKEND``), which no guide or recipe runs for SGLang P/D: refused, naming the
stacks that can (``SGLANG_PD_STACKS``)."""

SGLANG_PD_STACKS = "gcp-a4-sglang or gcp-a4x-sglang (with topology.mode disaggregated), or vLLM's aws-eks-pd"
"""Where SGLang's disaggregation runs, named by the refusal on a fabric outside ``SGLANG_PD_TRANSPORTS``."""

SGLANG_HOST_ENV = "SGLANG_HOST_IP"
"""The address SGLang's KV manager registers with the prefill's bootstrap server and binds its ZMQ socket on (sglang
0.5.23 ``srt/utils/network.py`` ``get_local_ip_auto``: ``SGLANG_HOST_IP`` first, else the first NIC's address, which on
a pod with RDMA NICs may be one the other role cannot reach over the pod network): the pod's own IP, from the
downward API, as vLLM's ``VLLM_NIXL_SIDE_CHANNEL_HOST``."""

SGLANG_EP_DIVIDES_EXPERTS = ("sglang 0.5.23 srt/layers/moe/fused_moe_triton/layer.py FusedMoE.__init__: "
                             "assert self._num_global_routed % storage_ep_size == 0")
"""SGLang shards the routed experts evenly over ``--ep-size`` ranks and asserts it divides them (vLLM splits them
unevenly): a SGLang role's group must have a GPU count that divides the model's experts (Kimi K3: 896 = 2^7 x 7)."""

DEP_MIN_GPUS = 16
"""The fewest GPUs of a DEP group: "TP/TEP run from 8 GPUs; DEP needs 16+" (RECIPE strategy_min_gpus.multi_node_dep)."""

PAI_EP_PD = ("PAI 'Deploy MoE models with expert parallelism' (help.aliyun.com/en/pai/"
             "deployment-moe-model-based-on-expert-parallel-and-pd-separation, updated 2026-03-11)")
PAI_BLADELLM_PD = ("PAI 'Prefill-decode disaggregation deployment of LLM services' (alibabacloud.com/help/en/pai/user-guide/"
                   "enable-prefill-decode-disaggregation-deployment-of-llm-services, updated 2025-03-18)")
PAI_LLM_ROUTER = ("PAI 'Use LLM intelligent router to improve inference efficiency' (alibabacloud.com/help/en/pai/"
                  "user-guide/use-llm-intelligent-router-to-improve-inference-efficiency, updated 2026-02-26)")
EAS_ROUTER_CODE = ("llumnix-project/llumnix@da348dc (its LLM gateway as built for EAS, before the January 2026 "
                   "split of gateway and scheduler)")

PAI_EAS_ROLES: Mapping[str, str] = MappingProxyType({
    "an EP + PD deployment is a console template, 'EP+PD Separation-PAI Optimized', for PAI-optimized public models "
    "(the page's example: DeepSeek-R1-0528-PAI-optimized), with vLLM": PAI_EP_PD,
    "its run command is not shown ('To protect model weights ... the run command is not exposed'); EP_SIZE, DP_SIZE "
    "and TP_SIZE environment variables set the parallelism (prefill TP_SIZE=8, decode EP_SIZE=8 DP_SIZE=8)": PAI_EP_PD,
    "its Prefill, Decode and LLM intelligent router sub-services are managed from one view; public resources "
    "ml.gu8tea.8.48xlarge or ml.gu8tef.8.46xlarge, or a resource quota": PAI_EP_PD,
    "prefill and decode as two services in one service group, each with its own run command, for blade-llm:0.10.0 "
    "or later, Qwen models only, on Lingjun H20 or GP7V resources only": PAI_BLADELLM_PD,
    "the LLM intelligent router (LLM Gateway, LLM Scheduler, an LLM Agent sidecar per instance) is a special EAS "
    "service that must be in the same service group as the inference service": PAI_LLM_ROUTER,
    "the router reads its settings from /etc/eas/override.properties (keys llm_gateway.{name, group, service_name, "
    "infer_backend, max_queue_size, retry_count, wait_schedule_timeout, wait_schedule_try_period, serverless_mode}, "
    "llm_scheduler.{name, group, schedule_policy}, rpc.token), written by EAS (UNCONFIRMED: that these are the keys "
    "of the router's service JSON; no page shows that JSON)":
        f"{EAS_ROUTER_CODE} pkg/consts/consts.go PropertyFile; cmd/llm-gateway/app/options/config.go Properties",
    "its P/D split modes are vllm-kvt, vllm-vineyard, vllm-mooncake and sglang-mooncake (no NixlConnector)":
        f"{EAS_ROUTER_CODE} pkg/consts/consts.go; README 'PD Split Mode'",
    "on EAS it finds prefill and decode workers through a message bus local to the router "
    "(http://127.0.0.1:9900/api/messages: per instance '__instance__' and one 'role,ip,port,auxPort' entry per DP "
    "rank, e.g. 'decode,11.224.50.49,8000,9000'); how a worker publishes its entry is in no public source, and the "
    "resolver by EAS service group serves the role 'normal' only":
        f"{EAS_ROUTER_CODE} pkg/resolver/msgbus_resolver.go, eas_resolver.go",
})
"""What Alibaba documents of PAI-EAS's own prefill/decode and expert-parallel serving, each fact with its source.
None of it is a service JSON k3infra could send: the pages are console walk-throughs, the public SDKs
(aliyun/pai-python-sdk 0.4.13, pulumi-alicloud 4.0's ``pai.Service``) take the service JSON as one opaque string, and no
public repository holds an EAS service JSON with roles (search of the code corpus for ``LLMGatewayService``,
``"llm_gateway": {``, 2026-12-07). The keys of the roles' JSON, how an instance declares its role to the router, and a
template for Kimi K3 are all undocumented; and the router's vLLM P/D modes move the KV cache with PAI's KVT, Vineyard
or Mooncake, not the NixlConnector lines k3infra renders and tests (serving/engine/disaggregation.py)."""

NO_ROLES: Mapping[Platform, str] = MappingProxyType({
    Platform.HYPERPOD: "the HyperPod Inference Operator runs one replica on one instance (InferenceEndpointConfig has "
                       "no roles, no leader/worker field): use stack aws-eks-pd (EKS, the same p6-b300 over EFA)",
    Platform.PAI_EAS: "PAI-EAS documents its PD-separated and EP serving as console templates, not as a service JSON "
                      "(the 'EP+PD Separation-PAI Optimized' template runs PAI-optimized public models with a hidden "
                      "run command; BladeLLM's prefill/decode services take Qwen models only), and its LLM router "
                      "learns each instance's role through PAI's own registration and moves the KV cache with KVT, "
                      "Vineyard or Mooncake, not the NixlConnector k3infra renders (catalog.topologies.PAI_EAS_ROLES; "
                      "docs/alicloud.md). Use stack gcp-a4xmax-pd, azure-gb300-pd or aws-eks-pd; alicloud-ack cannot "
                      "either (96 GB GPUs hold no DEP group of K3, and TEP across its nodes would all-reduce over TCP)",
})
"""Platforms that cannot run a topology other than aggregated, and the stack that can."""

DISAGGREGATION_ENGINES: Mapping[EngineName, str] = MappingProxyType({
    EngineName.VLLM: f"NixlConnector P/D ({PD_STRATEGY}; {RECIPE} pd_cluster), routed by llm-d's endpoint picker "
                     "and the decode pods' routing sidecar",
    EngineName.SGLANG: f"--disaggregation-mode prefill|decode over Mooncake ({SGLANG_PD}), routed by llm-d's endpoint "
                       "picker and, on the decode pods, llm-d-router's P/D sidecar with its SGLang connector "
                       "(SGLANG_SIDECAR), over RDMA only (SGLANG_PD_TRANSPORTS)",
})
"""Engines whose disaggregated serving k3infra builds, and how. SGLang's is routed like vLLM's (one InferencePool
over both roles, the picker's P/D profile handler choosing a prefill endpoint into ``x-prefiller-host-port``), with
the sidecar that speaks SGLang's bootstrap protocol instead of SGLang's own router (sgl-model-gateway): the least new
surface (no second router, no pod-listing RBAC), and the picker keeps its prefix-aware scoring."""


@dataclass(frozen=True)
class KvGeometry:
    """The per-token and per-request state a model's KV cache holds (what the prefill hands the decode)."""

    full_attention_layers: int
    """Layers with a KV cache that grows with the sequence (Kimi K3: Gated MLA)."""
    latent_elements: int
    """Elements cached per token per such layer (MLA: kv_lora_rank + qk_rope_head_dim)."""
    linear_layers: int
    """Layers with a fixed-size recurrent state per request (Kimi K3: KDA)."""
    state_bytes_per_layer: int
    """Recurrent plus convolution state of one such layer for one request, in bytes."""
    sources: Mapping[str, str]

    def kv_bytes_per_token(self, element_bytes: int) -> int:
        """Bytes the growing cache adds per token at ``element_bytes`` per element (FP8 1, BF16 2)."""
        return self.full_attention_layers * self.latent_elements * element_bytes

    @property
    def state_bytes_per_request(self) -> int:
        """Bytes of fixed state per request, whatever its length."""
        return self.linear_layers * self.state_bytes_per_layer


_K3_CONFIG = ("moonshotai/Kimi-K3 config.json as third-party implementations quote it (tokenspeed "
              "test_kimi_k3_config: 'Checkpoint-derived reference values': 93 layers = 69 KDA + 24 MLA, KDA 96 heads x "
              "128, conv 4, state fp32 / conv bf16; MLA kv_lora_rank 512, qk_rope_head_dim 64): UNCONFIRMED against "
              "the checkpoint's own config.json, which the search tools do not hold")

KIMI_K3_KV = KvGeometry(
    full_attention_layers=24,
    latent_elements=512 + 64,
    linear_layers=69,
    # recurrent state 96 heads x 128 x 128 x 4 bytes (fp32) + conv state 3 x 96 x 128 x (4 - 1) x 2 bytes (bf16)
    state_bytes_per_layer=96 * 128 * 128 * 4 + 3 * 96 * 128 * 3 * 2,
    sources=MappingProxyType({"all": _K3_CONFIG,
                              "element_bytes": "--kv-cache-dtype fp8 on Blackwell (RECIPE hardware_overrides.blackwell): "
                                               "1 byte; vLLM's FP8 MLA layout adds per-block scales (ESTIMATE: not "
                                               "counted)"}),
)
"""Kimi K3's cache: 24 x 576 = 13,824 bytes per token at FP8, plus 69 x 6.5 MB = 449 MB of KDA state per request."""

REPLICATED_WEIGHT_GB = 110.0
"""ESTIMATE: Kimi K3's weights outside the routed experts (attention, KDA, shared experts, latent projections,
embeddings), which a DEP group replicates on every GPU: 1,560 GB minus the routed experts at MXFP4 (896 experts x 92
MoE layers x 3 x 3,584 x 3,072 parameters at 4.25 bits = 1,447 GB), from the dimensions quoted in ``_K3_CONFIG`` and
tenstorrent's KimiK3Config (MOE_LATENT_SIZE 3584, MOE_INTERMEDIATE_SIZE 3072). It is why DEP needs 16+ GPUs (RECIPE):
at 8 GPUs each would hold 110 + 181 GB."""

DEFAULT_INPUT_TOKENS = 8192
"""The input length the plan states the KV transfer at (ASSUMPTION: a typical agentic prompt; the topology's
``inputTokens`` changes it)."""

ROUTER_SIDECAR = ("llm-d/llm-d-router v0.10.0: cmd/pd-sidecar/main.go; pkg/sidecar/proxy/options.go (flags --port, "
                  "default 8000, --model-server-port, default 8200, --vllm-port deprecated for it, --kv-connector, "
                  "default nixlv2, one of nixlv2, shared-storage, sglang, mooncake, offloading, --secure-proxy, "
                  "default true); the image name from the release's Makefile SIDECAR_IMAGE_NAME and "
                  ".github/ISSUE_TEMPLATE/new-release.md")
"""llm-d-router's P/D sidecar (``ghcr.io/llm-d/llm-d-router-disagg-sidecar``), the release whose endpoint picker the
gateway runs (catalog/charts.py): it takes the request on the serving port, has the prefill endpoint the picker chose
(header ``x-prefiller-host-port``, pkg/common/routing/common.go ``PrefillEndpointHeader``) prefill it, then hands it
to the local engine. It superseded llm-d-routing-sidecar (v0.3.0, WIDE_EP decode.yaml), whose SSRF allowlist watched
only ``inference.networking.x-k8s.io/v1alpha2`` pools, never the gateway's v1 one (the independent review of the PD
stacks, M4; issue 37 m2). It still passes every path it does not route (``/metrics`` included) to the engine
(pkg/sidecar/proxy/proxy.go ``createRoutes``: ``mux.Handle("/", s.decoderProxy)``), but answers ``GET /health`` itself
(200): the engine's own probes go to the engine's port."""

@dataclass(frozen=True)
class RoutingSidecar:
    """llm-d's P/D sidecar of one engine's decode pods: its image and the arguments besides its two ports."""

    image: str
    engine_port_flag: str
    """The flag naming the port of the engine behind it."""
    args: tuple[str, ...]
    env: Mapping[str, str]
    source: str


ROUTER_SIDECAR_IMAGE = "ghcr.io/llm-d/llm-d-router-disagg-sidecar:v0.10.0"
"""The P/D sidecar of every engine's decode pods (``ROUTER_SIDECAR``)."""

SGLANG_SIDECAR = RoutingSidecar(
    image=ROUTER_SIDECAR_IMAGE,
    engine_port_flag="--model-server-port",
    args=("--kv-connector=sglang", "--secure-proxy=false"),
    env=MappingProxyType({"SGLANG_BOOTSTRAP_PORT": str(SGLANG_BOOTSTRAP_PORT)}),
    source=f"{ROUTER_SIDECAR}; pkg/sidecar/proxy/connector_sglang.go (adds bootstrap_host = the prefill's host, "
           "bootstrap_port = SGLANG_BOOTSTRAP_PORT or 8998, bootstrap_room = a fresh id to the request and sends it "
           "to the prefill and the local decode at once, as SGLang's router does). These arguments passed the "
           "release's own proxy.Options (AddFlags, Parse, Complete, Validate) once, in a throwaway program built from "
           "the v0.10.0 source (--kv-connector=sglng: 'must be one of'); the tests do not build it (Go modules)",
)
"""The SGLang decode pods' sidecar: llm-d-router's with its SGLang connector."""

VLLM_SIDECAR = RoutingSidecar(
    image=ROUTER_SIDECAR_IMAGE,
    engine_port_flag="--model-server-port",
    args=("--kv-connector=nixlv2", "--secure-proxy=false"),
    env=MappingProxyType({}),
    source=f"{ROUTER_SIDECAR}; pkg/sidecar/proxy/connector_nixlv2.go (sends the request to the prefill with "
           "kv_transfer_params do_remote_decode, then to the local vLLM with the prefill's kv_transfer_params, as "
           "v0.3.0's --connector=nixlv2 did). --secure-proxy=false as WIDE_EP decode.yaml: plain HTTP on the serving "
           "port, behind the namespace's NetworkPolicy. These arguments with routing_sidecar_ssrf_args passed the "
           "release's proxy.Options (AddFlags, Parse, Complete, Validate) once, in a throwaway program built from the "
           "v0.10.0 source: decoder http://localhost:8200, pool kimi-k3/k3-gateway, group inference.networking.k8s.io; "
           "--enable-ssrf-protection without --inference-pool refused, v0.3.0's --connector unknown",
)
"""The vLLM decode pods' sidecar: llm-d-router's with its NIXL v2 connector."""

ROUTING_SIDECARS: Mapping[EngineName, RoutingSidecar] = MappingProxyType({
    EngineName.VLLM: VLLM_SIDECAR, EngineName.SGLANG: SGLANG_SIDECAR})
"""The decode pods' sidecar per engine."""

ROUTING_SIDECAR_SSRF_POOL_GROUP = "inference.networking.k8s.io"
"""The InferencePool API group the sidecar's SSRF allowlist watches: ``--pool-group``, whose default it is
(pkg/sidecar/proxy/options.go ``PoolGroup: routing.InferencePoolAPIGroup``), at version v1 (allowlist.go
``inferencePoolGroupToVersion``), the GA API of the gateway's pool (serving/gateway.py ``INFERENCE_API``). With
``--enable-ssrf-protection`` the sidecar refuses (403) a prefill target whose host is not the IP or the name of a pod
the pool selects (allowlist.go ``IsAllowed``, ``addPodToAllowlist``; chat_completions.go), so a request's header can no
longer send its body anywhere else. Its informers list and watch that one pool (a ``metadata.name`` field selector)
and the pods of the pool's namespace matching its selector, with the pod's own service account
(``ROUTING_SIDECAR_RBAC``). ``Start`` waits for the pool's informer to sync before it listens (no timeout): denied
by RBAC it never syncs and the serving port never opens; a pool not yet created syncs empty, and every prefill is
refused until the pool's add event fills the allowlist."""

ROUTING_SIDECAR_RBAC: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (ROUTING_SIDECAR_SSRF_POOL_GROUP, "inferencepools", ("list", "watch")),
    ("", "pods", ("list", "watch")),
)
"""(API group, resource, verbs) the allowlist's informers call (allowlist.go: ``cache.ListWatch`` List and Watch on
the pool, by name, and on the pods, by label; nothing else): the namespaced Role the decode pods' service account is
bound to. The pool's rule names the pool (list and watch by ``metadata.name`` field selector are authorised against
``resourceNames``)."""


def routing_sidecar_ssrf_args(namespace: str, pool: str) -> tuple[str, ...]:
    """The sidecar's SSRF-protection flags for the gateway's pool ``namespace/pool`` (options.go
    ``--enable-ssrf-protection``, ``--inference-pool`` namespace/name, ``--pool-group``; Validate refuses SSRF
    protection without a pool)."""
    return ("--enable-ssrf-protection", f"--inference-pool={namespace}/{pool}",
            f"--pool-group={ROUTING_SIDECAR_SSRF_POOL_GROUP}")


ROLE_LABEL = "llm-d.ai/role"
"""The label llm-d's endpoint picker tells prefill from decode pods by (WIDE_EP decode.yaml / prefill.yaml:
``llm-d.ai/role: decode|prefill``)."""

ROLE_SERIES_LABEL = "llm_d_ai_role"
"""The label a disaggregated topology's engine series carry ``ROLE_LABEL`` in: the pod label as Prometheus' Kubernetes
discovery and prometheus-operator's ``podTargetLabels`` sanitise it (every character not allowed in a label name to
``_``; ``observability.scrape.series_label``), which each cloud's scrape object copies onto the server's series. The
alerts and the scalers of each role select on it."""

INFERENCE_SERVING_LABEL = "llm-d.ai/inferenceServing"
"""The label llm-d's InferencePool selects every serving pod of a guide by (WIDE_EP: ``"true"``)."""
