"""The seed shapes, served by ``serve()`` with hand-made cloud hand-overs (no cloud package needed).

Each shape is a stack configuration (validated like any stack) plus the GpuPool, WeightStore and
LoadBalancerSettings a cloud would hand over. ``record_shape`` runs ``serve()`` under the recording engine. Each
limits its control plane to the documentation range, as every stack must (config.clouds.control_plane_access).
"""

import functools
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from k3infra import offline
from k3infra.config import StackConfig, parse_config
from k3infra.offline import Recording
from k3infra.catalog.transfer import SYNC_POOL_LABEL, SYNC_POOL_TAINT_KEY
from k3infra.serving.contract import (
    SyncNodes,
    SERVER_SERVICE_ACCOUNT,
    SYNC_SERVICE_ACCOUNT,
    GpuPool,
    LoadBalancerSettings,
    WeightStore,
)
from k3infra.observability.verify_job import with_checklist
from k3infra.serving.stack import Serving, serve

HF_TOKEN = "hf_KNOWNtokenVALUE0123456789abcdef"
"""A recognisable token: no plan or rendered file may contain it."""
API_KEY = "sk-KNOWN-api-key-4f2b9c7e1d"
REVISION = "0123456789abcdef0123456789abcdef01234567"
DRAFT_REVISION = "fedcba9876543210fedcba9876543210fedcba98"


SYNC_NODES = SyncNodes(node_selector={SYNC_POOL_LABEL: "sync"},
                       tolerations=[{"key": SYNC_POOL_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}])
"""The hand-over of a cloud's sync pool (gcp.sync_pool, azure.sync_pool)."""


@dataclass(frozen=True)
class Shape:
    """A seed shape: configuration and hand-overs."""

    name: str
    config: dict[str, Any]
    pool: GpuPool
    store: WeightStore
    lb: LoadBalancerSettings


def _copy(image: str, command: str) -> Any:
    return {"image": image, "command": ["/bin/sh", "-c", command]}


SHAPES: dict[str, Shape] = {
    # 002 §3.2: one p6-b300 (8 x B300), vLLM TP=8, a Deployment; Mountpoint for S3 as a static volume; public.
    "p6-b300": Shape(
        name="p6-b300",
        config={
            "aws:region": "us-west-2",
            "k3infra:cloud": "aws",
            "k3infra:aws": {"publicAccessCidrs": ["81.2.69.0/24"]},
            "k3infra:zone": "us-west-2a",
            "k3infra:accelerator": "p6-b300.48xlarge",
            "k3infra:capacity": {"type": "capacity-block", "reservationId": "cr-0123456789abcdef0"},
            "k3infra:weights": {"bucket": "my-org-kimi-k3-weights", "revision": REVISION, "loader": "fuse"},
            "k3infra:endpoint": {"exposure": "public", "allowedCidrs": ["203.0.113.0/24"]},
            "k3infra:hfToken": HF_TOKEN,
            "k3infra:apiKey": API_KEY,
        },
        pool={
            "node_selector": {"k3infra.dev/pool": "gpu"},
            "tolerations": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}],
            "gpus_per_node": 8,
            "node_count": 1,
            "extra_resources": {"vpc.amazonaws.com/efa": "16"},
            "capabilities": ["IPC_LOCK"],
            "env": {"FI_PROVIDER": "efa"},
            "cpu_request": "180",
            "memory_request": "3800Gi",
            "shm_size": "128Gi",
        },
        store={
            "uri": "s3://my-org-kimi-k3-weights/models/moonshotai/Kimi-K3",
            "model_subpath": "models/moonshotai/Kimi-K3",
            "reader": {"name": SERVER_SERVICE_ACCOUNT,
                       "annotations": {"eks.amazonaws.com/role-arn": "arn:aws:iam::123456789012:role/k3-reader"}},
            "writer": {"name": SYNC_SERVICE_ACCOUNT,
                       "annotations": {"eks.amazonaws.com/role-arn": "arn:aws:iam::123456789012:role/k3-writer"}},
            "fuse": {"driver": "s3.csi.aws.com", "inline": False, "volume_handle": "my-org-kimi-k3-weights",
                     "volume_attributes": {"bucketName": "my-org-kimi-k3-weights"},
                     "mount_options": ["read-only", "region us-west-2"], "capacity": "2000Gi"},
            "copy_env": {"AWS_REGION": "us-west-2"},
            "download": _copy("public.ecr.aws/aws-cli/aws-cli:2.27.0", 'aws s3 sync "$SOURCE" "$DEST"'),
        },
        lb={
            "internal_annotations": {"service.beta.kubernetes.io/aws-load-balancer-scheme": "internal"},
            "public_annotations": {"service.beta.kubernetes.io/aws-load-balancer-scheme": "internet-facing"},
        },
    ),
    # 002 §4.4: 2 x ND GB300 v6 (4 GPUs each), vLLM TP=8 over both, LeaderWorkerSet, RunAI streamer from az://.
    "gb300": Shape(
        name="gb300",
        config={
            "azure-native:location": "eastus2",
            "k3infra:cloud": "azure",
            "k3infra:azure": {"authorizedIpRanges": ["81.2.69.0/24"]},
            "k3infra:zone": "1",
            "k3infra:accelerator": "Standard_ND128isr_GB300_v6",
            "k3infra:capacity": {"type": "capacity-reservation-group", "groupId":
                                 "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/"
                                 "Microsoft.Compute/capacityReservationGroups/crg"},
            "k3infra:image": "myregistry.azurecr.io/vllm-openai:kimi-k3-arm64",
            "k3infra:imagePlatforms": ["arm64"],
            "k3infra:weights": {"bucket": "kimi-k3-weights", "account": "myorgk3weights", "revision": REVISION,
                                "loader": "streamer"},
            "k3infra:hfToken": HF_TOKEN,
        },
        pool={
            "node_selector": {"agentpool": "gb300pool"},
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "gpus_per_node": 4,
            "node_count": 2,
        },
        store={
            "uri": "az://kimi-k3-weights/models/moonshotai/Kimi-K3",
            "model_subpath": "models/moonshotai/Kimi-K3",
            "reader": {"name": SERVER_SERVICE_ACCOUNT,
                       "annotations": {"azure.workload.identity/client-id": "11111111-1111-1111-1111-111111111111"},
                       "pod_labels": {"azure.workload.identity/use": "true"}},
            "writer": {"name": SYNC_SERVICE_ACCOUNT,
                       "annotations": {"azure.workload.identity/client-id": "22222222-2222-2222-2222-222222222222"},
                       "pod_labels": {"azure.workload.identity/use": "true"}},
            "streamer_env": {"AZURE_STORAGE_ACCOUNT_NAME": "myorgk3weights"},
            "copy_env": {"AZURE_STORAGE_ACCOUNT_NAME": "myorgk3weights"},
            "download": _copy("mcr.microsoft.com/azure-cli:2.75.0", 'azcopy sync "$SOURCE" "$DEST"'),
        },
        lb={
            "internal_annotations": {"service.beta.kubernetes.io/azure-load-balancer-internal": "true"},
            "internal_source_ranges": ["10.0.0.0/8"],
        },
    ),
    # 000: 2 x A4 (8 x B200), SGLang TP=16 with DSPARK, StatefulSet + headless Service, GCS FUSE inline volume,
    # GPUDirect RDMA (multi-network annotations, host-mounted drivers and gIB plugin, NCCL setup).
    "a4-sglang": Shape(
        name="a4-sglang",
        config={
            "gcp:project": "my-project",
            "gcp:region": "us-central1",
            "k3infra:cloud": "gcp",
            "k3infra:gcp": {"authorizedNetworks": ["81.2.69.0/24"]},
            "k3infra:zone": "us-central1-b",
            "k3infra:accelerator": "a4-highgpu-8g",
            "k3infra:nodes": 2,
            "k3infra:tensorParallel": 16,
            "k3infra:engine": "sglang",
            "k3infra:speculativeDecoding": "dspark",
            "k3infra:workload": "statefulset",
            "k3infra:capacity": {"type": "reservation", "reservation": "k3-a4"},
            "k3infra:weights": {"bucket": "my-project-kimi-k3-weights", "revision": REVISION,
                                "draftRevision": DRAFT_REVISION, "loader": "fuse"},
            "k3infra:hfToken": HF_TOKEN,
        },
        pool={
            "node_selector": {"cloud.google.com/gke-accelerator": "nvidia-b200"},
            "tolerations": [{"key": "nvidia.com/gpu"}, {"key": "cloud.google.com/impending-node-termination"},
                            {"key": "user-workload"}],
            "gpus_per_node": 8,
            "node_count": 2,
            "pod_annotations": {"networking.gke.io/default-interface": "eth0",
                                "networking.gke.io/interfaces": '[{"interfaceName":"eth0","network":"default"}]'},
            "env": {"NCCL_IB_GID_INDEX": "3", "NCCL_IB_ROCE_VERSION_NUM": "2", "GLOO_SOCKET_IFNAME": "eth0",
                    "NCCL_SOCKET_IFNAME": "eth0", "LD_LIBRARY_PATH": "/usr/local/nvidia/lib64"},
            "host_mounts": [{"name": "library-dir-host", "host_path": "/home/kubernetes/bin/nvidia",
                             "mount_path": "/usr/local/nvidia"},
                            {"name": "gib-nccl-plugin-volume", "host_path": "/home/kubernetes/bin/gib",
                             "mount_path": "/usr/local/gib"}],
            "setup_commands": ["ldconfig /usr/local/nvidia/lib64/ || true",
                               "if [ -f /usr/local/gib/scripts/set_nccl_env.sh ]; then "
                               "source /usr/local/gib/scripts/set_nccl_env.sh; fi"],
            "cpu_request": "206",
            "memory_request": "1500Gi",
            "shm_size": "100Gi",
        },
        store={
            "uri": "gs://my-project-kimi-k3-weights/models/moonshotai/Kimi-K3",
            "model_subpath": "models/moonshotai/Kimi-K3",
            "reader": {"name": SERVER_SERVICE_ACCOUNT},
            "writer": {"name": SYNC_SERVICE_ACCOUNT},
            "fuse": {"driver": "gcsfuse.csi.storage.gke.io", "inline": True,
                     "volume_attributes": {"bucketName": "my-project-kimi-k3-weights",
                                           "gcsfuseMetadataPrefetchOnMount": "true"},
                     "mount_options": ["implicit-dirs", "file-cache:enable-parallel-downloads:true",
                                       "file-cache:max-size-mb:-1"],
                     "pod_annotations": {"gke-gcsfuse/volumes": "true"}},
            "download": _copy("gcr.io/google.com/cloudsdktool/google-cloud-cli:530.0.0-stable",
                              'gcloud storage rsync --recursive "$SOURCE" "$DEST"'),
        },
        lb={"internal_annotations": {"networking.gke.io/load-balancer-type": "Internal"}},
    ),
    # 002 §5.4-5.5: 2 x A4X Max (4 x GB300), vLLM TP=8 over MNNVL, LeaderWorkerSet, GCS FUSE, Inference Gateway.
    "a4xmax-gateway": Shape(
        name="a4xmax-gateway",
        config={
            "gcp:project": "my-project",
            "gcp:region": "us-central1",
            "k3infra:cloud": "gcp",
            "k3infra:gcp": {"authorizedNetworks": ["81.2.69.0/24"]},
            "k3infra:zone": "us-central1-b",
            "k3infra:accelerator": "a4x-maxgpu-4g-metal",
            "k3infra:capacity": {"type": "reservation", "reservation": "r", "block": "b", "subBlock": "s"},
            "k3infra:image": "us-central1-docker.pkg.dev/my-project/k3/vllm-openai:kimi-k3-arm64",
            "k3infra:imagePlatforms": ["arm64"],
            "k3infra:weights": {"bucket": "my-project-kimi-k3-weights", "revision": REVISION},
            "k3infra:endpoint": {"exposure": "internal", "gateway": True},
            "k3infra:hfToken": HF_TOKEN,
        },
        pool={
            "node_selector": {"cloud.google.com/gke-accelerator": "nvidia-gb300"},
            "tolerations": [{"key": "nvidia.com/gpu"}],
            "gpus_per_node": 4,
            "node_count": 2,
        },
        store={
            "uri": "gs://my-project-kimi-k3-weights/models/moonshotai/Kimi-K3",
            "model_subpath": "models/moonshotai/Kimi-K3",
            "reader": {"name": SERVER_SERVICE_ACCOUNT},
            "writer": {"name": SYNC_SERVICE_ACCOUNT},
            "fuse": {"driver": "gcsfuse.csi.storage.gke.io", "inline": True,
                     "volume_attributes": {"bucketName": "my-project-kimi-k3-weights"},
                     "pod_annotations": {"gke-gcsfuse/volumes": "true"}},
            "download": _copy("gcr.io/google.com/cloudsdktool/google-cloud-cli:530.0.0-stable",
                              'gcloud storage rsync --recursive "$SOURCE" "$DEST"'),
        },
        lb={"internal_annotations": {"networking.gke.io/load-balancer-type": "Internal"},
            "internal_gateway_class": "gke-l7-rilb", "gateway_source_ranges": ["10.129.0.0/23"],
            "gateway_provider": "gke",
            "health_check_ranges": ["35.191.0.0/16", "130.211.0.0/22"]},
    ),
}

SEED_SHAPES = ("p6-b300", "gb300", "a4-sglang")
"""The three seed shapes the issue names; ``a4xmax-gateway`` adds the gateway."""


@functools.lru_cache(maxsize=None)
def shape_config(name: str) -> StackConfig:
    """The validated configuration of a shape."""
    return parse_config(SHAPES[name].config, stack=f"shape-{name}")


@dataclass
class Recorded:
    """A shape's recording and what serve() returned."""

    recording: Recording
    serving: Serving


def record(shape: Shape, *, name: str = "k3") -> Recorded:
    """Run serve() for ``shape`` under the recording engine."""
    cfg = parse_config(shape.config, stack=f"shape-{shape.name}")
    holder: dict[str, Serving] = {}

    def program() -> None:
        provider = k8s.Provider("cluster", kubeconfig=pulumi.Output.secret("apiVersion: v1\nkind: Config\n"))
        # Stand-ins for the cloud's node pool and identity binding (custom resources: a dependency on a
        # component without children would vanish).
        pool = pulumi.CustomResource("test:index:GpuNodePool", "gpu-pool", {})
        identity = pulumi.CustomResource("test:index:IdentityBinding", "identity", {})
        # The sync's own pool where the sizing counts on one (the GKE, AKS and EKS deployments build it).
        pooled = cfg.sizing.sync is not None and cfg.sizing.sync.pool
        sync_pool = [pulumi.CustomResource("test:index:SyncNodePool", "sync-pool", {})] if pooled else []
        serving = with_checklist(cfg, serve(cfg, name=name, provider=provider, pool=shape.pool, store=shape.store,
                                            lb=shape.lb, pool_resources=[pool], identity_resources=[identity],
                                            sync_nodes=SYNC_NODES if pooled else None, sync_pool_resources=sync_pool))
        for key, value in serving.outputs().items():
            pulumi.export(key, value)
        holder["serving"] = serving

    rec = offline.run(program, project="k3infra", stack=f"shape-{shape.name}")
    return Recorded(recording=rec, serving=holder["serving"])


@functools.lru_cache(maxsize=None)
def record_shape(name: str) -> Recorded:
    """Run serve() for a named shape (cached: deterministic)."""
    return record(SHAPES[name])


def variant(name: str, *, config: dict[str, Any] | None = None, drop: tuple[str, ...] = (),
            pool: dict[str, Any] | None = None, store: dict[str, Any] | None = None,
            lb: dict[str, Any] | None = None) -> Shape:
    """A shape with configuration keys replaced or dropped and hand-over fields replaced."""
    base = SHAPES[name]
    cfg = {k: v for k, v in base.config.items() if k not in drop}
    cfg.update(config or {})
    return Shape(name=f"{name}-variant", config=cfg, pool={**base.pool, **(pool or {})},  # type: ignore[typeddict-item]
                 store={**base.store, **(store or {})}, lb={**base.lb, **(lb or {})})  # type: ignore[typeddict-item]


# The other engine x workload pairs: SGLang in a LeaderWorkerSet, vLLM (Ray) in 000's StatefulSet pattern.
for _key, _base, _workload in (("a4-sglang-lws", "a4-sglang", "leaderworkerset"),
                               ("gb300-statefulset", "gb300", "statefulset")):
    _v = variant(_base, config={"k3infra:workload": _workload})
    SHAPES[_key] = Shape(name=_key, config=_v.config, pool=_v.pool, store=_v.store, lb=_v.lb)
