"""What a cloud hands to serving, and nothing more (DESIGN.md: serving never branches on the cloud).

A cloud package provides three things, as plain typed dictionaries so the same shapes work as component
arguments from any Pulumi language:

- the cluster: a Kubernetes provider, passed through resource options (``providers={"kubernetes": p}``),
  and the ``LoadBalancerSettings`` its load balancers need;
- the GPU pool: a ``GpuPool`` (node selector, tolerations, GPUs per node, node count, fabric extras);
- the weight bucket: a ``WeightStore`` (model URI, reader and writer service accounts, CSI mount or
  streamer settings, the copier's environment, the bucket-copy loader's tool);
- monitoring: a ``MetricsAccess`` (where the cloud's managed Prometheus scrapes the server from).

Ordering (the pool exists before the server, identities before the pods) is expressed by the caller with
``depends_on``, not through these shapes.
"""

from typing import Mapping, NotRequired, Sequence, TypedDict

import pulumi

SERVER_SERVICE_ACCOUNT = "k3-server"
"""Kubernetes service account of the model server pods: the bucket's read-only identity is bound to it."""

SYNC_SERVICE_ACCOUNT = "k3-weight-sync"
"""Kubernetes service account of the weight sync Job: the only identity with write access to the bucket."""


class Toleration(TypedDict):
    """A pod toleration for the GPU pool's taints."""

    key: str
    """Taint key, e.g. ``nvidia.com/gpu``."""
    operator: NotRequired[str]
    """``Exists`` (default) or ``Equal``."""
    value: NotRequired[str]
    """Taint value, with operator ``Equal``."""
    effect: NotRequired[str]
    """``NoSchedule`` (default), ``PreferNoSchedule`` or ``NoExecute``."""


class HostPathMount(TypedDict):
    """A node directory the engine container needs (driver libraries, NCCL plugins)."""

    name: str
    """Volume name in the pod."""
    host_path: str
    """Directory on the node."""
    mount_path: str
    """Where the engine container sees it."""


class DeviceClaim(TypedDict):
    """Devices every server pod claims through Dynamic Resource Allocation (``resource.k8s.io/v1``), such as a
    node's RDMA NICs from DRANET. Serving renders one ResourceClaimTemplate per claim in its namespace; each pod
    gets a claim of its own from it, allocated on the pod's node."""

    name: str
    """The claim's name in the pods and the suffix of its template's name, e.g. ``rdma``."""
    device_class: str
    """The DeviceClass the devices come from, e.g. GKE managed DRANET's ``mrdma.google.com``."""
    count: int
    """Devices each pod claims (``allocationMode: ExactCount``), e.g. every RDMA NIC of its node."""
    selectors: NotRequired[Sequence[str]]
    """CEL expressions every claimed device must satisfy, e.g. AKS DRANET's
    ``device.attributes["azure.dra.net"]["interconnectSubgroupId"] == "..."`` (one InfiniBand fabric). Default:
    none (any device of the class)."""


class GpuPool(TypedDict):
    """What a GPU node pool hands to serving."""

    node_selector: Mapping[str, str]
    """Labels that select the pool's nodes."""
    tolerations: Sequence[Toleration]
    """Tolerations for the pool's taints."""
    gpus_per_node: int
    """GPUs each node exposes; each pod requests all of them."""
    node_count: int
    """Nodes in the pool."""
    gpu_resource: NotRequired[str]
    """Extended resource name of a GPU. Default: ``nvidia.com/gpu``."""
    extra_resources: NotRequired[Mapping[str, str]]
    """Further per-pod resources the fabric needs, e.g. ``{"vpc.amazonaws.com/efa": "16"}``."""
    pod_annotations: NotRequired[Mapping[str, str]]
    """Annotations pods need on this pool, e.g. GKE multi-network interfaces for RDMA NICs (000)."""
    pod_labels: NotRequired[Mapping[str, str]]
    """Labels pods need on this pool."""
    env: NotRequired[Mapping[str, str]]
    """Environment the fabric needs (NCCL settings, 000)."""
    host_mounts: NotRequired[Sequence[HostPathMount]]
    """Node directories to mount (000: NVIDIA libraries and the gIB NCCL plugin)."""
    setup_commands: NotRequired[Sequence[str]]
    """Shell lines run before the engine starts (000: ``ldconfig``, ``source set_nccl_env.sh``)."""
    cpu_request: NotRequired[str]
    """CPU each serving pod requests. Default: none (the engine gets the node)."""
    memory_request: NotRequired[str]
    """Memory each serving pod requests. Default: none."""
    shm_size: NotRequired[str]
    """Size of the ``/dev/shm`` memory volume. Default: ``64Gi`` (002 §4.4)."""
    capabilities: NotRequired[Sequence[str]]
    """Linux capabilities the fabric needs in the engine container, e.g. ``IPC_LOCK`` for RDMA memory
    registration (EFA, InfiniBand). Default: none (every capability is dropped)."""
    device_claims: NotRequired[Sequence[DeviceClaim]]
    """DRA devices each server pod claims besides its GPUs (DRANET's RDMA NICs). Default: none."""
    compute_domains: NotRequired[bool]
    """The cluster runs the NVIDIA DRA driver with ComputeDomains on this pool: each replica whose tensor
    parallelism spans nodes gets a ComputeDomain of its own, and its pods claim the domain's IMEX channel, which
    is what lets NCCL use multi-node NVLink. Default: false."""
    group_topology_label: NotRequired[str]
    """Node label whose value names one NVLink domain (GKE: ``cloud.google.com/gce-topology-subblock``; NVIDIA GPU
    feature discovery: ``nvidia.com/gpu.clique``): every pod of a replica that spans nodes lands on nodes sharing
    one value of it. Default: none (the pool itself is one domain)."""
    driver_version: NotRequired[str]
    """The NVIDIA driver the pool's nodes run, where the cloud decides it (ACK: the node-pool label's version, or
    ACK's default), for the plan to say when it is older than the engine's CUDA major needs. The engine script
    itself reads the node's driver at start and turns CUDA forward compatibility on only then
    (serving.engine.cuda_driver_check). Default: unknown, and nothing is said."""
    placement_advice: NotRequired[str]
    """What to do when the pool's nodes do not share ``group_topology_label`` in groups of a replica's size (the
    cloud's way to get one domain); the placement check's failure says it. Default: a cloud-neutral sentence."""
    capacity_pending: NotRequired[str]
    """Why the pool may have no nodes when ``pulumi up`` ends (its reserved capacity starts later). The server is
    then registered without an await (``pulumi.com/skipAwait``): waiting could only time out; it schedules when
    the nodes join. Default: the pool's nodes are there."""


class ServingRole(TypedDict):
    """One role of a disaggregated or wide-EP topology, as a ModelServer runs it (catalog/topologies.py): a named group
    with its own parallelism; ``serve`` makes one ModelServer per role."""

    name: str
    """prefill, decode, or wide-ep (a DEP group that does both)."""
    parallelism: str
    """tep (tensor parallel over the group, experts inside it) or dep (data-parallel attention, experts over every
    GPU of the group, one API server per node)."""
    all2all_backend: NotRequired[str]
    """vLLM ``--all2all-backend`` of a dep group (required for dep)."""
    kv_transport: NotRequired[str]
    """What NIXL moves the KV cache over: ucx, libfabric or tcp (required for prefill and decode)."""
    routing_sidecar: NotRequired[bool]
    """Run llm-d's routing sidecar in front of the engine on every pod of the role (decode). Default: false."""
    inference_pool: NotRequired[str]
    """``namespace/name`` of the gateway's InferencePool: the routing sidecar sends prefills only to its pods (SSRF
    protection, catalog.topologies ``routing_sidecar_ssrf_args``), watching them with the pod's service account, which
    must be bound to a Role that allows it (serving.roles ``sidecar_access``). Default: none (protection off)."""
    peer_selector: NotRequired[Mapping[str, str]]
    """Labels of every role's pods of the topology: they reach this role's pods on every port (NIXL's side channel,
    the KV transfer over TCP, the sidecar's prefill requests). Default: none."""


class SyncNodes(TypedDict):
    """Where the weight sync runs when the cloud gives it a pool of its own (catalog.transfer.SYNC_POOLS)."""

    node_selector: Mapping[str, str]
    """Labels that select the sync pool's nodes."""
    tolerations: Sequence[Toleration]
    """Tolerations for the sync pool's taint."""


class ServiceAccountSpec(TypedDict):
    """A Kubernetes service account and what binds it to a cloud identity."""

    name: str
    """Service account name (serving uses ``k3-server`` for the reader and ``k3-weight-sync`` for the writer)."""
    annotations: NotRequired[Mapping[str, pulumi.Input[str]]]
    """E.g. ``azure.workload.identity/client-id`` or ``pod-identity.alibabacloud.com/role-name``."""
    pod_labels: NotRequired[Mapping[str, str]]
    """Labels pods using it must carry, e.g. ``azure.workload.identity/use: "true"``."""


class CsiVolume(TypedDict):
    """The bucket mounted as a file system through the cloud's CSI driver.

    The mount is the bucket's root: the model is read at ``WeightStore.model_subpath`` under it. An inline
    volume carries ``mount_options`` as its ``mountOptions`` attribute (GCS FUSE's convention); a static
    PersistentVolume as its ``mountOptions``.
    """

    driver: str
    """CSI driver, e.g. ``gcsfuse.csi.storage.gke.io`` or ``s3.csi.aws.com``."""
    volume_attributes: Mapping[str, pulumi.Input[str]]
    """The driver's volume attributes, e.g. ``bucketName`` (GCS FUSE) or ``bucketName`` / ``region`` (S3)."""
    mount_options: NotRequired[Sequence[str]]
    """Mount options of a static PersistentVolume. Default: none."""
    inline: bool
    """True: an ephemeral inline CSI volume in the pod (GCS FUSE). False: a static PersistentVolume and claim."""
    volume_handle: NotRequired[pulumi.Input[str]]
    """PersistentVolume ``volumeHandle`` (static volumes)."""
    capacity: NotRequired[str]
    """PersistentVolume capacity (static volumes; object stores ignore it but the API requires it)."""
    pod_annotations: NotRequired[Mapping[str, str]]
    """E.g. ``gke-gcsfuse/volumes: "true"``."""


class CopyTool(TypedDict):
    """A container that copies between a local directory and the bucket, resumably.

    It runs with ``SOURCE`` and ``DEST`` in its environment (a local path and a bucket URI, or the reverse).
    """

    image: str
    """Image with the cloud's storage CLI."""
    command: Sequence[str]
    """E.g. ``["/bin/sh", "-c", 'gcloud storage rsync --recursive "$SOURCE" "$DEST"']``."""
    env: NotRequired[Mapping[str, pulumi.Input[str]]]
    """Extra environment (account names, endpoints). Default: none."""


class WeightVolume(TypedDict):
    """A file system an existing cluster already has, holding ``WeightStore.model_subpath`` under its root; mounted
    read-only (exactly one of the two)."""

    persistent_volume: NotRequired[str]
    """A PersistentVolume (ReadOnlyMany, or ReadWriteMany): ModelServer claims it from the serving namespace by name
    (``volumeName``) and mounts the claim."""
    host_path: NotRequired[str]
    """A directory on every GPU node (a ``hostPath`` volume of type Directory: the pod does not start where it is
    missing)."""


class WeightStore(TypedDict):
    """What a weight bucket hands to serving."""

    uri: pulumi.Input[str]
    """URI of the model directory: ``gs://``, ``s3://``, ``az://`` or ``oss://`` BUCKET/PREFIX/<Hugging Face id>."""
    model_subpath: str
    """The model directory relative to the bucket root: PREFIX/<Hugging Face id>."""
    reader: ServiceAccountSpec
    """Identity of the server: read-only."""
    writer: ServiceAccountSpec
    """Identity of the sync Job: read-write."""
    fuse: NotRequired[CsiVolume]
    """The CSI mount, where the cloud has one."""
    namespace_labels: NotRequired[Mapping[str, str]]
    """Labels the serving namespace needs for the identity binding to work, e.g. Alibaba RRSA's
    ``pod-identity.alibabacloud.com/injection: "on"``. Default: none."""
    streamer_env: NotRequired[Mapping[str, pulumi.Input[str]]]
    """Environment the RunAI streamer needs to read ``uri`` (e.g. ``AZURE_STORAGE_ACCOUNT_NAME``)."""
    copy_env: NotRequired[Mapping[str, pulumi.Input[str]]]
    """Environment the weight copier (k3infra.weightcopy) needs to reach ``uri`` with the pod's identity: the sync
    Job writes with the writer's, the server's marker wait reads with the reader's (e.g. ``AWS_REGION``,
    ``AZURE_STORAGE_ACCOUNT_NAME``, OSS's ``K3_COPY_STORAGE_OPTIONS``). Default: none."""
    download: CopyTool
    """Bucket to local directory (the bucket-copy loader)."""
    credentials: NotRequired[Mapping[str, pulumi.Input[str]]]
    """Environment that authenticates to ``uri`` where no pod identity does (an existing cluster's S3-compatible
    store: ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``), as secret values: ``serve`` puts them in a Kubernetes
    Secret in the serving namespace (``credentials_secret``), and every container that reads or writes ``uri`` (the
    sync workers, the marker wait, the streamer, the bucket copy) reads them from it. Default: none (the pods'
    identity)."""
    credentials_secret: NotRequired[str]
    """The Secret holding ``credentials`` (keys named as the variables); set by ``serve``."""
    volume: NotRequired[WeightVolume]
    """A file system that already holds the model (loader ``volume``). Default: none."""
    grant_propagation_seconds: NotRequired[int]
    """How long a new grant to the reader or writer identity may take before the bucket honours it (the cloud's
    stated figure, ``catalog.transfer.GRANT_PROPAGATION``): the weight copier retries a refused authorization at start
    that long before it fails. Default: the longest any cloud states (Azure's 10 minutes)."""


class WeightsMarker(TypedDict):
    """The completion markers a server waits for before its engine starts (k3infra.weightcopy.copier ``wait``)."""

    config_map: str
    """The ConfigMap holding the copier (``WeightSync.config_map_name``)."""
    repos: Sequence[pulumi.Input[str]]
    """``REPO@REVISION=URI`` of each repository whose marker must exist: the model, and its draft model."""
    timeout_seconds: int
    """How long the wait lasts before the init container fails (and the kubelet retries it): the sync budget."""
    marker_keys: NotRequired[Sequence[str]]
    """The same markers as keys relative to the bucket root (``PREFIX/<model id>/.k3infra/complete-REV.json``): a
    server that mounts the bucket (loader fuse) waits for them through the mount, with its engine image and nothing
    downloaded. Default: none (every server waits with the copier)."""


class LoadBalancerSettings(TypedDict):
    """How this cluster makes a Service of type LoadBalancer internal or public."""

    internal_annotations: Mapping[str, str]
    """E.g. ``networking.gke.io/load-balancer-type: Internal``."""
    public_annotations: NotRequired[Mapping[str, str]]
    """Annotations of a public load balancer (e.g. AWS ``aws-load-balancer-scheme: internet-facing``).
    Default: none (the cloud's default load balancer is public)."""
    internal_gateway_class: NotRequired[str]
    """Gateway API class of an internal gateway (GKE: ``gke-l7-rilb``)."""
    public_gateway_class: NotRequired[str]
    """Gateway API class of a public gateway (GKE: ``gke-l7-regional-external-managed``)."""
    internal_source_ranges: NotRequired[Sequence[str]]
    """Private CIDRs an internal load balancer admits (the VPC's ranges). When set, an internal endpoint gets
    an internal load balancer restricted to them (``loadBalancerSourceRanges`` and the NetworkPolicy).
    Default: none: an internal endpoint is a ClusterIP Service reachable from its own namespace."""
    gateway_provider: NotRequired[str]
    """Whose policy objects set a managed gateway's backend health check and request timeout, named as
    llm-d-router's chart names its providers: ``gke`` (a ``HealthCheckPolicy`` and a ``GCPBackendPolicy``,
    ``networking.gke.io/v1``, on the InferencePool; without them GKE checks ``/`` and cuts responses at 30 s).
    Default: none (the gateway's own defaults, or an in-cluster gateway that uses the pods' readiness)."""
    install_gateway: NotRequired[bool]
    """The cluster has no inference gateway of its own: serving installs agentgateway (serving.gateway_install,
    catalog.charts ``AGENTGATEWAY_CHART``), whose ``agentgateway`` class the Gateway takes whatever its exposure; the
    Gateway's LoadBalancer Service then carries ``internal_annotations`` or ``public_annotations``, admits the
    internal client ranges or the public endpoint's allowed CIDRs, and keeps client addresses. Default: false
    (the gateway classes above)."""
    gateway_source_ranges: NotRequired[Sequence[str]]
    """CIDRs a managed gateway's proxies connect to the pods from (GKE: the proxy-only subnet). Default: none:
    the gateway's data plane runs in the serving namespace (Istio and other in-cluster implementations)."""
    health_check_ranges: NotRequired[Sequence[str]]
    """CIDRs the cloud's load balancer or gateway health checks reach the pods from, when they probe pods
    directly (each cloud's, with its source: ``k3infra.catalog.health_checks``). Admitted on the serving port
    whenever a load balancer or managed gateway fronts the server, and on the listener of an installed gateway's
    proxies (whose Service the load balancer then checks) in its place. Default: none (health checks go to the node, as with
    ``externalTrafficPolicy: Local`` on AKS)."""


class MetricsAccess(TypedDict):
    """Where the cloud's managed Prometheus scrapes the server's ``/metrics`` from: the server's NetworkPolicy admits
    these sources on the serving port (it admits only its own namespace otherwise)."""

    namespaces: NotRequired[Sequence[str]]
    """Namespaces the in-cluster collector runs in (GKE managed collection: ``gke-gmp-system``; AKS ama-metrics:
    ``kube-system``; ACK ARMS: ``arms-prom``). Default: none."""
    cidrs: NotRequired[Sequence[str]]
    """Ranges an off-cluster collector scrapes from (the Amazon Managed Service for Prometheus scraper's network
    interfaces live in the cluster's private subnets). Default: none."""
