"""Closed sets shared by the catalog, the sizing and the configuration."""

from enum import StrEnum


class Cloud(StrEnum):
    """A cloud k3infra deploys to."""

    AWS = "aws"
    AZURE = "azure"
    GCP = "gcp"
    ALICLOUD = "alicloud"
    KUBERNETES = "kubernetes"
    """No cloud: a Kubernetes cluster the user already runs, given by a kubeconfig (self-hosted GPUs, or a GKE, EKS
    or AKS cluster a platform team runs); k3infra deploys the serving layer only."""


class Platform(StrEnum):
    """Where the model server runs: a managed Kubernetes service or a cloud's managed serving."""

    EKS = "eks"
    HYPERPOD = "hyperpod"
    AKS = "aks"
    GKE = "gke"
    ACK = "ack"
    PAI_EAS = "pai-eas"
    EXISTING_CLUSTER = "existing-cluster"
    """A cluster k3infra neither creates nor manages (``cloud: kubernetes``)."""


#: The platforms of each cloud; the first is the default.
PLATFORMS_BY_CLOUD: dict[Cloud, tuple[Platform, ...]] = {
    Cloud.AWS: (Platform.EKS, Platform.HYPERPOD),
    Cloud.AZURE: (Platform.AKS,),
    Cloud.GCP: (Platform.GKE,),
    Cloud.ALICLOUD: (Platform.ACK, Platform.PAI_EAS),
    Cloud.KUBERNETES: (Platform.EXISTING_CLUSTER,),
}

#: Platforms whose serving workload is cloud-neutral Kubernetes (k3infra.serving).
KUBERNETES_PLATFORMS = frozenset({Platform.EKS, Platform.AKS, Platform.GKE, Platform.ACK, Platform.EXISTING_CLUSTER})
IMAGE_PRE_PULL_PLATFORMS = KUBERNETES_PLATFORMS | {Platform.HYPERPOD}
"""Platforms whose GPU nodes run k3infra's image pre-pull DaemonSet (serving.prepull): the Kubernetes platforms, and
HyperPod's EKS-orchestrated instances (aws.hyperpod_prepull)."""
ENGINE_CACHE_BY_DEFAULT = frozenset({Platform.GKE, Platform.AKS})
"""Platforms whose server pods keep the engine's caches on the node (a hostPath, which Pod Security's baseline forbids)
unless the stack says ``engineCache: false``: their GPU pools run the server privileged anyway (GKE: RDMA's IPC_LOCK
and the gIB plugin's host mounts; AKS GB300: DRANET's IPC_LOCK), so the cache widens nothing. Elsewhere the cache
would turn the serving namespace from baseline to privileged, so it is opt-in (``engineCache: true``)."""
NOTHING_TO_CREATE: dict[Platform, str] = {
    Platform.EXISTING_CLUSTER: "the cluster and its GPU nodes exist already",
    Platform.PAI_EAS: "PAI-EAS runs the service on the machines of its dedicated resource group or Lingjun quota, which "
                      "exist already: there is no cluster or GPU pool to create",
}
"""Platforms whose cold start creates no cluster and no GPU pool, and why (sizing.ColdStart)."""
SYNC_POOL_PLATFORMS = KUBERNETES_PLATFORMS | {Platform.HYPERPOD}
"""Platforms whose deployment builds the weight sync's own pool where the cloud has one (catalog.transfer.SYNC_POOLS):
the Kubernetes platforms' and HyperPod's, whose EKS cluster takes the same node group as aws-eks."""


class CpuArch(StrEnum):
    """CPU architecture of a node, named as container image platforms name it."""

    AMD64 = "amd64"
    ARM64 = "arm64"


class CapacityType(StrEnum):
    """How the GPUs of a pool are obtained."""

    CAPACITY_BLOCK = "capacity-block"
    TRAINING_PLAN = "training-plan"
    RESERVATION = "reservation"
    CAPACITY_RESERVATION_GROUP = "capacity-reservation-group"
    PRIVATE_POOL = "private-pool"
    LINGJUN = "lingjun"
    ON_DEMAND = "on-demand"
    EXISTING = "existing"
    """The GPU nodes are already in the cluster (``cloud: kubernetes``): nothing is reserved or bought."""


class EngineName(StrEnum):
    """A serving engine."""

    VLLM = "vllm"
    SGLANG = "sglang"


class Loader(StrEnum):
    """How the weights travel from storage into GPU memory at start-up."""

    HUGGINGFACE = "huggingface"
    """The engine downloads the checkpoint from Hugging Face on every start (002 §2.1 warns against it)."""
    BUCKET_COPY = "bucket-copy"
    """An init container copies the bucket to local NVMe, then the engine reads local files."""
    FUSE = "fuse"
    """The bucket is mounted through the cloud's CSI driver (GCS FUSE, Mountpoint for S3, BlobFuse, ossfs)."""
    STREAMER = "streamer"
    """The RunAI Model Streamer reads the bucket URI directly into GPU memory (002 §4.3, §5.3)."""
    VOLUME = "volume"
    """A file system the cluster already has, mounted read-only: a PersistentVolume (claimed by the server) or a
    directory on the nodes (``cloud: kubernetes``)."""

    @property
    def model_source(self) -> "ModelSource":
        """What the engine's model argument names under this loader."""
        if self == Loader.STREAMER:
            return ModelSource.OBJECT_STORE
        return ModelSource.HUB if self == Loader.HUGGINGFACE else ModelSource.LOCAL


class WeightSource(StrEnum):
    """Where an existing cluster's weights live (``cloud: kubernetes``)."""

    S3 = "s3"
    """An S3-compatible bucket (MinIO, Ceph RGW, or S3 itself) at an endpoint, read with access keys."""
    PVC = "pvc"
    """A PersistentVolume that already holds the model, claimed by the server from the serving namespace."""
    HOST_PATH = "hostPath"
    """A directory present on every GPU node (a local copy or a shared file system mounted there)."""


class AddonState(StrEnum):
    """Whether k3infra installs a cluster component or finds it there (``cloud: kubernetes``)."""

    INSTALL = "install"
    """k3infra installs it with its pinned chart."""
    PRESENT = "present"
    """The cluster runs it already: preview checks that its API is served, and k3infra installs nothing."""
    ABSENT = "absent"
    """The cluster has none and k3infra installs none: what needs it is left out (monitoring only)."""


class ModelSource(StrEnum):
    """What the engine's model argument names: it decides which of the engine's processes can open the model
    (catalog/recipes.py ``ENV_SCOPE``)."""

    LOCAL = "local directory"
    """A directory on the pod's file system: a CSI mount of the bucket, a copy on local disk, a managed mount."""
    OBJECT_STORE = "object-store URI"
    """An ``s3://``, ``gs://`` or ``az://`` URI that the engine's RunAI streamer reads."""
    HUB = "Hugging Face id"
    """A Hub repository the engine downloads."""

    @staticmethod
    def of(model: str) -> "ModelSource":
        """The source a concrete model argument names (vLLM 0.33.0 ``transformers_utils/runai_utils.py``
        ``is_runai_obj_uri``: the schemes s3://, gs://, az://, any case)."""
        if model.lower().startswith(("s3://", "gs://", "az://")):
            return ModelSource.OBJECT_STORE
        return ModelSource.LOCAL if model.startswith("/") else ModelSource.HUB


class Workload(StrEnum):
    """The Kubernetes workload that runs one model replica."""

    DEPLOYMENT = "deployment"
    LEADER_WORKER_SET = "leaderworkerset"
    STATEFUL_SET = "statefulset"


class Exposure(StrEnum):
    """Who can reach the inference endpoint."""

    INTERNAL = "internal"
    PUBLIC = "public"


class GpuArchitecture(StrEnum):
    """A GPU generation, as the engines' recipes name the hardware they tune for."""

    HOPPER = "hopper"
    BLACKWELL = "blackwell"
