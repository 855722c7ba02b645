"""Closed sets shared by the catalog, the sizing and the configuration."""

from enum import StrEnum


class Cloud(StrEnum):
    """A cloud k3infra deploys to."""

    AWS = "aws"
    AZURE = "azure"
    GCP = "gcp"
    ALICLOUD = "alicloud"


class Platform(StrEnum):
    """Where the model server runs: a managed Kubernetes service or a cloud's managed serving."""

    EKS = "eks"
    HYPERPOD = "hyperpod"
    AKS = "aks"
    GKE = "gke"
    ACK = "ack"
    PAI_EAS = "pai-eas"


#: The platforms of each cloud; the first is the default.
PLATFORMS_BY_CLOUD: dict[Cloud, tuple[Platform, ...]] = {
    Cloud.AWS: (Platform.EKS, Platform.HYPERPOD),
    Cloud.AZURE: (Platform.AKS,),
    Cloud.GCP: (Platform.GKE,),
    Cloud.ALICLOUD: (Platform.ACK, Platform.PAI_EAS),
}

#: Platforms whose serving workload is cloud-neutral Kubernetes (k3infra.serving).
KUBERNETES_PLATFORMS = frozenset({Platform.EKS, Platform.AKS, Platform.GKE, Platform.ACK})


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

    @property
    def model_source(self) -> "ModelSource":
        """What the engine's model argument names under this loader."""
        if self == Loader.STREAMER:
            return ModelSource.OBJECT_STORE
        return ModelSource.HUB if self == Loader.HUGGINGFACE else ModelSource.LOCAL


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
