"""The stack configuration as typed, validated objects (built only by ``validate.parse_config``)."""

import dataclasses
from dataclasses import dataclass, field
from typing import Mapping

from ..catalog import (
    Accelerator,
    AddonState,
    CapacityType,
    Cloud,
    CpuArch,
    Engine,
    Exposure,
    Loader,
    Model,
    Platform,
    WeightSource,
    Workload,
)
from ..catalog.autoscaling import Scaler, ScalingSignal
from ..sizing import ReplicaStart, Sizing
from .keys import END_MARGIN_HOURS
from .topology import TopologyConfig


@dataclass(frozen=True)
class CapacityConfig:
    """How the GPUs are obtained. Only the fields of ``type`` are set."""

    type: CapacityType
    reservation: str | None = None
    block: str | None = None
    sub_block: str | None = None
    project: str | None = None
    reservation_id: str | None = None
    purchase: bool = False
    duration_hours: int | None = None
    start_after: str | None = None
    end_before: str | None = None
    training_plan_arn: str | None = None
    group_id: str | None = None
    create: bool = False
    private_pool_id: str | None = None
    lingjun_cluster_id: str | None = None
    lingjun_node_group_id: str | None = None
    end_margin_hours: int = END_MARGIN_HOURS
    """Warn when the capacity window ends within this many hours of the plan's date (AWS)."""

    @property
    def purchases(self) -> bool:
        """True when the stack buys capacity (irreversible) instead of consuming an existing reservation."""
        return self.purchase or self.create


@dataclass(frozen=True)
class WeightsConfig:
    """Where the weights live and how they reach the GPUs."""

    bucket: str
    account: str | None
    prefix: str
    sync: bool
    revision: str | None
    draft_revision: str | None
    """Revision of the draft model (speculative decoding), copied with the model."""
    loader: Loader
    bandwidth_gbps: float | None
    retain_on_destroy: bool

    def model_path(self, hf_id: str) -> str:
        """Object path of a model inside the bucket: PREFIX/<Hugging Face id>."""
        return f"{self.prefix}/{hf_id}"


@dataclass(frozen=True)
class FabricCheckConfig:
    """The fabric check of a multi-node group (``k3infra:fabricCheck``)."""

    enabled: bool = True
    min_busbw_fraction: float = 0.5
    """The share of the expected bus bandwidth each path must reach."""


@dataclass(frozen=True)
class StatusConfig:
    """Read-only access for ``k3infra status``."""

    group: str | None = None
    """The Kubernetes group the stack binds the status roles to; None: the stack creates none."""


@dataclass(frozen=True)
class EndpointConfig:
    """How the endpoint is exposed."""

    exposure: Exposure
    allowed_cidrs: tuple[str, ...]
    gateway: bool


@dataclass(frozen=True)
class ObservabilityConfig:
    """Metrics, dashboard and alerts."""

    enabled: bool
    workspace: str | None
    """An existing managed Prometheus workspace (AWS ARN, Azure resource id); None creates one."""
    stall_minutes: int
    capacity_margin_hours: int


@dataclass(frozen=True)
class RoleScaling:
    """How one role of a disaggregated topology follows its own load (``k3infra:autoscaling.roles.<role>``)."""

    role: str
    """prefill or decode."""
    min_groups: int
    """The floor (at least one group: the other role's requests need one)."""
    max_groups: int
    """The ceiling: the role's planned groups (``topology.<role>.groups``), which the shared pool holds beside the
    other role's."""
    nodes: int
    """Nodes per group."""
    signal: ScalingSignal
    target: float
    data_parallel: bool = False
    """Every pod of a group takes requests (DEP), so every pod is scraped; else only the group's leader."""

    def as_dict(self) -> dict[str, object]:
        """The plan's entry for the role's scaler."""
        return {"role": self.role, "minGroups": self.min_groups, "maxGroups": self.max_groups,
                "nodesPerGroup": self.nodes, "signal": str(self.signal), "target": self.target}


@dataclass(frozen=True)
class AutoscalingConfig:
    """How the replicas follow the traffic (``k3infra:autoscaling``), with what a new replica costs."""

    enabled: bool
    min_replicas: int
    """The floor; with autoscaling off, ``k3infra:replicas`` (as is max_replicas)."""
    max_replicas: int
    capacity_replicas: int
    """Replicas the reserved capacity holds (the ceiling of max_replicas)."""
    signal: ScalingSignal
    target: float
    scale_down_delay_seconds: int
    scale_to_zero: bool
    scaler: Scaler
    """The platform's mechanism."""
    start: ReplicaStart
    """How long a new replica takes from scale-out to serving."""
    why_none: str = ""
    """Why the stack runs no scaler even when enabled would be asked for (``""``: it can run one)."""
    roles: tuple[RoleScaling, ...] = ()
    """A disaggregated topology's scalers, prefill first, each on its role's own workload and signal (the fields
    min_replicas to target above are then unused); empty otherwise."""

    def for_role(self, role: str) -> "AutoscalingConfig":
        """The scaling of one role as a scaler of its own: its groups, signal and target, the stack's delay."""
        r = next(r for r in self.roles if r.role == role)
        return dataclasses.replace(self, min_replicas=r.min_groups, max_replicas=r.max_groups,
                                   capacity_replicas=r.max_groups, signal=r.signal, target=r.target, roles=())

    def as_dict(self) -> dict[str, object]:
        """A JSON-ready summary for the plan (camelCase), with the cost of a new replica."""
        st = self.start
        if self.roles:
            return {"enabled": self.enabled, "mechanism": self.scaler.mechanism,
                    "roles": [r.as_dict() for r in self.roles],
                    "scaleDownDelaySeconds": self.scale_down_delay_seconds,
                    "newGroup": {"nodeSeconds": st.node_seconds, "schedulingSeconds": st.scheduling_seconds,
                                 "imagePullSeconds": st.image_pull_seconds, "loadSeconds": st.load_seconds,
                                 "warmupSeconds": st.warmup_seconds, "totalSeconds": st.total_seconds},
                    "source": self.scaler.source}
        return {
            "enabled": self.enabled, "mechanism": self.scaler.mechanism, "minReplicas": self.min_replicas,
            "maxReplicas": self.max_replicas, "capacityReplicas": self.capacity_replicas, "signal": str(self.signal),
            "target": self.target, "scaleDownDelaySeconds": self.scale_down_delay_seconds,
            "scaleToZero": self.scale_to_zero,
            "newReplica": {"nodeSeconds": st.node_seconds, "schedulingSeconds": st.scheduling_seconds,
                           "imagePullSeconds": st.image_pull_seconds, "loadSeconds": st.load_seconds,
                           "warmupSeconds": st.warmup_seconds, "totalSeconds": st.total_seconds},
            "firstRequestAfterIdleSeconds": st.first_request_seconds if self.scale_to_zero else None,
            "source": self.scaler.source,
        }

    @property
    def initial_replicas(self) -> int:
        """Replicas the workload is created with: the floor, at least one (a deploy waits for one to serve)."""
        return max(1, self.min_replicas) if self.enabled else self.max_replicas


@dataclass(frozen=True)
class MaintenanceWindow:
    """A weekly window in which the cloud may upgrade or patch the cluster (UTC)."""

    day: str
    """Monday ... Sunday."""
    start_time: str
    """HH:MM, UTC."""
    duration_hours: int


@dataclass(frozen=True)
class ClusterConfig:
    """The Kubernetes cluster."""

    name: str
    kubernetes_version: str | None
    deletion_protection: bool
    system_node_type: str | None
    system_nodes: int


@dataclass(frozen=True)
class GcpConfig:
    """Google Cloud settings."""

    project: str
    region: str
    release_channel: str
    gpu_driver_version: str
    check_reservation: bool
    """Look the reservation up while the program runs and fail when it cannot hold the pool."""
    maintenance_window_start: str
    """Start of the daily maintenance window, HH:MM UTC."""
    upgrade_exclusion: str | None
    """Maintenance exclusion scope, or None for no exclusion."""
    upgrade_exclusion_start: str
    """When the exclusion starts (RFC 3339)."""
    authorized_networks: tuple[str, ...]
    """CIDRs allowed to reach the control plane; empty: every address may reach the public endpoint."""
    private_endpoint: bool
    """The control plane answers on its private address only."""


@dataclass(frozen=True)
class AwsConfig:
    """AWS settings."""

    region: str
    vpc_cidr: str
    hyperpod_helm_chart: str = "sagemaker-hyperpod-cli/helm_chart/HyperPodHelmChart"
    """Local path of the HyperPod dependencies Helm chart (HyperPod stacks)."""
    public_access_cidrs: tuple[str, ...] = ()
    """CIDRs that may reach the EKS API's public endpoint; empty: EKS opens it to 0.0.0.0/0."""
    private_endpoint: bool = False
    """The EKS API has no public endpoint."""
    deep_health_checks: bool = False
    """HyperPod: run deep health checks on every new or replacement instance."""


@dataclass(frozen=True)
class AzureConfig:
    """Azure settings."""

    location: str
    subscription_id: str | None
    resource_group: str
    quota_vcpus: int | None
    gpu_driver: str
    role_propagation_minutes: int
    """Wait between the reservation-group grant and the GPU pool (0: the grant is made in a step of its own)."""
    upgrade_channel: str
    """AKS cluster auto-upgrade channel."""
    node_os_upgrade_channel: str
    """AKS node OS auto-upgrade channel."""
    maintenance_window: MaintenanceWindow
    authorized_ip_ranges: tuple[str, ...]
    """The only source ranges the API server admits; empty: any."""
    private_cluster: bool
    """The API server has only an address in the cluster's virtual network."""
    local_accounts: bool = False
    """Keep AKS local accounts (no Entra integration); false: Entra ID with Azure RBAC, local accounts disabled."""
    deployer_principal_type: str = "User"
    """What the identity running Pulumi is (User or ServicePrincipal), for its cluster-admin grant."""
    entra_admin_groups: tuple[str, ...] = ()
    """Entra group object ids whose members are cluster-admin (aadProfile.adminGroupObjectIDs)."""
    container_registry: str | None = None
    """Resource id of the ACR holding the image; the kubelet identity gets AcrPull on it."""
    interconnect_subgroup_id: str | None = None
    """The InterconnectBlock subgroup every server pod's RDMA NICs must come from (one InfiniBand fabric)."""


@dataclass(frozen=True)
class AlicloudConfig:
    """Alibaba Cloud settings."""

    region: str
    pai_resource_group: str | None
    pai_workspace_id: str | None
    pai_resource_machines: int | None
    """Machines the PAI-EAS quota or resource group holds for the service; None: exactly what it needs."""
    acr_instance_id: str | None
    """Container Registry Enterprise instance whose VPC ACL the stack's VPCs join (the image is on its VPC host)."""
    gpu_driver_version: str | None
    vpc_cidr: str
    upgrade_channel: str
    """ACK cluster auto-upgrade channel."""
    node_auto_upgrade: bool
    """ACK managed node pools: kubelet/runtime upgrades and CVE fixes in the maintenance window."""
    maintenance_window: MaintenanceWindow
    public_api_server: bool
    """ACK managed node pools: kubelet/runtime upgrades and CVE fixes in the maintenance window."""


@dataclass(frozen=True)
class KubernetesConfig:
    """An existing cluster (``cloud: kubernetes``): how to reach it, its GPU nodes, its store, what it runs."""

    kubeconfig: str | None
    """The kubeconfig's contents (the ``k3infra:kubeconfig`` secret), or None when a path is given."""
    kubeconfig_path: str | None
    context: str | None
    node_selector: dict[str, str]
    tolerations: tuple[dict[str, str], ...]
    gpu_resource: str
    topology_label: str | None
    """The NVLink-domain node label multi-node replicas are placed by; None where a replica fits one node's NVLink."""
    cpu_request: str | None
    memory_request: str | None
    driver_root: str
    storage: WeightSource
    s3_endpoint: str | None
    s3_region: str
    virtual_addressing: bool
    volume: str | None
    """pvc: the PersistentVolume holding the model."""
    host_path: str | None
    s3_access_key_id: str | None
    s3_secret_access_key: str | None
    lws: AddonState
    device_plugin: AddonState
    dra_driver: AddonState | None
    """None where no replica needs multi-node NVLink (nothing to install or check)."""
    prometheus_operator: AddonState
    prometheus_namespace: str
    pod_monitor_labels: dict[str, str]
    gateway_class: str | None


@dataclass(frozen=True)
class StackConfig:
    """A validated stack: what to deploy, where, and the sizing that follows from it."""

    stack: str
    project: str
    cloud: Cloud
    platform: Platform
    region: str
    zone: str
    accelerator: Accelerator
    model: Model
    engine: Engine
    image: str
    image_platforms: frozenset[CpuArch]
    engine_version: str
    """The engine release the image contains (``engineVersion``; the catalog image's by default)."""
    load_format: str
    memory_fraction: float
    speculative_decoding: bool
    """DSPARK speculative decoding with the model's draft model (SGLang, 000)."""
    workload: Workload | None
    """None on managed serving platforms (HyperPod, PAI-EAS)."""
    namespace: str
    nodes: int
    """GPU nodes per replica."""
    replicas: int
    capacity: CapacityConfig
    weights: WeightsConfig
    endpoint: EndpointConfig
    cluster: ClusterConfig
    observability: ObservabilityConfig
    verify_after_deploy: bool
    """Run the endpoint checklist as a Job after the server is ready (Kubernetes platforms)."""
    hf_token: str | None
    api_key: str | None
    registry_auth: str | None
    """USERNAME:PASSWORD for the image's registry (a secret; PAI-EAS dockerAuth)."""
    gcp: GcpConfig | None
    aws: AwsConfig | None
    azure: AzureConfig | None
    alicloud: AlicloudConfig | None
    sizing: Sizing
    warnings: tuple[str, ...]
    kubernetes: KubernetesConfig | None = None
    """Existing-cluster settings (``cloud: kubernetes``), else None."""
    autoscaling: AutoscalingConfig | None = None
    """The scaler settings (always set by ``parse_config``; ``enabled`` false by default)."""
    status: StatusConfig = StatusConfig()
    """Read-only access for ``k3infra status`` (``k3infra:status``)."""
    fabric_check: FabricCheckConfig = FabricCheckConfig()
    """The fabric check of a multi-node group (``k3infra:fabricCheck``); it runs where ``sizing.fabric`` is set."""
    topology: "TopologyConfig" = TopologyConfig()
    """Aggregated (the default), wide-EP or disaggregated (``k3infra:topology``); the roles' sizing is
    ``sizing.topology``."""
    charts: Mapping[str, str] = field(default_factory=lambda: {})
    """Pinned charts from the user's mirror (``k3infra:charts``): chart name to repository (serving.chart_source)."""

    @property
    def total_nodes(self) -> int:
        """GPU nodes in the pool: every replica's, or every group of every role of the topology."""
        return self.sizing.total_nodes
