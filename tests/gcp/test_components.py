"""GkeCluster, GkeGpuNodePool and GcsWeightBucket under the recording engine: exact inventories and the values that matter."""

import json
from typing import Callable

import kubernetes_validate
import pulumi
import pytest

from k3infra import offline
from k3infra.catalog.gke import GKE_MACHINES
from k3infra.gcp.bucket import FUSE_MOUNT_OPTIONS, GcsWeightBucket
from k3infra.gcp.cluster import OPEN_ENDPOINT_WARNING, GkeCluster, ReleaseChannel, UpgradeExclusion
from k3infra.gcp.node_pool import GkeGpuNodePool
from k3infra.gcp.reservation import ReservationUnusable
from k3infra.gcp.versions import VersionUnavailable
from k3infra.offline import Recording
from k3infra.offline_state import FAKE_PROJECT_NUMBER
from k3infra.offline_state.gcp import OfflineReservation
from tests.support import inventory, record

CLUSTER = "k3infra:index:GkeCluster"
POOL = "k3infra:index:GkeGpuNodePool"
BUCKET = "k3infra:index:GcsWeightBucket"
SUB_BLOCK_PATH = ("projects/my-project/reservations/k3-a4xmax/reservationBlocks/k3-a4xmax-block-0001/"
                  "reservationSubBlocks/k3-a4xmax-block-0001-subblock-0001")


def cluster_args(**over: object) -> dict:
    args = {"project": "my-project", "region": "us-central1", "zone": "us-central1-b", "cluster_name": "k3-test"}
    args.update(over)
    return args


def a4x_pool_args(**over: object) -> dict:
    args = {"project": "my-project", "region": "us-central1", "zone": "us-central1-b", "cluster": "k3-test",
            "cluster_location": "us-central1", "pool_name": "gpu", "resource_prefix": "k3-test-gpu",
            "machine_type": "a4x-maxgpu-4g-metal", "node_count": 2,
            "reservation": {"project": "my-project", "name": "k3-a4xmax", "block": "k3-a4xmax-block-0001",
                            "sub_block": "k3-a4xmax-block-0001-subblock-0001"}}
    args.update(over)
    return args


def a4_pool_args(**over: object) -> dict:
    args = {"project": "my-project", "region": "us-central1", "zone": "us-central1-b", "cluster": "k3-test",
            "cluster_location": "us-central1", "pool_name": "gpu", "resource_prefix": "k3-test-gpu",
            "machine_type": "a4-highgpu-8g", "node_count": 2,
            "reservation": {"project": "my-project", "name": "k3-a4"}}
    args.update(over)
    return args


def run_cluster(**over: object) -> Recording:
    return record(lambda: GkeCluster("k3", cluster_args(**over)))  # type: ignore[arg-type]


def run_pool(args: dict, with_provider: bool = False) -> Recording:
    def program() -> None:
        opts = None
        if with_provider:
            opts = pulumi.ResourceOptions(providers={"kubernetes": __import__("pulumi_kubernetes").Provider("k8s")})
        GkeGpuNodePool("k3-gpu", args, opts)  # type: ignore[arg-type]
    return record(program)


# ---------------------------------------------------------------------------------------------------------
# GkeCluster

def test_cluster_inventory() -> None:
    rec = run_cluster()
    assert inventory(rec) == [
        (CLUSTER, "k3", None),
        ("gcp:compute/network:Network", "k3-network", CLUSTER),
        ("gcp:compute/router:Router", "k3-router", CLUSTER),
        ("gcp:compute/routerNat:RouterNat", "k3-nat", CLUSTER),
        ("gcp:compute/subnetwork:Subnetwork", "k3-subnet", CLUSTER),
        ("gcp:container/cluster:Cluster", "k3-cluster", CLUSTER),
        ("gcp:container/nodePool:NodePool", "k3-system", CLUSTER),
        ("gcp:projects/iAMMember:IAMMember", "k3-nodes-artifactregistry-reader", CLUSTER),
        ("gcp:projects/iAMMember:IAMMember", "k3-nodes-logging-logwriter", CLUSTER),
        ("gcp:projects/iAMMember:IAMMember", "k3-nodes-monitoring-metricwriter", CLUSTER),
        ("gcp:projects/iAMMember:IAMMember", "k3-nodes-monitoring-viewer", CLUSTER),
        ("gcp:projects/iAMMember:IAMMember", "k3-nodes-stackdriver-resourcemetadata-writer", CLUSTER),
        ("gcp:serviceaccount/account:Account", "k3-nodes", CLUSTER),
        ("pulumi:providers:kubernetes", "k3-k8s", CLUSTER),
    ]


def test_cluster_settings() -> None:
    rec = run_cluster()
    c = rec.one("gcp:container/cluster:Cluster").inputs
    assert c["name"] == "k3-test"
    assert c["location"] == "us-central1" and c["nodeLocations"] == ["us-central1-b"]
    assert c["removeDefaultNodePool"] is True
    assert c["workloadIdentityConfig"] == {"workloadPool": "my-project.svc.id.goog"}
    assert c["addonsConfig"]["gcsFuseCsiDriverConfig"] == {"enabled": True}
    assert c["datapathProvider"] == "ADVANCED_DATAPATH"
    assert c["releaseChannel"] == {"channel": "REGULAR"}
    assert c["deletionProtection"] is True
    assert c["enableMultiNetworking"] is False
    assert c["gatewayApiConfig"] == {"channel": "CHANNEL_STANDARD"}
    assert c["privateClusterConfig"]["enablePrivateNodes"] is True
    assert c["ipAllocationPolicy"] == {"clusterSecondaryRangeName": "pods", "servicesSecondaryRangeName": "services"}
    # jumbo frames, as cluster-toolkit's vpc module builds every network (review m3)
    assert rec.one("gcp:compute/network:Network").inputs["mtu"] == 8896
    system = rec.one("gcp:container/nodePool:NodePool", "k3-system").inputs
    assert system["nodeConfig"]["machineType"] == "e2-standard-8"
    assert system["nodeCount"] == 2
    assert system["nodeConfig"]["workloadMetadataConfig"] == {"mode": "GKE_METADATA"}
    roles = sorted(r.inputs["role"] for r in rec.by_type("gcp:projects/iAMMember:IAMMember"))
    assert roles == ["roles/artifactregistry.reader", "roles/logging.logWriter", "roles/monitoring.metricWriter",
                     "roles/monitoring.viewer", "roles/stackdriver.resourceMetadata.writer"]


def test_cluster_options_reach_the_cluster() -> None:
    rec = run_cluster(multi_networking=True, proxy_only_subnet=True, deletion_protection=False,
                      release_channel=ReleaseChannel.RAPID, kubernetes_version="1.34", shielded_nodes=False)
    c = rec.one("gcp:container/cluster:Cluster").inputs
    assert c["enableMultiNetworking"] is True and c["deletionProtection"] is False
    assert c["releaseChannel"] == {"channel": "RAPID"} and c["minMasterVersion"] == "1.34"
    assert c["enableShieldedNodes"] is False
    proxy = rec.one("gcp:compute/subnetwork:Subnetwork", "k3-proxy-subnet").inputs
    assert proxy["purpose"] == "REGIONAL_MANAGED_PROXY" and proxy["role"] == "ACTIVE"
    assert proxy["region"] == "us-central1"


def test_upgrades_hold_the_reserved_pool_by_default() -> None:
    cluster = run_cluster().one("gcp:container/cluster:Cluster")
    # cluster-toolkit examples/gke-a4x-max-bm and gke-a4: REGULAR + a NO_MINOR_OR_NODE_UPGRADES exclusion until
    # the end of support (node auto-upgrade cannot be turned off in a release channel)
    assert cluster.inputs["maintenancePolicy"] == {
        "dailyMaintenanceWindow": {"startTime": "09:00"},
        "maintenanceExclusions": [{
            "exclusionName": "k3-no-unplanned-upgrades", "startTime": "2026-01-01T00:00:00Z",
            "exclusionOptions": {"scope": "NO_MINOR_OR_NODE_UPGRADES", "endTimeBehavior": "UNTIL_END_OF_SUPPORT"}}],
    }
    assert "minMasterVersion" not in cluster.inputs and "minMasterVersion" not in cluster.ignore_changes


def test_maintenance_settings_are_the_stack_s() -> None:
    policy = run_cluster(maintenance_window_start="22:30", upgrade_exclusion=UpgradeExclusion.NO_MINOR_UPGRADES,
                         upgrade_exclusion_start="2026-03-01T00:00:00Z").one(
        "gcp:container/cluster:Cluster").inputs["maintenancePolicy"]
    assert policy["dailyMaintenanceWindow"] == {"startTime": "22:30"}
    assert policy["maintenanceExclusions"][0]["startTime"] == "2026-03-01T00:00:00Z"
    assert policy["maintenanceExclusions"][0]["exclusionOptions"]["scope"] == "NO_MINOR_UPGRADES"
    policy = run_cluster(upgrade_exclusion=None).one("gcp:container/cluster:Cluster").inputs["maintenancePolicy"]
    assert policy == {"dailyMaintenanceWindow": {"startTime": "09:00"}}


def test_a4x_max_cluster_uses_the_channel_default_when_it_meets_the_floor() -> None:
    rec = run_cluster(gpu_machine_type="a4x-maxgpu-4g-metal")
    assert [(i.token, i.args) for i in rec.invocations] == [
        ("gcp:container/getEngineVersions:getEngineVersions", {"location": "us-central1", "project": "my-project"})]
    cluster = rec.one("gcp:container/cluster:Cluster")
    assert "minMasterVersion" not in cluster.inputs
    assert "minMasterVersion" in cluster.ignore_changes, "the next read of the channel may pick another version"


def test_a4x_max_cluster_takes_the_channel_s_newest_when_its_default_is_too_old(
        engine_versions: dict[str, dict[str, str]]) -> None:
    engine_versions["default"]["REGULAR"] = "1.34.1-gke.1000000"
    clusters: list[GkeCluster] = []
    rec = record(lambda: clusters.append(GkeCluster("k3", cluster_args(gpu_machine_type="a4x-maxgpu-4g-metal"))))  # type: ignore[arg-type]
    cluster = rec.one("gcp:container/cluster:Cluster")
    assert cluster.inputs["minMasterVersion"] == "1.35.1-gke.1100000"
    assert "minMasterVersion" in cluster.ignore_changes, "a version taken from the channel moves with it"
    assert any("defaults to 1.34.1-gke.1000000, too old (A4X Max node pools need GKE 1.34.3-gke.1318000 or later on "
               "1.34" in w for w in clusters[0].warnings)


def test_a4x_max_cluster_skips_a_channel_default_below_its_branch_s_floor(
        engine_versions: dict[str, dict[str, str]]) -> None:
    """1.35.0-gke.1000 is newer than the 1.34 minimum but below 1.35's own (1.35.0-gke.2745000): not a default to use."""
    engine_versions["default"]["REGULAR"] = "1.35.0-gke.1000"
    cluster = run_cluster(gpu_machine_type="a4x-maxgpu-4g-metal").one("gcp:container/cluster:Cluster")
    assert cluster.inputs["minMasterVersion"] == "1.35.1-gke.1100000"
    engine_versions["latest"]["REGULAR"] = "1.35.0-gke.2744999"
    with pytest.raises(VersionUnavailable, match="offers at most 1.35.0-gke.2744999"):
        run_cluster(gpu_machine_type="a4x-maxgpu-4g-metal")


def test_channel_without_a_version_for_the_machine_fails_preview(engine_versions: dict[str, dict[str, str]]) -> None:
    with pytest.raises(VersionUnavailable, match=r"A4X Max node pools need GKE 1.34.3-gke.1318000 .*the STABLE "
                                                 r"channel in us-central1 offers at most 1.34.2-gke.1200000"):
        run_cluster(gpu_machine_type="a4x-maxgpu-4g-metal", release_channel=ReleaseChannel.STABLE)


def test_stack_version_newer_than_the_channel_fails_preview() -> None:
    with pytest.raises(VersionUnavailable, match="REGULAR channel in us-central1 offers at most 1.35.1-gke.1100000"):
        run_cluster(kubernetes_version="1.36")


def test_nat_allocates_ports_as_the_sync_streams_need_them() -> None:
    nat = offline.unwrap(run_cluster().one("gcp:compute/routerNat:RouterNat", "k3-nat").inputs)
    assert (nat["enableDynamicPortAllocation"], nat["enableEndpointIndependentMapping"]) == (True, False)
    assert (nat["minPortsPerVm"], nat["maxPortsPerVm"]) == (1024, 65536)
    # the API's rules for dynamic allocation: powers of two from 32, at most 65536
    assert all(n >= 32 and n & (n - 1) == 0 for n in (nat["minPortsPerVm"], nat["maxPortsPerVm"]))


def test_open_public_endpoint_warns() -> None:
    clusters: list[GkeCluster] = []
    rec = record(lambda: clusters.append(GkeCluster("k3", cluster_args())))  # type: ignore[arg-type]
    assert clusters[0].warnings == [OPEN_ENDPOINT_WARNING]
    assert OPEN_ENDPOINT_WARNING in rec.log_warnings
    assert "masterAuthorizedNetworksConfig" not in rec.one("gcp:container/cluster:Cluster").inputs


def test_authorized_networks_close_the_public_endpoint() -> None:
    clusters: list[GkeCluster] = []
    rec = record(lambda: clusters.append(GkeCluster("k3", cluster_args(  # type: ignore[arg-type]
        authorized_cidrs=["203.0.113.0/24", "198.51.100.7/32"]))))
    c = rec.one("gcp:container/cluster:Cluster").inputs
    assert c["masterAuthorizedNetworksConfig"] == {"cidrBlocks": [
        {"cidrBlock": "203.0.113.0/24", "displayName": "authorized-0"},
        {"cidrBlock": "198.51.100.7/32", "displayName": "authorized-1"}], "gcpPublicCidrsAccessEnabled": False}
    assert c["privateClusterConfig"]["enablePrivateEndpoint"] is False
    assert clusters[0].warnings == []


def test_private_endpoint_turns_authorized_networks_on() -> None:
    clusters: list[GkeCluster] = []
    rec = record(lambda: clusters.append(GkeCluster("k3", cluster_args(private_endpoint=True))))  # type: ignore[arg-type]
    c = rec.one("gcp:container/cluster:Cluster").inputs
    assert c["privateClusterConfig"]["enablePrivateEndpoint"] is True
    assert c["masterAuthorizedNetworksConfig"] == {"cidrBlocks": [], "gcpPublicCidrsAccessEnabled": False}
    assert clusters[0].warnings == []


def test_bucket_grants_wait_for_the_cluster_s_workload_pool() -> None:
    # On a fresh project the pool exists only once the cluster does: a grant built from the project id alone
    # could be created first and fail with "Identity Pool does not exist" (terraform-google-kubernetes-engine#916).
    def program() -> None:
        cluster = GkeCluster("k3", cluster_args())  # type: ignore[arg-type]
        GcsWeightBucket("w", bucket_args(workload_pool=cluster.workload_pool))  # type: ignore[arg-type]
    rec = record(program)
    cluster = rec.one("gcp:container/cluster:Cluster")
    for grant in rec.by_type("gcp:storage/bucketIAMMember:BucketIAMMember"):
        assert cluster.urn in grant.dependencies, f"{grant.name} must wait for the cluster"
        assert "/workloadIdentityPools/my-project.svc.id.goog/subject/ns/kimi-k3/" in grant.inputs["member"]


def test_kubeconfig_is_secret_and_uses_the_auth_plugin() -> None:
    rec = run_cluster()
    provider = rec.one("pulumi:providers:kubernetes", "k3-k8s")
    assert isinstance(provider.inputs["kubeconfig"], offline.Secret)
    kubeconfig = json.loads(offline.unwrap(provider.inputs["kubeconfig"]))
    user = kubeconfig["users"][0]["user"]["exec"]
    assert user["command"] == "gke-gcloud-auth-plugin"
    assert user["apiVersion"] == "client.authentication.k8s.io/v1beta1"
    assert kubeconfig["clusters"][0]["cluster"]["server"] == "https://203.0.113.10"
    system = rec.one("gcp:container/nodePool:NodePool", "k3-system")
    assert system.urn in provider.dependencies, "the provider waits for the system pool"


def test_load_balancer_settings_for_serving() -> None:
    clusters: list[GkeCluster] = []
    record(lambda: clusters.append(GkeCluster("k3", cluster_args(proxy_only_subnet=True))))  # type: ignore[arg-type]
    lb = clusters[0].load_balancer
    assert lb["internal_annotations"] == {"networking.gke.io/load-balancer-type": "Internal"}
    assert (lb.get("internal_gateway_class"), lb.get("public_gateway_class")) == (
        "gke-l7-rilb", "gke-l7-regional-external-managed")
    assert lb.get("internal_source_ranges") == ["10.0.0.0/20", "10.16.0.0/14"]
    assert lb.get("gateway_source_ranges") == ["10.129.0.0/23", "35.191.0.0/16", "130.211.0.0/22"]
    clusters.clear()
    record(lambda: clusters.append(GkeCluster("k3", cluster_args())))  # type: ignore[arg-type]
    assert "gateway_source_ranges" not in clusters[0].load_balancer


def test_cluster_name_longer_than_gke_allows() -> None:
    with pytest.raises(pulumi.InputPropertyError, match="1-40 characters"):
        run_cluster(cluster_name="k3-" + "x" * 40)


# ---------------------------------------------------------------------------------------------------------
# GkeGpuNodePool: A4X Max

def test_a4x_max_pool_inventory() -> None:
    rec = run_pool(a4x_pool_args())
    assert inventory(rec) == [
        (POOL, "k3-gpu", None),
        ("gcp:compute/resourcePolicy:ResourcePolicy", "k3-gpu-workload-policy", POOL),
        ("gcp:container/nodePool:NodePool", "k3-gpu-pool", POOL),
        # Google's A4X Max guide: the accelerator network profile needs the GKE service agent's network admin role
        ("gcp:projects/iAMMember:IAMMember", "k3-gpu-gke-agent-network-admin", POOL),
        # the agent that brings up the MRDMA NICs DRANET hands out (cluster-toolkit examples/gke-a4x-max-bm)
        ("kubernetes:apps/v1:DaemonSet", "k3-gpu-asapd-lite", POOL),
        # the NVIDIA DRA driver for ComputeDomains (multi-node NVLink), cluster-toolkit examples/gke-a4x-max-bm
        ("kubernetes:core/v1:Namespace", "k3-gpu-nvidia-dra-namespace", POOL),
        ("kubernetes:core/v1:ResourceQuota", "k3-gpu-nvidia-dra-critical-pods", POOL),
        ("kubernetes:helm.sh/v4:Chart", "k3-gpu-nvidia-dra", POOL),
    ]


def test_a4x_max_pool_installs_asapd_lite_on_its_nodes_before_serving() -> None:
    """Without asapd-lite no MRDMA child interface exists, DRANET publishes no device and the server's RDMA claims
    stay pending (review B1)."""
    pools: list[GkeGpuNodePool] = []
    rec = record(lambda: pools.append(GkeGpuNodePool("k3-gpu", a4x_pool_args())))  # type: ignore[arg-type]
    reg = rec.one("kubernetes:apps/v1:DaemonSet")
    ds = offline.plain(reg.inputs)
    kubernetes_validate.validate(ds, "1.34", strict=True)
    assert (ds["metadata"]["name"], ds["metadata"]["namespace"]) == ("asapd-lite", "kube-system")
    spec = ds["spec"]["template"]["spec"]
    [agent] = spec["containers"]
    assert agent["image"] == "us-docker.pkg.dev/gce-ai-infra/asapd-lite/asapd-lite:v0.0.8"
    assert agent["securityContext"] == {"privileged": True}
    assert (spec["hostNetwork"], spec["hostPID"], spec["priorityClassName"]) == (True, True, "system-node-critical")
    assert spec["tolerations"] == [{"operator": "Exists"}]
    [term] = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert {"key": "node.kubernetes.io/instance-type", "operator": "In",
            "values": ["a4x-maxgpu-4g-metal", "a4x-maxgpu-4g-metal-nolssd"]} in term["matchExpressions"]
    assert agent["readinessProbe"]["httpGet"] == {"path": "/healthz", "port": 19540}
    assert agent["resources"]["limits"] == agent["resources"]["requests"] == {"memory": "1024Mi",
                                                                             "hugepages-2Mi": "8192Mi"}
    assert "/usr/local/bin/run_asapd_lite.sh" in agent["args"][0]
    # created once the pool's nodes exist, so Pulumi waits for the agent on them; the server waits for it
    assert rec.one("gcp:container/nodePool:NodePool").urn in reg.dependencies
    assert reg.custom_timeouts.get("create") == "20m"
    assert any(type(r).__name__ == "DaemonSet" for r in pools[0].resources)


def test_every_asapd_lite_machine_pre_allocates_the_agent_s_huge_pages() -> None:
    from k3infra.gcp import asapd
    machines = [m for m in GKE_MACHINES.values() if m.asapd_lite]
    assert [m.machine_type for m in machines] == ["a4x-maxgpu-4g-metal"]
    assert all(m.machine_type in asapd.INSTANCE_TYPES for m in machines)
    for m in machines:
        assert (m.hugepages_2m or 0) * 2 >= asapd.HUGEPAGES_2M_MIB, m.machine_type


def test_a4x_max_pool_grants_the_gke_service_agent_network_admin_first() -> None:
    rec = run_pool(a4x_pool_args())
    grant = rec.one("gcp:projects/iAMMember:IAMMember")
    assert grant.inputs == {"project": "my-project", "role": "roles/compute.networkAdmin",
                            "member": f"serviceAccount:service-{FAKE_PROJECT_NUMBER}@container-engine-robot.iam."
                                      "gserviceaccount.com"}
    assert grant.urn in rec.one("gcp:container/nodePool:NodePool").dependencies
    assert not run_pool(a4x_pool_args(grant_network_admin=False)).by_type("gcp:projects/iAMMember:IAMMember")


def test_a4x_max_pool_installs_the_dra_driver_with_gke_values() -> None:
    rec = run_pool(a4x_pool_args())
    chart = rec.one("kubernetes:helm.sh/v4:Chart").inputs
    assert (chart["chart"], chart["version"], chart["repositoryOpts"], chart["namespace"]) == (
        "nvidia-dra-driver-gpu", "25.12.0", {"repo": "https://helm.ngc.nvidia.com/nvidia"}, "nvidia-dra-driver-gpu")
    values = chart["values"]
    assert values["nvidiaDriverRoot"] == "/home/kubernetes/bin/nvidia"
    assert values["resources"] == {"gpus": {"enabled": False}, "computeDomains": {"enabled": True}}
    assert values["resourceApiVersion"] == "resource.k8s.io/v1"
    plugin = values["kubeletPlugin"]
    terms = plugin["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [
        {"key": "cloud.google.com/gke-accelerator", "operator": "In", "values": ["nvidia-gb300"]},
        {"key": "cloud.google.com/gke-nodepool", "operator": "In", "values": ["gpu"]},
        {"key": "gke.networks.io/accelerator-network-profile", "operator": "In", "values": ["auto"]},
        {"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}]}]
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in plugin["tolerations"]
    assert {"key": "kubernetes.io/arch", "operator": "Equal", "value": "arm64", "effect": "NoSchedule"} in plugin["tolerations"]
    # GKE admits system-node-critical pods outside kube-system only under a quota that scopes them
    quota = rec.one("kubernetes:core/v1:ResourceQuota").inputs
    assert quota["metadata"]["namespace"] == "nvidia-dra-driver-gpu"
    assert quota["spec"]["scopeSelector"]["matchExpressions"] == [
        {"scopeName": "PriorityClass", "operator": "In", "values": ["system-node-critical", "system-cluster-critical"]}]


def test_a4x_max_pool_hands_serving_dranet_nics_and_compute_domains() -> None:
    pools: list[GkeGpuNodePool] = []
    record(lambda: pools.append(GkeGpuNodePool("k3-gpu", a4x_pool_args())))  # type: ignore[arg-type]
    gpu = pools[0].gpu_pool
    assert gpu["device_claims"] == [{"name": "rdma", "device_class": "mrdma.google.com", "count": 8}]
    assert gpu["capabilities"] == ["IPC_LOCK"]
    assert gpu["compute_domains"] is True
    assert gpu["group_topology_label"] == "cloud.google.com/gce-topology-subblock"


def test_a4x_max_pool_without_multi_node_nvlink_installs_no_dra_driver() -> None:
    """TP=4 x PP=2 (002 appendix item 2): the RDMA NICs still, no ComputeDomains."""
    pools: list[GkeGpuNodePool] = []
    rec = record(lambda: pools.append(GkeGpuNodePool("k3-gpu", a4x_pool_args(multi_node_nvlink=False))))  # type: ignore[arg-type]
    assert not rec.by_type("kubernetes:helm.sh/v4:Chart")
    gpu = pools[0].gpu_pool
    assert "compute_domains" not in gpu
    assert gpu["device_claims"] == [{"name": "rdma", "device_class": "mrdma.google.com", "count": 8}]


def test_a4x_max_pool_pins_the_sub_block() -> None:
    rec = run_pool(a4x_pool_args())
    node = rec.one("gcp:container/nodePool:NodePool").inputs
    assert node["nodeConfig"]["reservationAffinity"] == {
        "consumeReservationType": "SPECIFIC_RESERVATION",
        "key": "compute.googleapis.com/reservation-name",
        "values": [SUB_BLOCK_PATH],
    }
    assert node["nodeCount"] == 2 and node["nodeLocations"] == ["us-central1-b"]
    assert node["nodeConfig"]["machineType"] == "a4x-maxgpu-4g-metal"
    assert node["nodeConfig"]["guestAccelerators"] == [
        {"type": "nvidia-gb300", "count": 4, "gpuDriverInstallationConfig": {"gpuDriverVersion": "LATEST"}}]
    assert node["nodeConfig"]["diskType"] == "hyperdisk-balanced"
    assert node["networkConfig"] == {"acceleratorNetworkProfile": "auto"}
    assert node["nodeConfig"]["labels"] == {"cloud.google.com/gke-networking-dra-driver": "true",
                                            "cloud.google.com/gke-dpv2-unified-cni": "cni-migration",
                                            "k3infra.dev/pool": "gpu"}
    assert node["nodeConfig"]["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}]
    assert node["upgradeSettings"] == {"strategy": "SURGE", "maxSurge": 0, "maxUnavailable": 1}
    assert "gvnic" not in node["nodeConfig"]
    policy = rec.one("gcp:compute/resourcePolicy:ResourcePolicy").inputs
    assert policy["workloadPolicy"] == {"type": "HIGH_THROUGHPUT", "acceleratorTopology": "1x72"}
    assert policy["region"] == "us-central1"
    assert node["placementPolicy"] == {"type": "COMPACT", "policyName": policy["name"]}


def test_a4x_max_pool_hands_serving_arm64_scheduling() -> None:
    pools: list[GkeGpuNodePool] = []
    record(lambda: pools.append(GkeGpuNodePool("k3-gpu", a4x_pool_args())))  # type: ignore[arg-type]
    gpu = pools[0].gpu_pool
    # Google's A4X Max guide: workloads carry the accelerator network profile's label in their nodeSelector
    assert gpu["node_selector"] == {"cloud.google.com/gke-accelerator": "nvidia-gb300",
                                    "cloud.google.com/gke-nodepool": "gpu", "kubernetes.io/arch": "arm64",
                                    "gke.networks.io/accelerator-network-profile": "auto"}
    assert {"key": "kubernetes.io/arch", "operator": "Equal", "value": "arm64", "effect": "NoSchedule"} in gpu["tolerations"]
    assert {"key": "nvidia.com/gpu", "operator": "Exists"} in gpu["tolerations"]
    assert gpu["gpus_per_node"] == 4 and gpu["node_count"] == 2
    assert "pod_annotations" not in gpu, "A4X Max uses DRANET, not the multi-network annotation"


def test_pool_size_limit_is_one_nvl72_rack() -> None:
    with pytest.raises(pulumi.InputPropertyError, match="at most 18"):
        run_pool(a4x_pool_args(node_count=19))
    assert run_pool(a4x_pool_args(node_count=18, reservation=None)).one("gcp:container/nodePool:NodePool").inputs["nodeCount"] == 18


def test_reservation_is_looked_up_down_to_the_sub_block() -> None:
    rec = run_pool(a4x_pool_args())
    tokens = [i.token for i in rec.invocations]
    assert tokens == ["gcp:compute/getReservation:getReservation",
                      "gcp:compute/getReservationSubBlock:getReservationSubBlock",
                      "gcp:organizations/getProject:getProject"]  # the GKE service agent's address
    sub = rec.invocations[1].args
    assert sub == {"name": "k3-a4xmax-block-0001-subblock-0001", "reservationBlock": "k3-a4xmax-block-0001",
                   "reservation": "k3-a4xmax", "project": "my-project", "zone": "us-central1-b"}


def test_reservation_too_small_fails_naming_it(reservations: dict[str, OfflineReservation]) -> None:
    reservations["k3-a4xmax"] = OfflineReservation(machine_type="a4x-maxgpu-4g-metal", hosts=1)
    with pytest.raises(ReservationUnusable) as e:
        run_pool(a4x_pool_args())
    assert SUB_BLOCK_PATH in str(e.value) and "holds 1 host(s)" in str(e.value) and "needs 2" in str(e.value)


def test_reservation_of_another_machine_type_fails(reservations: dict[str, OfflineReservation]) -> None:
    reservations["k3-a4"] = OfflineReservation(machine_type="a3-ultragpu-8g", hosts=4)
    with pytest.raises(ReservationUnusable, match="projects/my-project/reservations/k3-a4 holds a3-ultragpu-8g"):
        run_pool(a4_pool_args())


def test_reservation_not_ready_fails(reservations: dict[str, OfflineReservation]) -> None:
    reservations["k3-a4"] = OfflineReservation(machine_type="a4-highgpu-8g", hosts=4, status="CREATING")
    with pytest.raises(ReservationUnusable, match="is CREATING, not READY"):
        run_pool(a4_pool_args())


def test_reservation_in_use_warns(reservations: dict[str, OfflineReservation]) -> None:
    reservations["k3-a4"] = OfflineReservation(machine_type="a4-highgpu-8g", hosts=2, in_use=2)
    rec = run_pool(a4_pool_args(), with_provider=True)
    assert any("2 of 2 hosts in use" in w for w in rec.log_warnings)


def test_reservation_check_can_be_skipped(reservations: dict[str, OfflineReservation]) -> None:
    reservations["k3-a4"] = OfflineReservation(machine_type="a4-highgpu-8g", hosts=1)
    rec = run_pool(a4_pool_args(check_reservation=False), with_provider=True)
    assert rec.invocations == []


def test_block_only_reservation_reads_the_block() -> None:
    rec = run_pool(a4_pool_args(reservation={"project": "shared-proj", "name": "k3-a4", "block": "k3-a4-block-0001"}),
                   with_provider=True)
    assert [i.token for i in rec.invocations][-1] == "gcp:compute/getReservationBlock:getReservationBlock"
    values = rec.one("gcp:container/nodePool:NodePool").inputs["nodeConfig"]["reservationAffinity"]["values"]
    assert values == ["projects/shared-proj/reservations/k3-a4/reservationBlocks/k3-a4-block-0001"]


@pytest.mark.parametrize(("args", "count"), [(a4x_pool_args, 4), (a4_pool_args, 32)], ids=["a4x-max", "a4"])
def test_pool_asks_for_the_bundled_local_ssds_and_ignores_their_drift(args: Callable[..., dict], count: int) -> None:
    # GKE reads back the SSDs the machine bundles; asking for 0 ("all") differed from that on every refresh and
    # replaced the pool (hashicorp/terraform-provider-google#17068).
    pool = run_pool(args(), with_provider=True).one("gcp:container/nodePool:NodePool")
    assert pool.inputs["nodeConfig"]["ephemeralStorageLocalSsdConfig"] == {"localSsdCount": count}
    assert count == GKE_MACHINES[pool.inputs["nodeConfig"]["machineType"]].bundled_local_ssds
    assert {"nodeConfig.ephemeralStorageLocalSsdConfig", "nodeConfig.localNvmeSsdBlockConfig"} <= set(pool.ignore_changes)


def test_only_an_accelerator_profile_pool_ignores_its_label_drift() -> None:
    """GKE adds gke.networks.io/accelerator-network-profile to such a pool's config.labels; without the ignore every
    later `pulumi up` would try to take it off (review m5, cluster-toolkit gke-node-pool main.tf)."""
    a4x = run_pool(a4x_pool_args()).one("gcp:container/nodePool:NodePool")
    assert "nodeConfig.labels" in a4x.ignore_changes
    a4 = run_pool(a4_pool_args(), with_provider=True).one("gcp:container/nodePool:NodePool")
    assert "nodeConfig.labels" not in a4.ignore_changes


def test_pool_of_an_unknown_machine_type_keeps_ephemeral_storage_on_the_boot_disk() -> None:
    node = run_pool(a4_pool_args(machine_type="g2-standard-96", accelerator_type="nvidia-l4", accelerator_count=8,
                                 reservation=None)).one("gcp:container/nodePool:NodePool").inputs
    assert "ephemeralStorageLocalSsdConfig" not in node["nodeConfig"]


# ---------------------------------------------------------------------------------------------------------
# GkeGpuNodePool: A4 with GPUDirect RDMA (000)

A4_INVENTORY = [
    (POOL, "k3-gpu", None),
    ("gcp:compute/firewall:Firewall", "k3-gpu-gvnic-internal", POOL),
    ("gcp:compute/network:Network", "k3-gpu-gvnic-network", POOL),
    ("gcp:compute/network:Network", "k3-gpu-rdma-network", POOL),
    ("gcp:compute/subnetwork:Subnetwork", "k3-gpu-gvnic-subnet", POOL),
    *[("gcp:compute/subnetwork:Subnetwork", f"k3-gpu-rdma-subnet-{i}", POOL) for i in range(8)],
    ("gcp:container/nodePool:NodePool", "k3-gpu-pool", POOL),
    ("kubernetes:apps/v1:DaemonSet", "k3-gpu-gib-installer", POOL),
    *[("kubernetes:networking.gke.io/v1:GKENetworkParamSet", f"k3-gpu-rdma-{i}-params", POOL) for i in range(8)],
    *[("kubernetes:networking.gke.io/v1:Network", f"k3-gpu-rdma-{i}", POOL) for i in range(8)],
]


def test_a4_pool_inventory() -> None:
    got = [row for row in inventory(run_pool(a4_pool_args(), with_provider=True)) if row[1] != "k8s"]
    assert got == A4_INVENTORY  # no asapd-lite, no network admin grant: A4 has no accelerator network profile


def test_a4_pool_attaches_gvnic_and_eight_roce_subnets() -> None:
    rec = run_pool(a4_pool_args(), with_provider=True)
    node = rec.one("gcp:container/nodePool:NodePool").inputs
    extra = node["networkConfig"]["additionalNodeNetworkConfigs"]
    assert extra[0] == {"network": "k3-test-gpu-gvnic", "subnetwork": "k3-test-gpu-gvnic"}
    assert extra[1:] == [{"network": "k3-test-gpu-rdma", "subnetwork": f"k3-test-gpu-rdma-{i}"} for i in range(8)]
    assert node["nodeConfig"]["gvnic"] == {"enabled": True}
    assert node["nodeConfig"]["guestAccelerators"][0]["type"] == "nvidia-b200"
    assert node["nodeConfig"]["guestAccelerators"][0]["count"] == 8
    assert node["nodeConfig"]["reservationAffinity"]["values"] == ["projects/my-project/reservations/k3-a4"]
    assert "placementPolicy" not in node
    rdma = rec.one("gcp:compute/network:Network", "k3-gpu-rdma-network").inputs
    assert rdma["networkProfile"] == "projects/my-project/global/networkProfiles/us-central1-b-vpc-roce"
    assert rdma["mtu"] == rec.one("gcp:compute/network:Network", "k3-gpu-gvnic-network").inputs["mtu"] == 8896
    ranges = [rec.one("gcp:compute/subnetwork:Subnetwork", f"k3-gpu-rdma-subnet-{i}").inputs["ipCidrRange"] for i in range(8)]
    assert ranges == [f"192.168.{128 + 8 * i}.0/21" for i in range(8)]


def test_a4_kubernetes_networks_match_the_pod_annotation() -> None:
    pools: list[GkeGpuNodePool] = []

    def program() -> None:
        import pulumi_kubernetes as k8s
        pools.append(GkeGpuNodePool("k3-gpu", a4_pool_args(),  # type: ignore[arg-type]
                                    pulumi.ResourceOptions(providers={"kubernetes": k8s.Provider("k8s")})))
    rec = record(program)
    gpu = pools[0].gpu_pool
    interfaces = json.loads(gpu["pod_annotations"]["networking.gke.io/interfaces"])
    assert interfaces[0] == {"interfaceName": "eth0", "network": "default"}
    assert interfaces[1:] == [{"interfaceName": f"eth{i + 2}", "network": f"rdma-{i}"} for i in range(8)]
    assert gpu["pod_annotations"]["networking.gke.io/default-interface"] == "eth0"
    for i in range(8):
        params = rec.one("kubernetes:networking.gke.io/v1:GKENetworkParamSet", f"k3-gpu-rdma-{i}-params").inputs
        assert params["metadata"]["name"] == f"rdma-{i}"
        assert params["spec"] == {"vpc": "k3-test-gpu-rdma", "vpcSubnet": f"k3-test-gpu-rdma-{i}", "deviceMode": "RDMA"}
        network = rec.one("kubernetes:networking.gke.io/v1:Network", f"k3-gpu-rdma-{i}").inputs
        assert network["metadata"]["name"] == f"rdma-{i}"
        assert network["spec"] == {"type": "Device", "parametersRef": {
            "group": "networking.gke.io", "kind": "GKENetworkParamSet", "name": f"rdma-{i}"}}
    # seed 000: the NCCL plugin and RoCE v2 settings, after sourcing set_nccl_env.sh
    setup = gpu["setup_commands"]
    assert setup.index("export NCCL_IB_GID_INDEX=3") > next(i for i, c in enumerate(setup) if "set_nccl_env.sh" in c)
    assert "export NCCL_IB_ROCE_VERSION_NUM=2" in setup and "export NCCL_SOCKET_IFNAME=eth0" in setup
    assert {m["host_path"]: m["mount_path"] for m in gpu["host_mounts"]} == {
        "/home/kubernetes/bin/nvidia": "/usr/local/nvidia", "/home/kubernetes/bin/gib": "/usr/local/gib"}
    assert gpu["capabilities"] == ["IPC_LOCK"]
    assert gpu["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists"},
                                  {"key": "cloud.google.com/impending-node-termination", "operator": "Exists"},
                                  {"key": "user-workload", "operator": "Exists"}]
    assert (gpu.get("cpu_request"), gpu.get("memory_request"), gpu.get("shm_size")) == ("206", "1500Gi", "100Gi")
    # what serving's pods wait for: the node pool, the 16 network objects, the NCCL plugin installer
    assert sorted({type(r).__name__ for r in pools[0].resources}) == ["CustomResource", "DaemonSet", "NodePool"]
    assert len(pools[0].resources) == 18


def test_gib_installer_is_a_valid_daemonset() -> None:
    rec = run_pool(a4_pool_args(), with_provider=True)
    ds = offline.plain(rec.one("kubernetes:apps/v1:DaemonSet").inputs)
    kubernetes_validate.validate(ds, "1.34", strict=True)
    spec = ds["spec"]["template"]["spec"]
    assert spec["nodeSelector"] == {"cloud.google.com/gke-accelerator": "nvidia-b200", "cloud.google.com/gke-nodepool": "gpu"}
    assert [c["image"] for c in spec["initContainers"]][1].startswith("us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/")
    assert {v["hostPath"]["path"] for v in spec["volumes"]} == {"/home/kubernetes/bin/nvidia/lib64", "/home/kubernetes/bin/gib"}


# ---------------------------------------------------------------------------------------------------------
# GcsWeightBucket

def bucket_args(**over: object) -> dict:
    args = {"bucket_name": "my-weights", "project": "my-project", "workload_pool": "k3-pool.svc.id.goog",
            "location": "us-central1", "namespace": "kimi-k3", "model_subpath": "models/moonshotai/Kimi-K3"}
    args.update(over)
    return args


def run_bucket(**over: object) -> tuple[Recording, GcsWeightBucket]:
    out: list[GcsWeightBucket] = []
    rec = record(lambda: out.append(GcsWeightBucket("w", bucket_args(**over))))  # type: ignore[arg-type]
    return rec, out[0]


def test_bucket_inventory_and_access_settings() -> None:
    rec, _ = run_bucket()
    assert inventory(rec) == [
        (BUCKET, "w", None),
        ("gcp:storage/bucket:Bucket", "w-bucket", BUCKET),
        ("gcp:storage/bucketIAMMember:BucketIAMMember", "w-reader", BUCKET),
        ("gcp:storage/bucketIAMMember:BucketIAMMember", "w-writer", BUCKET),
    ]
    b = rec.one("gcp:storage/bucket:Bucket")
    assert b.inputs["uniformBucketLevelAccess"] is True
    assert b.inputs["publicAccessPrevention"] == "enforced"
    assert b.inputs["versioning"] == {"enabled": False}
    assert b.inputs["location"] == "US-CENTRAL1"
    assert b.inputs["forceDestroy"] is False
    assert b.retain_on_delete is True


def test_bucket_workload_identity_members() -> None:
    rec, _ = run_bucket()
    pool = "k3-pool.svc.id.goog"  # the pool given (the cluster's output), not one derived from the project
    base = f"principal://iam.googleapis.com/projects/{FAKE_PROJECT_NUMBER}/locations/global/workloadIdentityPools/{pool}"
    reader = rec.one("gcp:storage/bucketIAMMember:BucketIAMMember", "w-reader").inputs
    writer = rec.one("gcp:storage/bucketIAMMember:BucketIAMMember", "w-writer").inputs
    assert reader == {"bucket": "my-weights", "role": "roles/storage.objectViewer",
                      "member": f"{base}/subject/ns/kimi-k3/sa/k3-server"}
    assert writer == {"bucket": "my-weights", "role": "roles/storage.objectUser",
                      "member": f"{base}/subject/ns/kimi-k3/sa/k3-weight-sync"}
    assert [i.token for i in rec.invocations] == ["gcp:organizations/getProject:getProject"]
    assert rec.invocations[0].args == {"projectId": "my-project"}


def test_bucket_can_be_let_go_on_destroy() -> None:
    rec, _ = run_bucket(retain_on_destroy=False)
    assert rec.one("gcp:storage/bucket:Bucket").retain_on_delete is False


def test_bucket_store_for_serving() -> None:
    _, w = run_bucket()
    store = w.store
    assert store["model_subpath"] == "models/moonshotai/Kimi-K3"
    assert store["reader"]["name"] == "k3-server" and store["writer"]["name"] == "k3-weight-sync"
    fuse = store["fuse"]
    assert fuse["driver"] == "gcsfuse.csi.storage.gke.io" and fuse["inline"] is True
    assert fuse["volume_attributes"]["gcsfuseMetadataPrefetchOnMount"] == "true"
    assert list(fuse["mount_options"]) == list(FUSE_MOUNT_OPTIONS)
    for option in ("file-cache:enable-parallel-downloads:true", "file-cache:max-size-mb:-1", "read_ahead_kb=1024"):
        assert option in fuse["mount_options"]
    assert fuse["pod_annotations"]["gke-gcsfuse/volumes"] == "true"
    assert "gcloud storage rsync" in store["download"]["command"][-1]
    assert '"$SOURCE" "$DEST"' in store["download"]["command"][-1]
    # gcsfs finds the Workload Identity through the metadata server: the copier needs no environment.
    assert "copy_env" not in store and "upload" not in store


def test_bucket_reader_and_writer_must_differ() -> None:
    with pytest.raises(pulumi.InputPropertyError, match="another service account"):
        run_bucket(writer_service_account="k3-server")


# ---------------------------------------------------------------------------------------------------------
# Usable from other languages

def test_components_have_a_multi_language_schema() -> None:
    from pulumi.provider.experimental.component import ComponentProvider

    provider = ComponentProvider([GkeCluster, GkeGpuNodePool, GcsWeightBucket], "k3infra", version="0.0.0")
    schema = provider.schema if isinstance(provider.schema, dict) else json.loads(provider.schema)
    pool = schema["resources"]["k3infra:index:GkeGpuNodePool"]
    assert {"machineType", "nodeCount", "reservation", "zone", "cluster"} <= set(pool["inputProperties"])
    assert pool["inputProperties"]["reservation"]["$ref"] == "#/types/k3infra:index:ReservationRef"
    assert schema["types"]["k3infra:index:ReservationRef"]["required"] == ["name", "project"]
    assert {"kubeconfig", "provider", "loadBalancer"} <= set(schema["resources"]["k3infra:index:GkeCluster"]["properties"])
    assert {"uri", "store", "readerMember"} <= set(schema["resources"]["k3infra:index:GcsWeightBucket"]["properties"])
    from k3infra import COMPONENTS
    assert {COMPONENTS[n] for n in ("GkeCluster", "GkeGpuNodePool", "GcsWeightBucket")} == {
        "k3infra.gcp.cluster", "k3infra.gcp.node_pool", "k3infra.gcp.bucket"}


@pytest.mark.parametrize("present", [True, False])
def test_the_gib_setup_fails_naming_the_plugin_when_the_installer_has_not_copied_it(tmp_path, present) -> None:
    """GIB_SETUP run by bash under the server's ``set -eo pipefail``, with the plugin's path moved under tmp_path and
    the wait shortened: the settings are sourced when the file is there, and the rank fails naming it when not (where
    it once went on without gIB)."""
    import subprocess

    from k3infra.gcp.node_pool import GIB_ENV_SCRIPT, GIB_SETUP
    from k3infra.sizing import IMAGE_PULL_SECONDS

    script = tmp_path / "set_nccl_env.sh"
    if present:
        script.write_text("export NCCL_NET=gIB\n")
    lines = [c.replace(GIB_ENV_SCRIPT, str(script)).replace(f"$(seq {IMAGE_PULL_SECONDS // 5})", "$(seq 2)").replace("sleep 5", "sleep 0")
             for c in GIB_SETUP]
    assert lines != list(GIB_SETUP)
    run = subprocess.run(["bash", "-c", "\n".join(["set -eo pipefail", *lines, 'echo "NCCL_NET=$NCCL_NET"'])],
                         capture_output=True, text=True, timeout=30)
    if present:
        assert (run.returncode, run.stdout) == (0, "NCCL_NET=gIB\n")
    else:
        assert run.returncode == 1 and run.stdout == ""
        assert f"k3infra: no gIB NCCL plugin at {script} after {IMAGE_PULL_SECONDS} s" in run.stderr
