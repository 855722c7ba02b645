"""Every ``k3infra:*`` key: its type, default and what it does. The single source of defaults.

Over 500 lines: a table of data, one ``Field`` per key with its documentation (``Pulumi.yaml`` and
docs/configuration.md are checked against it); splitting it would spread the one table of keys over files.
"""

from ..catalog import (
    AddonState,
    CapacityType,
    Cloud,
    CpuArch,
    EngineName,
    Exposure,
    Loader,
    Platform,
    WeightSource,
    Workload,
)
from ..catalog.autoscaling import ScalingSignal
from ..catalog.charts import MIRRORABLE_CHARTS
from ..catalog.fabric import DEFAULT_MIN_BUSBW_FRACTION
from ..catalog.topologies import All2AllBackend, KvTransport, Parallelism, TopologyMode
from .schema import Field, Obj

DNS_LABEL = r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?"
CIDR = r"\d{1,3}(\.\d{1,3}){3}/\d{1,2}"

END_MARGIN_HOURS = 24
"""Default of ``capacity.endMarginHours``."""

CAPACITY = Obj(
    doc="How the GPUs are obtained; which fields apply depends on `type`.",
    fields=(
        Field("type", CapacityType, "How capacity is obtained.", required=True),
        Field("reservation", str, "Google Cloud: name of the reservation to consume (type reservation)."),
        Field("block", str, "Google Cloud: reservation block (required with subBlock; A4X Max needs both, 002 §5.2)."),
        Field("subBlock", str, "Google Cloud: reservation sub-block; the pool is pinned to it (MNNVL spans one sub-block)."),
        Field("project", str, "Google Cloud: project that owns the reservation. Default: gcp:project (a shared reservation lives elsewhere)."),
        Field("reservationId", str, "AWS: id of an existing Capacity Block reservation (cr-...) the node group consumes.",
              pattern=r"cr-[0-9a-f]{17}", pattern_doc="cr- followed by 17 hexadecimal digits"),
        Field("purchase", bool, "AWS: buy a Capacity Block from an offering in the window below. Irreversible and "
              "non-refundable; default false (consume reservationId).", default=False),
        Field("durationHours", int, "AWS purchase: block length in hours (24-hour steps up to 14 days, then 7-day steps).",
              minimum=24, maximum=4368),
        Field("startAfter", str, "AWS purchase: earliest start of the offering window (ISO date, e.g. 2026-12-01).",
              pattern=r"\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2})?Z?)?", pattern_doc="an ISO date such as 2026-12-01"),
        Field("endBefore", str, "AWS purchase: latest end of the offering window (ISO date).",
              pattern=r"\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2})?Z?)?", pattern_doc="an ISO date such as 2026-12-15"),
        Field("endMarginHours", int, "AWS: warn in the plan when the Capacity Block or training plan ends within this "
              "many hours of the plan's date (EKS scales a block's nodes to zero 40 minutes before its end). Default: 24.",
              default=END_MARGIN_HOURS, minimum=1, maximum=4368),
        Field("trainingPlanArn", str, "AWS HyperPod: ARN of the Flexible Training Plan that holds the instances.",
              pattern=r"arn:aws[a-z-]*:sagemaker:[a-z0-9-]+:\d{12}:training-plan/[A-Za-z0-9][A-Za-z0-9-]{0,62}",
              pattern_doc="arn:aws:sagemaker:REGION:ACCOUNT(12 digits):training-plan/NAME"),
        Field("groupId", str, "Azure: resource id of an existing Capacity Reservation Group.",
              pattern=r"/subscriptions/[0-9a-fA-F-]{36}/resourceGroups/[^/]+/providers/Microsoft\.Compute/capacityReservationGroups/[^/]+",
              pattern_doc="/subscriptions/SUB/resourceGroups/RG/providers/Microsoft.Compute/capacityReservationGroups/NAME"),
        Field("create", bool, "Azure: create the Capacity Reservation Group and its reservation. They bill from creation; "
              "default false (reference groupId).", default=False),
        Field("privatePoolId", str, "Alibaba Cloud: id of the ECS private pool (capacity reservation or elasticity assurance).",
              pattern=r"(crp|eap)-[a-z0-9]+", pattern_doc="crp-... or eap-..."),
        Field("lingjunClusterId", str, "Alibaba Cloud ACK: Lingjun (EFLO) cluster the Lingjun node pool joins (type "
              "lingjun). PAI-EAS takes a Lingjun quota in alicloud.paiResourceGroup instead."),
        Field("lingjunNodeGroupId", str, "Alibaba Cloud ACK: Lingjun (EFLO) node group the node pool draws on (type "
              "lingjun)."),
    ),
)

#: Which capacity fields each type takes (required ones are checked in validate.py).
CAPACITY_FIELDS: dict[CapacityType, frozenset[str]] = {
    CapacityType.RESERVATION: frozenset({"reservation", "block", "subBlock", "project"}),
    CapacityType.CAPACITY_BLOCK: frozenset({"reservationId", "purchase", "durationHours", "startAfter", "endBefore",
                                            "endMarginHours"}),
    CapacityType.TRAINING_PLAN: frozenset({"trainingPlanArn", "endMarginHours"}),
    CapacityType.CAPACITY_RESERVATION_GROUP: frozenset({"groupId", "create"}),
    CapacityType.PRIVATE_POOL: frozenset({"privatePoolId"}),
    CapacityType.LINGJUN: frozenset({"lingjunClusterId", "lingjunNodeGroupId"}),
    CapacityType.ON_DEMAND: frozenset(),
    CapacityType.EXISTING: frozenset(),
}

WEIGHTS = Obj(
    doc="Where the weights live and how they reach the GPUs.",
    fields=(
        Field("bucket", str, "Bucket (Azure: blob container) that holds the weights. Required, except on an existing "
              "cluster whose weights are a PVC or a node path (kubernetes.storage.type pvc or hostPath)."),
        Field("account", str, "Azure: storage account that holds the container (3-24 lowercase letters and digits)."),
        Field("prefix", str, "Path inside the bucket; the model lands at PREFIX/<Hugging Face id>. Default: models.",
              default="models", pattern=r"[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*", pattern_doc="a relative path without leading or trailing /"),
        Field("sync", bool, "Run the one-time Job that copies the model from Hugging Face into the bucket. Default: true.",
              default=True),
        Field("revision", str, "The Hugging Face revision the sync copies (a commit SHA pins it). Required when sync is true."),
        Field("draftRevision", str, "The revision of the draft model the sync copies next to the model (a commit SHA pins "
              "it). Required when sync is true and speculativeDecoding is dspark."),
        Field("syncWorkers", int, "Workers of the sync Job (an Indexed Job: each copies its size-balanced share of the "
              "files, streamed from Hugging Face into the bucket). Default: one per node of the sync's own pool where "
              "the cloud has one (GKE, AKS, EKS: catalog.transfer.SYNC_POOLS, which grows to one node per worker), "
              "else one per CPU system node (cluster.systemNodes).", minimum=1, maximum=64),
        Field("loader", Loader, "How the weights reach GPU memory at start-up. Default: fuse (the bucket mounted through "
              "the cloud's CSI driver, which keeps the canonical load format); bucket-copy on HyperPod, whose operator "
              "copies the model from S3; on an existing cluster streamer (the RunAI streamer reads the S3-compatible "
              "bucket) or volume (the PVC or node path, mounted read-only)."),
        Field("bandwidthGbps", float, "Per-node load throughput for the start-up estimate. Default: the loader's stated assumption.",
              minimum=0.01, maximum=3200),
        Field("bucketIngressGbps", float, "What the bucket takes in from the sync, where the provider granted the "
              "account more than the catalog's figure or a self-hosted store was measured to take more; the sync's "
              "estimate and its Job's timeout follow from it. Default: the catalog's figure "
              "(catalog.transfer.BUCKET_INGRESS), pessimistic end.", minimum=0.1, maximum=10000),
        Field("bucketEgressGbps", float, "What the bucket serves to all the loaders together (and to the nodes' copy, "
              "nodeWeights), where the provider granted the account more than the catalog's figure or a self-hosted "
              "store was measured to serve more; the load estimate, the node fill and the start-up probe's budget "
              "follow from it. Default: the catalog's figure "
              "(catalog.loaders.STORAGE_EGRESS), pessimistic end.", minimum=0.1, maximum=10000),
        Field("retainOnDestroy", bool, "Keep the bucket and its 1.56 TB on `pulumi destroy`. Default: true; set false to "
              "let destroy delete it.", default=True),
    ),
)

ENDPOINT = Obj(
    doc="How the inference endpoint is exposed.",
    fields=(
        Field("exposure", Exposure, "internal (cluster-internal or an internal load balancer) or public. Default: internal.",
              default=Exposure.INTERNAL),
        Field("allowedCidrs", list, "Source ranges allowed to reach a public endpoint. Required when exposure is public.",
              item=str, pattern=CIDR, pattern_doc="an IPv4 CIDR such as 81.2.69.0/24"),
        Field("gateway", bool, "Put an InferenceGateway (Gateway API + InferencePool, prefix-aware routing, 002 §5.5) in "
              "front of the servers. Default: false.", default=False),
    ),
)

OBSERVABILITY = Obj(
    doc="Metrics, dashboard and alerts through the cloud's managed Prometheus (docs/serving.md).",
    fields=(
        Field("enabled", bool, "Scrape the engine and GPU metrics into the cloud's managed Prometheus, provision the "
              "dashboard where the cloud has a managed Grafana and create the alert rules. Default: true; false "
              "creates none of them.", default=True),
        Field("workspace", str, "An existing managed Prometheus workspace to write to instead of creating one: AWS "
              "an Amazon Managed Service for Prometheus workspace ARN, Azure an Azure Monitor workspace resource id. "
              "Google Cloud (Managed Service for Prometheus writes to the project) and Alibaba Cloud (ARMS keeps one "
              "instance per cluster) have none to name. Default: the stack creates one."),
        Field("stallMinutes", int, "Window of the no-tokens alert: requests present this long and no token "
              "generated. Default: 10.", default=10, minimum=2, maximum=120),
        Field("capacityMarginHours", int, "Warn this many hours before the capacity window (an EC2 Capacity Block) "
              "ends. Default: 24.", default=24, minimum=1, maximum=336),
    ),
)

STATUS_GROUP = r"(?!system:)[^\s]{1,255}"
"""A Kubernetes RBAC group: no whitespace, and none of the API server's own ``system:`` groups (binding
``system:authenticated`` would hand the role to every identity the cluster knows)."""

STATUS = Obj(
    doc="Read-only access for `k3infra status` (docs/deploying.md#watching-the-cold-start-k3infra-status).",
    fields=(
        Field("group", str, "A Kubernetes group to bind the read-only roles `k3infra status` needs to (a ClusterRole "
              "that lists nodes, a Role in the namespace that lists pods and gets the stack's Jobs and Services): EKS "
              "an access entry's kubernetesGroups, GKE a Google Group (gke-security-groups), AKS an Entra group's "
              "object id. The stack output statusAccess names them. Default: unset, none created (`k3infra status "
              "--print-role` prints them to apply by hand).", pattern=STATUS_GROUP,
              pattern_doc="a group name without whitespace, not a system: group"),
    ),
)

FABRIC_CHECK = Obj(
    doc="The collective test on a multi-node group's own pods before its weights load (docs/serving.md#the-fabric-"
        "check).",
    fields=(
        Field("enabled", bool, "Before a server whose replica spans nodes is created, run an all-reduce (and an "
              "all-to-all with expert parallelism) across exactly its ranks, with its pods' image, nodes, claims and "
              "NCCL settings, and stop `pulumi up` when NCCL falls back to a slower transport than the plan expects "
              "or the bus bandwidth is under minBusbwFraction of the expected figure. Kubernetes platforms. Default: "
              "true; false skips it, and the plan warns.", default=True),
        Field("minBusbwFraction", float, "The share of the expected bus bandwidth (the catalog's NVLink or network "
              "line rate) each path must reach. Default: 0.5 (catalog.fabric DEFAULT_MIN_BUSBW_FRACTION, an ESTIMATE: a "
              "socket fallback or one NIC of eight lands near 1/8).", default=DEFAULT_MIN_BUSBW_FRACTION, minimum=0.05,
              maximum=1.0),
    ),
)

ROLE_SCALING = Obj(
    doc="One role's scaler in a disaggregated topology (docs/topologies.md#per-role-autoscaling).",
    fields=(
        Field("minGroups", int, "Fewest groups of the role. Default: 1 (a role cannot go to zero: the other role's "
              "requests need it).", minimum=1, maximum=64),
        Field("maxGroups", int, "Most groups of the role; the shared pool must hold them beside the other role's "
              "maxGroups (the pool is every role's topology.<role>.groups). Default: topology.<role>.groups.",
              minimum=1, maximum=64),
        Field("signal", ScalingSignal, "What the role's scaler follows, on the role's own pods: prefill queue "
              "(requests waiting), promptTokens (prompt tokens prefilled per second per group) or rps; decode "
              "kvCache (share of the KV cache in use), running (requests decoding per group) or queue. Default: "
              "queue for prefill, kvCache for decode."),
        Field("target", float, "The value per group the scaler holds the signal at. Default: queue 4, "
              "promptTokens 20000, rps 1, kvCache 0.8, running 64 (estimates: measure your traffic).",
              minimum=0.01, maximum=10000000),
    ),
)

AUTOSCALING_ROLES = Obj(
    doc="Each role's scaler of a disaggregated topology (topology.mode disaggregated).",
    fields=(
        Field("prefill", ROLE_SCALING, "The prefill role's scaler. Default: queue 4 per group, 1 to "
              "topology.prefill.groups groups."),
        Field("decode", ROLE_SCALING, "The decode role's scaler. Default: kvCache 0.8, 1 to topology.decode.groups "
              "groups."),
    ),
)

AUTOSCALING = Obj(
    doc="Replicas that follow the traffic, by the platform's own scaler (docs/configuration.md#autoscaling).",
    fields=(
        Field("enabled", bool, "Scale the replicas between minReplicas and maxReplicas with the load. Default: false "
              "(k3infra:replicas replicas, always).", default=False),
        Field("minReplicas", int, "Fewest replicas. Default: 1; 0 with scaleToZero.", minimum=0, maximum=1000),
        Field("maxReplicas", int, "Most replicas; the reserved capacity must hold them (k3infra:replicas replicas' "
              "nodes; PAI-EAS: alicloud.paiResourceMachines). Default: k3infra:replicas.", minimum=1, maximum=1000),
        Field("signal", ScalingSignal, "What the scaler follows: queue (requests waiting in the engine, per "
              "replica), kvCache (share of the KV cache in use), rps (requests per second per replica) or gpu (GPU "
              "utilization, only where the platform reads nothing better). Default: queue on Kubernetes and "
              "HyperPod, rps on PAI-EAS (its QPS metric)."),
        Field("target", float, "The value per replica the scaler holds the signal at. Default: queue 4, kvCache "
              "0.8, rps 1, gpu 80 (estimates: measure your traffic).", minimum=0.01, maximum=100000),
        Field("scaleDownDelaySeconds", int, "How long the load must stay low before a replica is removed. "
              "Default: twice a new replica's start (scale-out to serving, `k3infra plan` shows it), so the stack "
              "does not thrash.", minimum=0, maximum=86400),
        Field("scaleToZero", bool, "Let the replicas go to zero when idle (PAI-EAS only; a cold start reloads the "
              "1.56 TB weights, 002 §6.2: measure your traffic first). Default: false.", default=False),
        Field("roles", AUTOSCALING_ROLES, "A disaggregated topology's scalers, one per role on its own workload and "
              "signal (minReplicas, maxReplicas, signal and target are then refused). Default: each role's "
              "defaults."),
    ),
)

MAX_ROLE_NODES = 72
"""The most nodes per group of a role (one NVL72 rack's trays at most)."""

ROLE = Obj(
    doc="One role of a disaggregated topology: its groups and how each splits the model (docs/topologies.md).",
    fields=(
        Field("groups", int, "Groups of the role (each one LeaderWorkerSet group). Default: 1.", default=1, minimum=1,
              maximum=64),
        Field("nodes", int, "Nodes per group. Required.", minimum=1, maximum=MAX_ROLE_NODES),
        Field("parallelism", Parallelism, "tep (tensor parallel over the group, experts inside it) or dep "
              "(data-parallel attention, experts over every GPU: 16 GPUs or more). Default: tep for prefill, dep for "
              "decode (the vLLM recipe's pd_cluster)."),
        Field("all2allBackend", All2AllBackend, "vLLM --all2all-backend of a dep group. Default: "
              "flashinfer_nvlink_one_sided inside one NVLink domain, deepep_v2 over all-to-all RDMA, else "
              "allgather_reducescatter (the recipe's notes)."),
    ),
)

TOPOLOGY = Obj(
    doc="How the GPUs serve: aggregated groups, wide expert parallelism, or prefill and decode roles "
        "(docs/topologies.md).",
    fields=(
        Field("mode", TopologyMode, "aggregated (every group prefills and decodes), wide-ep (every group is DEP "
              "across its nodes) or disaggregated (prefill and decode roles). Default: aggregated.",
              default=TopologyMode.AGGREGATED),
        Field("prefill", ROLE, "The prefill role (mode disaggregated)."),
        Field("decode", ROLE, "The decode role (mode disaggregated)."),
        Field("all2allBackend", All2AllBackend, "vLLM --all2all-backend of a wide-ep group. Default: as a dep role's."),
        Field("kvTransport", KvTransport, "What NIXL moves the KV cache over: ucx (RDMA verbs: InfiniBand, RoCE), "
              "libfabric (EFA) or tcp (the pod network). Default: the fabric's (catalog/topologies.py)."),
        Field("inputTokens", int, "The input length the plan states the KV transfer and the concurrency at. Default: "
              "8192.", default=8192, minimum=1, maximum=1048576),
        Field("outputTokens", int, "With requestsPerSecond (mode disaggregated): the output length of the stated "
              "workload whose advisory prefill:decode ratio the plan gives (topology.workload). Default: none.",
              minimum=1, maximum=1048576),
        Field("requestsPerSecond", float, "With outputTokens (mode disaggregated): the request rate of the stated "
              "workload, at inputTokens in. Default: none.", minimum=0.001, maximum=1000000),
    ),
)

WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")

MAINTENANCE_WINDOW = Obj(
    doc="When the cloud may upgrade or patch the cluster (AKS planned maintenance, ACK maintenance window).",
    fields=(
        Field("day", str, "Day of the week the window opens. Default: Sunday.", default="Sunday",
              pattern="|".join(WEEKDAYS), pattern_doc=", ".join(WEEKDAYS)),
        Field("startTime", str, "Time the window opens, HH:MM in UTC. Default: 02:00.", default="02:00",
              pattern=r"([01]\d|2[0-3]):[0-5]\d", pattern_doc="HH:MM in UTC, such as 02:00"),
        Field("durationHours", int, "Length of the window in hours (AKS asks for at least 4 for auto-upgrades). "
              "Default: 4.", default=4, minimum=4, maximum=24),
    ),
)

CLUSTER = Obj(
    doc="The Kubernetes cluster k3infra creates.",
    fields=(
        Field("name", str, "Cluster name. Default: k3-<stack>.", pattern=DNS_LABEL, pattern_doc="a DNS label (lowercase, digits, -)"),
        Field("kubernetesVersion", str, "Kubernetes version. Default: the cloud's default for the release channel "
              "(AWS HyperPod stacks: 1.33, a version HyperPod supports; Azure Grace Blackwell VM sizes: 1.35, the "
              "first AKS version whose Ubuntu is 24.04, the only OS of their node image).",
              pattern=r"\d+\.\d+(\.\d+)?(-[a-z0-9.-]+)?", pattern_doc="such as 1.33"),
        Field("deletionProtection", bool, "Protect the cluster from deletion. Default: true.", default=True),
        Field("systemNodeType", str, "Machine type of the small CPU system pool (controllers; the sync Job where the "
              "cloud has no sync pool of its own, ACK). "
              "Default: the cloud's choice in the cloud package (AWS: m7i.2xlarge)."),
        Field("systemNodes", int, "Nodes in the system pool. Default: 2.", default=2, minimum=1, maximum=20),
    ),
)

GCP = Obj(
    doc="Google Cloud settings.",
    fields=(
        Field("releaseChannel", str, "GKE release channel. Default: REGULAR (cluster-toolkit examples/gke-a4x-max-bm "
              "and gke-a4). Preview reads the channel's versions in the region and fails when none reaches the "
              "machine type's minimum GKE version.", default="REGULAR",
              pattern=r"RAPID|REGULAR|STABLE|EXTENDED", pattern_doc="RAPID, REGULAR, STABLE or EXTENDED"),
        Field("maintenanceWindowStart", str, "Start of GKE's daily four-hour maintenance window, HH:MM in UTC. "
              "Default: 09:00 (cluster-toolkit gke-cluster).", default="09:00",
              pattern=r"([01]\d|2[0-3]):[0-5]\d", pattern_doc="HH:MM in UTC, such as 09:00"),
        Field("upgradeExclusion", str, "Maintenance exclusion scope that keeps GKE from upgrading the reserved GPU "
              "pool on its own: NO_MINOR_OR_NODE_UPGRADES (no node upgrades, no minor control-plane upgrades; "
              "control-plane patches still land in the window), NO_MINOR_UPGRADES (nodes are upgraded to patches, "
              "which recreates them and reloads the weights), or none. It lasts until the minor version's end of "
              "support. Default: NO_MINOR_OR_NODE_UPGRADES (cluster-toolkit examples/gke-a4x-max-bm, gke-a4).",
              default="NO_MINOR_OR_NODE_UPGRADES", pattern=r"NO_MINOR_OR_NODE_UPGRADES|NO_MINOR_UPGRADES|none",
              pattern_doc="NO_MINOR_OR_NODE_UPGRADES, NO_MINOR_UPGRADES or none"),
        Field("upgradeExclusionStart", str, "When the exclusion starts (RFC 3339, UTC). Default: "
              "2026-01-01T00:00:00Z: a fixed past time, so two plans are identical and the exclusion holds from "
              "the cluster's creation.", default="2026-01-01T00:00:00Z",
              pattern=r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z", pattern_doc="such as 2026-01-01T00:00:00Z"),
        Field("authorizedNetworks", list, "CIDRs allowed to reach the control plane (its public endpoint, or the "
              "private one with privateEndpoint). Default: none; this or privateEndpoint is required before "
              "`pulumi up` (the offline plan warns, a real run stops before creating anything).", item=str, pattern=CIDR,
              pattern_doc="an IPv4 CIDR such as 81.2.69.0/24"),
        Field("privateEndpoint", bool, "Serve the control plane on its private address only: `pulumi up` must then "
              "run from inside the VPC (or a network peered or connected to it). Default: false.", default=False),
        Field("gpuDriverVersion", str, "GPU driver GKE installs. Default: LATEST (002 §5.2 gpu-driver-version=latest).",
              default="LATEST", pattern=r"DEFAULT|LATEST|INSTALLATION_DISABLED", pattern_doc="DEFAULT, LATEST or INSTALLATION_DISABLED"),
        Field("checkReservation", bool, "Read the reservation (and its block or sub-block) while the program runs, so "
              "`pulumi preview` fails when it is missing, of another machine type, not ready or too small. Default: "
              "true; set false when the deploying identity cannot read a reservation shared from another project.",
              default=True),
    ),
)

AWS = Obj(
    doc="AWS settings.",
    fields=(
        Field("vpcCidr", str, "CIDR of the VPC k3infra creates, /16 to /20. Default: 10.0.0.0/16.", default="10.0.0.0/16",
              pattern=CIDR, pattern_doc="an IPv4 CIDR such as 10.0.0.0/16"),
        Field("hyperpodHelmChart", str, "HyperPod: local path of the HyperPod dependencies Helm chart (a checkout of "
              "aws/sagemaker-hyperpod-cli, helm_chart/HyperPodHelmChart), installed before the HyperPod cluster. "
              "Default: sagemaker-hyperpod-cli/helm_chart/HyperPodHelmChart, relative to where Pulumi runs.",
              default="sagemaker-hyperpod-cli/helm_chart/HyperPodHelmChart"),
        Field("publicAccessCidrs", list, "Public CIDRs that may reach the EKS API endpoint (at most 40). Default: none "
              "(EKS would take it as 0.0.0.0/0); this or privateEndpoint is required before `pulumi up` (the "
              "offline plan warns, a real run stops before creating anything).", item=str, pattern=CIDR, pattern_doc="an IPv4 CIDR such as 81.2.69.0/24"),
        Field("privateEndpoint", bool, "Turn the EKS API's public endpoint off: the API (and so `pulumi up`) is "
              "reachable only from the VPC and connected networks. Default: false.", default=False),
        Field("deepHealthChecks", bool, "HyperPod: run deep health checks (InstanceStress, and InstanceConnectivity "
              "from two instances) on every new or replacement instance; each spends hours Unschedulable, and the "
              "group holds no spare instance, so the GPU pool's time, the endpoint's deadline and the cold start "
              "include them, and the update that creates the cluster does not create the endpoint. Default: false "
              "(SageMaker's resiliency guide, for groups without spares).", default=False),
    ),
)

AZURE = Obj(
    doc="Azure settings.",
    fields=(
        Field("resourceGroup", str, "Resource group k3infra creates for the cluster. Default: rg-k3-<stack>."),
        Field("quotaVcpus", int, "Approved vCPU quota of the SKU's family in the region (002 §4.2). When unset, a lookup "
              "reads the regional usage where credentials exist.", minimum=0),
        Field("gpuDriver", str, "AKS GPU driver installation: Install (AKS installs the driver, k3infra the NVIDIA "
              "device plugin) or None (bring the NVIDIA GPU Operator). Default: Install.", default="Install",
              pattern=r"Install|None", pattern_doc="Install or None"),
        Field("rolePropagationMinutes", int, "Minutes the GPU pool waits after the cluster identity is granted "
              "Contributor on the reservation group's resource group (AKS: \"up to 60 minutes\" to propagate); "
              "only the first `pulumi up` waits. 0: no wait, the grant is made first in a step of its own "
              "(`pulumi up --target` on it). Default: 60.", default=60, minimum=0, maximum=1440),
        Field("upgradeChannel", str, "AKS cluster auto-upgrade channel (Kubernetes version), run in "
              "the maintenance window. Default: none (upgrades only when you change cluster.kubernetesVersion).",
              default="none", pattern=r"none|patch|stable|rapid", pattern_doc="none, patch, stable or rapid"),
        Field("maintenanceWindow", MAINTENANCE_WINDOW, "The weekly window of AKS's three planned-maintenance "
              "configurations: its weekly releases and the two channels' upgrades run only then. Default: Sundays "
              "02:00 UTC for 4 hours."),
        Field("authorizedIpRanges", list, "The only source ranges the AKS API server admits (where Pulumi and your "
              "operators connect from). Default: none; this or privateCluster is required before `pulumi up` (the "
              "offline plan warns, a real run stops before creating anything).", item=str, pattern=CIDR,
              pattern_doc="an IPv4 CIDR such as 81.2.69.0/24"),
        Field("privateCluster", bool, "A private AKS cluster: the API server has only an address in the cluster's "
              "virtual network, so `pulumi up` must run from a network peered or connected to it. Default: false "
              "(AKS creates that network itself).", default=False),
        Field("localAccounts", bool, "Keep AKS local accounts: no Entra integration, and a cluster-admin client "
              "certificate in the kubeconfig that works until the cluster's certificates are rotated. Default: false: "
              "AKS-managed Microsoft Entra ID with Azure RBAC authenticates and authorizes every caller, local "
              "accounts are disabled, the identity running Pulumi holds Azure Kubernetes Service RBAC Cluster Admin "
              "on the cluster, and the kubeconfig logs in through kubelogin with the Azure CLI (kubelogin on the PATH "
              "and `az login` for `pulumi up` and kubectl). An authorizedIpRanges of 0.0.0.0/0 is refused with local "
              "accounts.", default=False),
        Field("deployerPrincipalType", str, "What the identity running `pulumi up` is, for its Azure Kubernetes "
              "Service RBAC Cluster Admin grant on the cluster: User (a person signed in with `az login`) or "
              "ServicePrincipal (CI, a managed identity; ARM refuses a grant whose type does not match the principal). "
              "Default: User. Not with localAccounts: true.", default="User", pattern=r"User|ServicePrincipal",
              pattern_doc="User or ServicePrincipal"),
        Field("entraAdminGroups", list, "Microsoft Entra group object ids whose members are cluster-admin "
              "(aadProfile.adminGroupObjectIDs). Default: none (grant people Azure roles on the cluster, such as Azure "
              "Kubernetes Service RBAC Reader). Not with localAccounts: true.", item=str,
              pattern=r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
              pattern_doc="a group's object id, a GUID such as 0f0ba375-aaf1-4ac8-a579-a3b180d47de5"),
        Field("nodeOsUpgradeChannel", str, "AKS node OS auto-upgrade channel, run in the maintenance window, for "
              "every pool (the API has no per-pool channel). Default: SecurityPatch (tested security updates, in "
              "place where AKS can; a reimage of a GPU node stops the server, and the plan says so). None patches "
              "nothing; NodeImage, AKS's own default, reimages every node weekly.", default="SecurityPatch", pattern=r"None|Unmanaged|SecurityPatch|NodeImage",
              pattern_doc="None, Unmanaged, SecurityPatch or NodeImage"),
        Field("containerRegistry", str, "Resource id of the Azure Container Registry that holds k3infra:image: the "
              "cluster's kubelet identity gets AcrPull on it (what `az aks update --attach-acr` does). Default: none "
              "(the image is public or pulled with credentials of your own).",
              pattern=r"/subscriptions/[0-9a-fA-F-]{36}/resourceGroups/[^/]+/providers/Microsoft\.ContainerRegistry/registries/[A-Za-z0-9]{5,50}",
              pattern_doc="/subscriptions/SUB/resourceGroups/RG/providers/Microsoft.ContainerRegistry/registries/NAME"),
        Field("interconnectSubgroupId", str, "The subgroup of the interconnect group (one InterconnectBlock: VMs on one "
              "InfiniBand fabric) the server pods' RDMA NICs must come from, as DRANET publishes it "
              "(azure.dra.net/interconnectSubgroupId in `kubectl get resourceslices`): the RDMA claim gets dranet's "
              "ib-same-fabric CEL selector. Default: none (any NIC; the placement check still requires one NVLink "
              "domain per replica).",
              pattern=r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
              pattern_doc="a GUID such as 0f0ba375-aaf1-4ac8-a579-a3b180d47de5"),
    ),
)

ALICLOUD = Obj(
    doc="Alibaba Cloud settings.",
    fields=(
        Field("paiResourceGroup", str, "PAI-EAS: what the service runs on. Required for platform pai-eas. A Lingjun "
              "resource quota (quota...) with capacity type lingjun: distributed deployment over several machines "
              "requires it (002 §6.2). Or an EAS dedicated resource group (eas-r-...), only for a replica that fits "
              "one machine.",
              pattern=r"eas-r-[a-z0-9]+|quota[a-z0-9]+", pattern_doc="eas-r-... (EAS resource group) or quota... (Lingjun quota)"),
        Field("paiWorkspaceId", str, "PAI workspace the service belongs to. Required with a Lingjun quota (the quota "
              "is granted to a workspace); otherwise the region's default workspace.", pattern=r"[0-9]+",
              pattern_doc="the numeric workspace id"),
        Field("paiResourceMachines", int, "PAI-EAS: machines the quota or resource group holds for this service. "
              "Default: exactly what the service needs (nodes x replicas), so an update stops a unit before it starts "
              "the new one (rolling_strategy max_surge 0, max_unavailable 1) and, with one replica, the endpoint is "
              "down for a whole start (the plan says so). With room for one more unit the update surges instead, "
              "without downtime.", minimum=1),
        Field("acrInstanceId", str, "Container Registry Enterprise Edition instance the image's "
              "INSTANCE-registry-vpc host belongs to: the stack adds its VPC (ACK's, or the PAI-EAS service's) to the "
              "instance's VPC access control list (cr.VpcEndpointLinkedVpc), without which the VPC name does not "
              "resolve. Required with an Enterprise VPC image. Default: none.", pattern=r"cri-[a-z0-9]+",
              pattern_doc="an instance id such as cri-k3registry0001"),
        Field("gpuDriverVersion", str, "ACK: NVIDIA driver version pinned through the node-pool label "
              "ack.aliyun.com/nvidia-driver-version (002 §6.3): one ACK lists for the label (k3infra.catalog.ack, "
              "e.g. 570.169; ACK installs its default instead of an unlisted one). Not with capacity type lingjun "
              "(the OS image carries the driver). Default: ACK's default driver (no label).",
              pattern=r"\d+\.\d+(\.\d+)?", pattern_doc="a driver version such as 570.169"),
        Field("vpcCidr", str, "CIDR of the VPC k3infra creates. Default: 10.0.0.0/8.", default="10.0.0.0/8",
              pattern=CIDR, pattern_doc="an IPv4 CIDR such as 10.0.0.0/8"),
        Field("upgradeChannel", str, "ACK cluster auto-upgrade channel (Kubernetes version), run in "
              "the maintenance window. Default: none (upgrades only when you change cluster.kubernetesVersion).",
              default="none", pattern=r"none|patch|stable|rapid", pattern_doc="none, patch, stable or rapid"),
        Field("maintenanceWindow", MAINTENANCE_WINDOW, "ACK: the weekly window of the cluster's automatic "
              "operations (auto-upgrade, managed node pools). Default: Sundays 02:00 UTC for 4 hours."),
        Field("publicApiServer", bool, "ACK: give the API server an internet-facing load balancer (at creation only). "
              "Default: false: it has only a VPC address, and `pulumi up` runs inside the VPC or a network joined to "
              "it (the plan says how).", default=False),
        Field("nodeAutoUpgrade", bool, "ACK managed node pools: upgrade kubelet and the runtime and fix CVEs (restarting "
              "nodes) in the maintenance window. Default: false (nodes change only when you upgrade them).",
              default=False),
    ),
)


ADDON_STATES = "install or present"

TOLERATION = Obj(
    doc="A toleration of the GPU nodes' taints.",
    fields=(
        Field("key", str, "Taint key, such as nvidia.com/gpu.", required=True),
        Field("operator", str, "Exists or Equal. Default: Exists.", default="Exists", pattern="Exists|Equal",
              pattern_doc="Exists or Equal"),
        Field("value", str, "Taint value, with operator Equal."),
        Field("effect", str, "NoSchedule, PreferNoSchedule or NoExecute. Default: NoSchedule.", default="NoSchedule",
              pattern="NoSchedule|PreferNoSchedule|NoExecute", pattern_doc="NoSchedule, PreferNoSchedule or NoExecute"),
    ),
)

GPU_RESOURCE = "nvidia.com/gpu"
GPU_PRESENT_SELECTOR = {"nvidia.com/gpu.present": "true"}
"""The label NVIDIA's GPU feature discovery (GPU Operator, device plugin chart) sets on every GPU node."""
GPU_TAINT_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
CLIQUE_LABEL = "nvidia.com/gpu.clique"
"""The node label NVIDIA's GPU feature discovery publishes with a node's NVLink partition, ``<ClusterUUID>.<CliqueID>``
(NVIDIA/k8s-device-plugin v0.17.4 ``internal/lm/nvml.go`` ``newGPUModeLabeler``/``cliqueLabeler``, docs
gpu-feature-discovery ``nvidia.com/gpu.clique``): nodes of one NVL72 rack's NVLink domain share its value."""

GPU_NODES = Obj(
    doc="The cluster's GPU nodes the server runs on (cloud kubernetes).",
    fields=(
        Field("nodeSelector", dict, "Labels that select the GPU nodes. Default: nvidia.com/gpu.present: \"true\" (set by "
              "NVIDIA's GPU feature discovery, which the GPU Operator and the device plugin chart run)."),
        Field("tolerations", list, "Tolerations of the GPU nodes' taints. Default: nvidia.com/gpu Exists NoSchedule "
              "(the GPU Operator's and most clusters' GPU taint); an empty list tolerates nothing.", item=TOLERATION),
        Field("gpuResource", str, "Extended resource a node advertises its GPUs as. Default: nvidia.com/gpu.",
              default=GPU_RESOURCE, pattern=r"[a-z0-9.-]+/[a-z0-9._-]+", pattern_doc="such as nvidia.com/gpu"),
        Field("topologyLabel", str, "Node label whose value names one NVLink domain: every pod of a replica that spans "
              "nodes lands on nodes sharing one value (the placement check fails the deploy otherwise). Default: "
              "nvidia.com/gpu.clique (GPU feature discovery) where the accelerator's NVLink spans nodes; none "
              "otherwise."),
        Field("gpusPerNode", int, "GPUs one node advertises, where your nodes differ from the accelerator's shape "
              "(such as a 4-GPU H200 NVL server with accelerator hgx-h200). Default: the shape's.", minimum=1,
              maximum=16),
        Field("gpuMemoryGb", float, "GPU memory of one GPU in decimal GB, as the driver reports it (nvidia-smi). "
              "Default: the shape's.", minimum=16, maximum=1024),
        Field("nvlinkDomainGpus", int, "GPUs in one NVLink domain (72 for an NVL72 rack; the node's GPUs where NVLink "
              "stays inside the node). Default: the shape's.", minimum=1, maximum=576),
        Field("vcpus", int, "CPUs of one node (kubectl get node -o jsonpath='{.status.capacity.cpu}'). Default: the "
              "shape's.", minimum=1, maximum=4096),
        Field("hostMemoryGib", int, "Memory of one node in GiB. Default: the shape's.", minimum=1, maximum=65536),
        Field("cpuRequest", str, "CPU each server pod requests of its node. Default: 85% of the node's CPUs (vcpus, "
              "else the shape's in the catalog).", pattern=r"[0-9]+(\.[0-9]+)?m?",
              pattern_doc="a Kubernetes CPU quantity such as 100"),
        Field("memoryRequest", str, "Memory each server pod requests of its node. Default: 85% of the node's memory "
              "(hostMemoryGib, else the shape's).", pattern=r"[0-9]+(Ki|Mi|Gi|Ti)", pattern_doc="such as 1500Gi"),
        Field("driverRoot", str, "Where the NVIDIA driver is on the node, for an installed DRA driver: / for a driver "
              "installed on the host, /run/nvidia/driver for one the GPU Operator manages. Default: /.",
              default="/", pattern=r"/[^\s]*", pattern_doc="an absolute path"),
    ),
)

STORAGE = Obj(
    doc="Where an existing cluster's weights live (cloud kubernetes).",
    fields=(
        Field("type", WeightSource, "s3 (an S3-compatible bucket: MinIO, Ceph RGW), pvc (a PersistentVolume that "
              "holds the model, claimed by the server) or hostPath (a directory on every GPU node). Default: s3.", default=WeightSource.S3),
        Field("endpoint", str, "s3: the store's URL, as the pods reach it (such as "
              "http://minio.minio.svc.cluster.local:9000). Required with type s3.",
              pattern=r"https?://[^\s/]+(/[^\s]*)?", pattern_doc="an http:// or https:// URL"),
        Field("region", str, "s3: the region the store signs requests for. Default: us-east-1 (MinIO's and Ceph "
              "RGW's default).", default="us-east-1", pattern=r"[a-z0-9-]+", pattern_doc="such as us-east-1"),
        Field("virtualAddressing", bool, "s3: address the bucket as a host name (BUCKET.ENDPOINT) instead of a path "
              "(ENDPOINT/BUCKET). Default: false, path-style, which MinIO and Ceph RGW serve without wildcard DNS.",
              default=False),
        Field("volume", str, "pvc: the PersistentVolume that holds PREFIX/<Hugging Face id> (ReadOnlyMany or "
              "ReadWriteMany, storageClassName \"\", reclaim policy Retain): the server claims it by name from the "
              "serving namespace and mounts it read-only. Required with type pvc.", pattern=r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?",
              pattern_doc="a PersistentVolume name"),
        Field("path", str, "hostPath: the directory on every GPU node that holds PREFIX/<Hugging Face id>, mounted "
              "read-only. Required with type hostPath.", pattern=r"/[^\s]*", pattern_doc="an absolute path"),
    ),
)

KUBERNETES = Obj(
    doc="An existing cluster (cloud kubernetes): how to reach it, its GPU nodes, and what it already runs.",
    fields=(
        Field("kubeconfigPath", str, "Path of a kubeconfig file, read where `pulumi up` runs. Default: none: the "
              "kubeconfig is the k3infra:kubeconfig secret; one of the two is required."),
        Field("context", str, "The kubeconfig context to use. Default: its current-context."),
        Field("gpuNodes", GPU_NODES, "The GPU nodes: selector, tolerations, GPU resource, topology label."),
        Field("storage", STORAGE, "Where the weights live. Default: an S3-compatible bucket (weights.bucket)."),
        Field("nodeLocalPath", str, "A host directory on the GPU nodes' local NVMe where k3infra keeps the weights and "
              "the engine's caches across pods (k3infra:nodeWeights, on by default once this is set). Default: none: "
              "the nodes keep nothing.", pattern=r"/[^\s]*", pattern_doc="an absolute path"),
        Field("lws", AddonState, "The LeaderWorkerSet controller (multi-node replicas): install (its pinned chart) or "
              "present (preview checks that leaderworkersets.leaderworkerset.x-k8s.io/v1 is served). Default: "
              "install.", default=AddonState.INSTALL),
        Field("devicePlugin", AddonState, "What advertises the GPUs (the NVIDIA device plugin or the GPU Operator): "
              "present (preview checks that enough nodes matching gpuNodes.nodeSelector advertise gpuNodes.gpuResource) "
              "or install (NVIDIA's device plugin chart, with GPU feature discovery; the nodes need the driver). "
              "Default: present.", default=AddonState.PRESENT),
        Field("draDriver", AddonState, "The NVIDIA DRA driver with ComputeDomains, which multi-node NVLink needs "
              "(a replica whose tensor parallelism spans nodes): install (its pinned chart) or present (preview "
              "checks that computedomains.resource.nvidia.com/v1beta1 is served). Default: install where a replica "
              "needs it; nothing otherwise."),
        Field("prometheusOperator", AddonState, "prometheus-operator: present (preview checks that "
              "podmonitors.monitoring.coreos.com/v1 is served, and PodMonitors scrape the server and the GPUs) or "
              "absent (no scrape objects; the plan says so). Default: absent.", default=AddonState.ABSENT),
        Field("prometheusNamespace", str, "Namespace prometheus-operator's Prometheus runs in: the server's "
              "NetworkPolicy admits its scrapes from there. Default: monitoring.", default="monitoring",
              pattern=DNS_LABEL, pattern_doc="a DNS label"),
        Field("podMonitorLabels", dict, "Labels the Prometheus's podMonitorSelector selects PodMonitors by (e.g. "
              "kube-prometheus-stack's release: <its release name>). Default: none (a Prometheus that selects every "
              "PodMonitor)."),
        Field("gatewayClass", str, "GatewayClass of the InferenceGateway (endpoint.gateway), such as istio or "
              "kgateway; Gateway API and the Inference Extension's CRDs must be present (preview checks them). "
              "Unset with endpoint.gateway: the stack installs agentgateway and those CRDs.", pattern=DNS_LABEL, pattern_doc="a DNS label"),
    ),
)

CHART_SOURCE = Obj(
    doc="Where one pinned chart comes from instead of its upstream registry.",
    fields=(
        Field("repository", str, "A mirror holding the chart under its name at the pinned version: an oci:// registry "
              "path (the chart is REPOSITORY/NAME), an https chart repository (its index.yaml lists NAME), or an "
              "absolute path of a directory where `pulumi up` runs that holds the unpacked chart as NAME/ (`helm pull "
              "--untar -d`; its Chart.yaml must name the chart and the pinned version). Default: the upstream registry."),
    ),
)

CHARTS = Obj(
    doc="Pinned charts taken from a mirror (an air-gapped cluster's), by chart name.",
    fields=tuple(Field(name, CHART_SOURCE, f"{name} {version}: where it comes from instead of "
                       f"{chart.rsplit('/', 1)[0]}.") for name, (chart, version) in MIRRORABLE_CHARTS.items()),
)

CLOUD_SECTIONS: dict[Cloud, str] = {Cloud.GCP: "gcp", Cloud.AWS: "aws", Cloud.AZURE: "azure", Cloud.ALICLOUD: "alicloud",
                                    Cloud.KUBERNETES: "kubernetes"}

ROOT = Obj(
    doc="k3infra stack configuration.",
    fields=(
        Field("cloud", Cloud, "The cloud to deploy to; kubernetes: an existing cluster given by a kubeconfig.",
              required=True),
        Field("platform", Platform, "Where the server runs. Default: the cloud's managed Kubernetes (eks, aks, gke, ack; "
              "existing-cluster for cloud kubernetes)."),
        Field("zone", str, "Zone of the GPU capacity (Azure: 1, 2 or 3). The GPU pool, and the bucket's region, follow "
              "it. Cloud kubernetes: a name for the site of the GPU nodes, for the plan only.", required=True),
        Field("accelerator", str, "GPU machine type, named as the cloud names it (e.g. a4x-maxgpu-4g-metal); cloud "
              "kubernetes: the GPU node's shape (hgx-b300, gb300-nvl72, hgx-b200, hgx-h200).", required=True),
        Field("nodes", int, "GPU nodes per model replica. Default: the fewest that fit.", minimum=1),
        Field("replicas", int, "Model replicas. Default: 1.", default=1, minimum=1),
        Field("tensorParallel", int, "Tensor-parallel size. Default: all GPUs of the NVLink domain the replica spans.", minimum=1),
        Field("pipelineParallel", int, "Pipeline-parallel size. Default: GPUs / tensorParallel.", minimum=1),
        Field("expertParallel", bool, "Enable expert parallelism over the tensor-parallel group. Default: false.", default=False),
        Field("model", str, "Hugging Face id of the model. Default: moonshotai/Kimi-K3.", default="moonshotai/Kimi-K3"),
        Field("engine", EngineName, "Serving engine. Default: vllm.", default=EngineName.VLLM),
        Field("image", str, "Engine image. Default: the engine's image in the catalog."),
        Field("imagePlatforms", list, "Platforms the image ships (check with docker manifest inspect). Required for an image "
              "the catalog does not know.", item=CpuArch),
        Field("engineVersion", str, "The engine release the image contains (e.g. 0.33.0). Default: the catalog image's, "
              "else the release k3infra validates its command lines against (vLLM 0.33.0, SGLang 0.5.23).",
              pattern=r"[0-9]+(\.[0-9]+){1,3}((\.post|rc|\.dev)[0-9]+)?", pattern_doc="a release number such as 0.33.0"),
        Field("loadFormat", str, "Engine --load-format. Default: runai_streamer with the streamer loader, else the engine's "
              "default (vLLM fastsafetensors, 002 §3.1)."),
        Field("memoryFraction", float, "GPU memory fraction the engine claims. Default: the engine recipe's for the "
              "GPU generation and layout (vLLM 0.95, 0.97 on Hopper, 0.90 pipeline-parallel on Blackwell), SGLang 0.85.",
              minimum=0.5, maximum=0.98),
        Field("speculativeDecoding", str, "Speculative decoding: none or dspark (the engine's draft model: SGLang "
              "RadixArk/Kimi-K3-DSpark, 000; vLLM RedHatAI/Kimi-K3-speculator.dspark, its recipe, without pipeline "
              "parallelism; Kubernetes platforms). "
              "Default: none.", default="none", pattern=r"none|dspark", pattern_doc="none or dspark"),
        Field("workload", Workload, "Kubernetes workload of a replica. Default: deployment for one node, leaderworkerset "
              "for several."),
        Field("namespace", str, "Kubernetes namespace of the serving workload. Default: kimi-k3.", default="kimi-k3",
              pattern=DNS_LABEL, pattern_doc="a DNS label (lowercase, digits, -)"),
        Field("capacity", CAPACITY, "How the GPUs are obtained.", required=True),
        Field("weights", WEIGHTS, "Where the weights live and how they load.", required=True),
        Field("endpoint", ENDPOINT, "How the endpoint is exposed. Default: internal.", default={}),
        Field("cluster", CLUSTER, "Cluster settings.", default={}),
        Field("observability", OBSERVABILITY, "Metrics, dashboard and alerts. Default: on, with a new workspace.",
              default={}),
        Field("autoscaling", AUTOSCALING, "Replicas that follow the traffic. Default: off.", default={}),
        Field("topology", TOPOLOGY, "Aggregated, wide expert parallelism or prefill/decode roles. Default: "
              "aggregated.", default={}),
        Field("status", STATUS, "Read-only access for `k3infra status`. Default: none created.", default={}),
        Field("charts", CHARTS, "Pinned charts from your mirror (air-gapped clusters): charts.NAME.repository, "
              "NAME one of " + ", ".join(MIRRORABLE_CHARTS) + ". Default: each from its upstream registry.",
              default={}),
        Field("fabricCheck", FABRIC_CHECK, "The fabric check of a multi-node group before its weights load. Default: "
              "on, at half the expected bus bandwidth.", default={}),
        Field("verifyAfterDeploy", bool, "Run the 002 §7 checklist (k3infra verify) as a Job inside the cluster once "
              "the server is ready; its result is the stack output verification. Default: true.", default=True),
        Field("engineCache", bool, "Keep the engine's compile and CUDA-graph caches in a node directory (hostPath "
              "/var/lib/k3infra/engine-cache), so a server pod restarted on a node that served before warms up from "
              "them. A hostPath makes the serving namespace Pod Security privileged. Default: true on GKE and AKS, "
              "whose GPU pools run the server privileged anyway; false elsewhere. Kubernetes platforms only."),
        Field("nodeWeights", bool, "Keep the weights on the GPU nodes' local NVMe (a hostPath on the array the platform "
              "sets up: GKE's Local SSD ephemeral storage, EKS's instance-store RAID0; an existing cluster's "
              "kubernetes.nodeLocalPath), filled and verified against the bucket's manifest by the node agent "
              "DaemonSet, so a restarted or new server pod on the node reads them from there, and the engine's caches "
              "saved to and restored from the bucket; a copy that does not match falls back to the bucket. A hostPath "
              "makes the serving namespace Pod Security privileged. On HyperPod (/opt/dlami/nvme) the endpoint's own "
              "init container fills the node from S3 before the engine starts (aws/hyperpod_weights.py). Default: true "
              "on GKE, false elsewhere (AKS and ACK keep nothing on the node: catalog.node_local). Kubernetes "
              "platforms and HyperPod."),
        Field("hfToken", str, "Hugging Face token for the sync Job. Set with `pulumi config set --secret`.", secret=True),
        Field("apiKey", str, "API key the endpoint requires when public. Set with `pulumi config set --secret`.", secret=True),
        Field("registryAuth", str, "PAI-EAS: USERNAME:PASSWORD for the image's registry, sent as the service's "
              "dockerAuth (its Base64; the service definition is then a secret). Required for an ACR Personal "
              "Edition instance created since 2024-09-09 (crpi-...), which refuses anonymous pulls. Default: none "
              "(EAS pulls from ACR in its own account and region without one). Set with `pulumi config set --secret`.",
              secret=True),
        Field("kubeconfig", str, "Cloud kubernetes: the cluster's kubeconfig (its contents). Set with `pulumi config set "
              "--secret kubeconfig < ~/.kube/config`, or give kubernetes.kubeconfigPath instead.", secret=True),
        Field("s3AccessKeyId", str, "Cloud kubernetes, storage type s3: the access key id of the S3-compatible store. "
              "Set with `pulumi config set --secret`; it reaches the pods only as a Kubernetes Secret.", secret=True),
        Field("s3SecretAccessKey", str, "Cloud kubernetes, storage type s3: the secret access key that goes with "
              "s3AccessKeyId. Set with `pulumi config set --secret`.", secret=True),
        Field("gcp", GCP, "Google Cloud settings.", default={}),
        Field("aws", AWS, "AWS settings.", default={}),
        Field("azure", AZURE, "Azure settings.", default={}),
        Field("alicloud", ALICLOUD, "Alibaba Cloud settings.", default={}),
        Field("kubernetes", KUBERNETES, "Existing-cluster settings (cloud kubernetes).", default={}),
    ),
)

SECRET_KEYS = frozenset(f"k3infra:{f.name}" for f in ROOT.fields if f.secret)
"""Keys that are always treated as Pulumi secrets."""

#: Provider configuration k3infra reads, per cloud: (key, required, what it is).
PROVIDER_KEYS: dict[Cloud, tuple[tuple[str, bool, str], ...]] = {
    Cloud.GCP: (("gcp:project", True, "Google Cloud project id"), ("gcp:region", True, "region of the cluster and bucket")),
    Cloud.AWS: (("aws:region", True, "region of the cluster and bucket"),),
    Cloud.AZURE: (("azure-native:location", True, "Azure region of the cluster and storage"),
                  ("azure-native:subscriptionId", False, "subscription id")),
    Cloud.ALICLOUD: (("alicloud:region", True, "region of the cluster and bucket"),),
    Cloud.KUBERNETES: (),
}
