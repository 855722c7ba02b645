"""The Google Cloud stacks, whole: golden plans, inventories, outputs and the cleanup note.

The golden files are ``k3infra plan <stack> --format json``. After an intended change, regenerate them with
``K3INFRA_UPDATE_GOLDEN=1 pytest tests/gcp/test_stacks.py`` and review the diff like any other.
"""

import json
import os
from typing import Any
from collections import Counter

import pytest

from k3infra import offline
from tests.support import ROOT, plan

GOLDEN = ROOT / "tests" / "golden"
GCP_STACKS = ("gcp-a4xmax", "gcp-a4-sglang", "gcp-a4x-sglang", "gcp-a4xmax-pd")
NODES = {"gcp-a4xmax": 2, "gcp-a4-sglang": 2, "gcp-a4x-sglang": 4,
         "gcp-a4xmax-pd": 2}  # the disaggregated stack's own sizing is its prefill group's (config/topology.py)


def rendered(stack: str) -> str:
    """Exactly what ``k3infra plan STACK --format json`` prints."""
    return json.dumps(plan(stack).to_json(), indent=2, ensure_ascii=False) + "\n"


@pytest.mark.parametrize("stack", GCP_STACKS)
def test_golden_plan(stack: str) -> None:
    path = GOLDEN / f"{stack}.json"
    text = rendered(stack)
    if os.environ.get("K3INFRA_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert path.is_file(), f"{path} is missing: run K3INFRA_UPDATE_GOLDEN=1 pytest {__file__}"
    assert text == path.read_text(), f"the plan of {stack} changed: review it, then K3INFRA_UPDATE_GOLDEN=1 to accept"


def types(stack: str) -> Counter[str]:
    return Counter(r.type for r in plan(stack).recording.resources)


def test_a4x_max_stack_resources() -> None:
    counts = types("gcp-a4xmax")
    assert counts >= Counter({
        "k3infra:index:GkeCluster": 1, "k3infra:index:GkeGpuNodePool": 1, "k3infra:index:GcsWeightBucket": 1,
        "gcp:container/cluster:Cluster": 1, "gcp:container/nodePool:NodePool": 2,
        "gcp:compute/resourcePolicy:ResourcePolicy": 1, "gcp:storage/bucket:Bucket": 1,
        "gcp:storage/bucketIAMMember:BucketIAMMember": 2, "pulumi:providers:kubernetes": 1,
        # the gateway stack is internal: the internal Application Load Balancer needs a proxy-only subnet
        "gcp:compute/subnetwork:Subnetwork": 2,
        # serving (002 §5.4, §5.5): vLLM TP=8 over two nodes as a LeaderWorkerSet, the weight sync, the gateway
        "k3infra:index:ModelServer": 1, "k3infra:index:WeightSync": 1, "k3infra:index:InferenceGateway": 1,
        "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet": 1,
        "kubernetes:helm.sh/v4:Chart": 3,  # LWS, the NVIDIA DRA driver, llm-d-router (its InferencePool and EPP)
        "kubernetes:gateway.networking.k8s.io/v1:Gateway": 1,
        # without them GKE health-checks / (every backend unhealthy) and cuts responses at 30 s
        "kubernetes:networking.gke.io/v1:HealthCheckPolicy": 1, "kubernetes:networking.gke.io/v1:GCPBackendPolicy": 1,
    })
    rec = plan("gcp-a4xmax").recording
    gpu = rec.one("gcp:container/nodePool:NodePool", "k3-gpu-pool").inputs
    assert gpu["nodeCount"] == 2
    assert gpu["nodeConfig"]["reservationAffinity"]["values"] == [
        "projects/my-project/reservations/k3-a4xmax/reservationBlocks/k3-a4xmax-block-0001/"
        "reservationSubBlocks/k3-a4xmax-block-0001-subblock-0001"]
    assert rec.one("gcp:container/cluster:Cluster").inputs["enableMultiNetworking"] is False
    assert rec.one("gcp:container/cluster:Cluster").inputs["enableShieldedNodes"] is False
    assert rec.one("gcp:compute/subnetwork:Subnetwork", "k3-proxy-subnet").inputs["purpose"] == "REGIONAL_MANAGED_PROXY"
    gateway = rec.one("kubernetes:gateway.networking.k8s.io/v1:Gateway").inputs
    assert gateway["spec"]["gatewayClassName"] == "gke-l7-rilb"
    # the gateway's proxies (proxy-only subnet) and Google's health checks may reach the server pods
    policy = rec.one("kubernetes:networking.k8s.io/v1:NetworkPolicy", "k3-server-network-policy").inputs
    cidrs = {peer["ipBlock"]["cidr"] for rule in policy["spec"]["ingress"] for peer in rule.get("from", [])
             if "ipBlock" in peer}
    assert cidrs == {"10.129.0.0/23", "35.191.0.0/16", "130.211.0.0/22"}
    lws = rec.one("kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet").inputs
    for role in ("leaderTemplate", "workerTemplate"):
        pod = lws["spec"]["leaderWorkerTemplate"][role]["spec"]
        assert pod["nodeSelector"]["kubernetes.io/arch"] == "arm64"
        # Google's A4X Max guide: workloads select the accelerator network profile's nodes by its label (review m1)
        assert pod["nodeSelector"]["gke.networks.io/accelerator-network-profile"] == "auto"
        assert {"key": "kubernetes.io/arch", "operator": "Equal", "value": "arm64", "effect": "NoSchedule"} in pod["tolerations"]
        # /dev/shm as cluster-toolkit's gke-a4x-max-bm NCCL example and gpu-recipes' A4X Max charts size it
        assert {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "250Gi"}} in pod["volumes"], role


@pytest.mark.parametrize("stack", GCP_STACKS)
def test_a_server_claiming_mrdma_nics_waits_for_asapd_lite(stack: str) -> None:
    """On A4X Max DRANET publishes no mrdma.google.com device until asapd-lite has brought the NICs up: a stack whose
    server claims them installs the agent and the server depends on it (review B1). A4X's hypervisor brings its NICs
    up itself (catalog.gke asapd_lite): the claim without the agent. A4 claims none."""
    rec = plan(stack).recording
    servers = rec.by_type("k3infra:index:ModelServer")  # one, or one per role (issue 37)
    prefixes = tuple(f"{m.name}-" for m in servers)
    claims = [t for t in rec.by_type("kubernetes:resource.k8s.io/v1:ResourceClaimTemplate")
              if t.name.startswith(prefixes) and "fabric" not in t.name
              and any(r["exactly"]["deviceClassName"] == "mrdma.google.com"
                      for r in t.inputs["spec"]["spec"]["devices"]["requests"])]
    agents = [d for d in rec.by_type("kubernetes:apps/v1:DaemonSet") if d.inputs["metadata"]["name"] == "asapd-lite"]
    assert len(claims) == (0 if stack == "gcp-a4-sglang" else len(servers))
    assert len(agents) == (1 if stack.startswith("gcp-a4xmax") else 0)
    assert all(a.urn in server.dependencies for a in agents for server in servers)
    if len(servers) > 1:
        return
    # the fabric check claims the same NICs (its own template) and waits for the agent too
    assert len([t for t in rec.by_type("kubernetes:resource.k8s.io/v1:ResourceClaimTemplate")
                if t.name == "k3-fabric-rdma"]) == len(claims)
    assert all(a.urn in rec.one("kubernetes:batch/v1:Job", "k3-fabric-0-job").dependencies for a in agents)


@pytest.mark.parametrize("stack", GCP_STACKS)
def test_every_network_of_a_stack_carries_the_same_jumbo_mtu(stack: str) -> None:
    """The primary VPC (NCCL bootstrap on eth0, the weight copy) and the A4 GPU networks: one MTU, 8896 (review m3)."""
    mtus = {r.name: r.inputs.get("mtu") for r in plan(stack).recording.by_type("gcp:compute/network:Network")}
    assert set(mtus.values()) == {8896}, mtus


def test_a4_sglang_stack_resources() -> None:
    counts = types("gcp-a4-sglang")
    assert counts["gcp:compute/subnetwork:Subnetwork"] == 1 + 1 + 8 + 1  # nodes, gVNIC, 8 RoCE, the gateway's proxies
    assert counts["kubernetes:networking.gke.io/v1:Network"] == 8
    assert counts["kubernetes:networking.gke.io/v1:GKENetworkParamSet"] == 8
    assert counts["kubernetes:apps/v1:DaemonSet"] == 1 + 1 + 1  # the RDMA one, the engine image pre-pull, the node agent
    assert counts["gcp:compute/resourcePolicy:ResourcePolicy"] == 0
    rec = plan("gcp-a4-sglang").recording
    assert rec.one("gcp:container/cluster:Cluster").inputs["enableMultiNetworking"] is True
    assert rec.one("gcp:compute/subnetwork:Subnetwork", "k3-proxy-subnet").inputs["purpose"] == "REGIONAL_MANAGED_PROXY"
    gpu = rec.one("gcp:container/nodePool:NodePool", "k3-gpu-pool").inputs
    assert gpu["nodeConfig"]["machineType"] == "a4-highgpu-8g" and gpu["nodeCount"] == 2
    # issue 23 item 7: the two ranks are one LeaderWorkerSet group, recreated together when one restarts
    assert counts["kubernetes:apps/v1:StatefulSet"] == 0
    lws = rec.one("kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet").inputs["spec"]
    group = lws["leaderWorkerTemplate"]
    assert lws["replicas"] == 1 and group["size"] == 2
    assert group["restartPolicy"] == "RecreateGroupOnPodRestart"
    for role, rank in (("leaderTemplate", "0"), ("workerTemplate", '"$(LWS_WORKER_INDEX)"')):
        pod = group[role]
        assert json.loads(pod["metadata"]["annotations"]["networking.gke.io/interfaces"])[1:] == [
            {"interfaceName": f"eth{i + 2}", "network": f"rdma-{i}"} for i in range(8)]
        script = pod["spec"]["containers"][0]["args"][0]
        assert "source /usr/local/gib/scripts/set_nccl_env.sh" in script and "--tp-size 16" in script
        assert "--speculative-algorithm DSPARK" in script and "--load-format runai_streamer" in script
        # lws docs/examples/sglang/lws.yaml: --dist-init-addr $(LWS_LEADER_ADDRESS):20000, --node-rank from the LWS
        assert f'--nnodes 2 --node-rank {rank} --dist-init-addr "$(LWS_LEADER_ADDRESS):20000"' in script
        volume = next(v for v in pod["spec"]["volumes"] if v["name"] == "weights")
        assert volume["csi"]["driver"] == "gcsfuse.csi.storage.gke.io"
        assert volume["csi"]["volumeAttributes"]["bucketName"] == "my-project-kimi-k3-weights"
    # the server waits for the pool, the RDMA networks and the NCCL plugin; the sync Job does not
    server = rec.one("k3infra:index:ModelServer")
    network_urns = {r.urn for r in rec.by_type("kubernetes:networking.gke.io/v1:Network")}
    assert network_urns <= set(server.dependencies)
    assert rec.one("gcp:container/nodePool:NodePool", "k3-gpu-pool").urn in server.dependencies
    sync = rec.one("k3infra:index:WeightSync")
    assert rec.one("gcp:container/nodePool:NodePool", "k3-gpu-pool").urn not in sync.dependencies
    assert {r.urn for r in rec.by_type("gcp:storage/bucketIAMMember:BucketIAMMember")} <= set(sync.dependencies)
    cluster_provider = rec.one("pulumi:providers:kubernetes")
    for r in rec.resources:
        if r.type.startswith("kubernetes:"):
            assert r.provider == cluster_provider.urn, f"{r.name} must go to the cluster's provider"


def test_a4x_sglang_stack_resources() -> None:
    """Seed 000's recommended layout: 4 x A4X in one sub-block, TP=16 over MNNVL in one LeaderWorkerSet group, the NICs
    from managed DRANET and driven by the arm64 gIB plugin (cluster-toolkit examples/gke-a4x), gpu-recipes' A4X
    SGLang launch."""
    counts = types("gcp-a4x-sglang")
    rec = plan("gcp-a4x-sglang").recording
    # DRANET, not multi-networking: no extra VPCs or Kubernetes Network objects (cluster-toolkit #5822)
    assert counts["gcp:compute/subnetwork:Subnetwork"] == 2  # the nodes' and the gateway's proxy-only subnet
    assert counts["kubernetes:networking.gke.io/v1:Network"] == 0
    assert rec.one("gcp:container/cluster:Cluster").inputs["enableMultiNetworking"] is False
    assert rec.one("gcp:container/cluster:Cluster").inputs["datapathProvider"] == "ADVANCED_DATAPATH"
    gpu = rec.one("gcp:container/nodePool:NodePool", "k3-gpu-pool").inputs
    assert (gpu["nodeConfig"]["machineType"], gpu["nodeCount"]) == ("a4x-highgpu-4g", 4)
    assert gpu["networkConfig"] == {"acceleratorNetworkProfile": "auto"}
    assert gpu["nodeConfig"]["labels"]["cloud.google.com/gke-networking-dra-driver"] == "true"
    assert "cloud.google.com/gke-dpv2-unified-cni" not in gpu["nodeConfig"]["labels"]
    assert "linuxNodeConfig" not in gpu["nodeConfig"]  # no huge pages on A4X
    assert gpu["nodeConfig"]["gvnic"] == {"enabled": True}  # cluster-toolkit gke-node-pool on a COS pool
    assert gpu["nodeConfig"]["reservationAffinity"]["values"] == [
        "projects/my-project/reservations/k3-a4x/reservationBlocks/k3-a4x-block-0001/"
        "reservationSubBlocks/k3-a4x-block-0001-subblock-0001"]
    assert gpu["placementPolicy"]["type"] == "COMPACT"
    policy = rec.one("gcp:compute/resourcePolicy:ResourcePolicy").inputs["workloadPolicy"]
    assert policy == {"type": "HIGH_THROUGHPUT", "acceleratorTopology": "1x72"}
    # the gIB plugin, Arm build, on the Grace nodes; no martian-log sysctls (gke-a4x nccl-installer.yaml.tftpl)
    installer = rec.one("kubernetes:apps/v1:DaemonSet", "k3-gpu-gib-installer")
    pod = installer.inputs["spec"]["template"]["spec"]
    assert [c["image"] for c in pod["initContainers"]] == [
        "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib-arm64:v1.1.0"]
    assert pod["nodeSelector"]["kubernetes.io/arch"] == "arm64"
    (template,) = [t for t in rec.by_type("kubernetes:resource.k8s.io/v1:ResourceClaimTemplate")
                   if t.name.startswith("k3-server")]  # the fabric check claims the same NICs under its own name
    (request,) = template.inputs["spec"]["spec"]["devices"]["requests"]
    assert (request["exactly"]["deviceClassName"], request["exactly"]["count"]) == ("mrdma.google.com", 4)
    (domain,) = [d for d in rec.by_type("kubernetes:resource.nvidia.com/v1beta1:ComputeDomain")
                 if d.name.startswith("k3-server")]
    lws = rec.one("kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet").inputs["spec"]
    group = lws["leaderWorkerTemplate"]
    assert (lws["replicas"], group["size"], group["restartPolicy"]) == (1, 4, "RecreateGroupOnPodRestart")
    channel = domain.inputs["spec"]["channel"]["resourceClaimTemplate"]["name"]
    for role, rank in (("leaderTemplate", "0"), ("workerTemplate", '"$(LWS_WORKER_INDEX)"')):
        spec = group[role]["spec"]
        assert {"name": "nvlink-channel", "resourceClaimTemplateName": channel} in spec["resourceClaims"], role
        assert spec["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0][
            "topologyKey"] == "cloud.google.com/gce-topology-subblock"
        assert "networking.gke.io/interfaces" not in group[role]["metadata"]["annotations"]
        # /dev/shm as gpu-recipes' A4X chart and cluster-toolkit's gke-a4x example size it (not the 64Gi default)
        assert {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "250Gi"}} in spec["volumes"], role
        engine = spec["containers"][0]
        env = {e["name"]: e["value"] for e in engine["env"] if "value" in e}
        # gpu-recipes src/helm-charts/a4x/inference-templates/lws-deployment lws-launcher.yaml
        assert {k: env[k] for k in ("NCCL_MNNVL_ENABLE", "NCCL_CUMEM_ENABLE", "NCCL_NET_GDR_C2C", "NCCL_NET_GDR_LEVEL")} == {
            "NCCL_MNNVL_ENABLE": "1", "NCCL_CUMEM_ENABLE": "1", "NCCL_NET_GDR_C2C": "1", "NCCL_NET_GDR_LEVEL": "PIX"}
        assert any(m["mountPath"] == "/usr/local/gib" for m in engine["volumeMounts"]), role
        script = engine["args"][0]
        assert script.index("source /usr/local/gib/scripts/set_nccl_env.sh") < script.index("sglang serve")
        assert f'--tp-size 16 --nnodes 4 --node-rank {rank} --dist-init-addr "$(LWS_LEADER_ADDRESS):20000"' in script
        for flag in ("--dcp-size 16", "--mamba-full-memory-ratio 7.21", "--dist-timeout 3600",
                     "--mem-fraction-static 0.85", "--speculative-algorithm DSPARK"):
            assert flag in script, (role, flag)
        assert "--mamba-full-memory-ratio 0.43" not in script
        assert engine["image"] == "docker.io/lmsysorg/sglang:kimi-k3"
        assert "hostNetwork" not in spec and engine["securityContext"]["privileged"] is False


@pytest.mark.parametrize("stack", GCP_STACKS)
def test_stack_outputs(stack: str) -> None:
    out = plan(stack).recording.outputs
    assert isinstance(out["kubeconfig"], offline.Secret)
    assert out["bucketUri"] == "gs://my-project-kimi-k3-weights"
    assert out["modelUri"] == "gs://my-project-kimi-k3-weights/models/moonshotai/Kimi-K3"
    assert out["servedModelName"] == "Kimi-K3"
    assert out["reservation"].startswith("projects/my-project/reservations/")
    assert out["endpoint"].startswith("http://")
    assert out["servingNamespace"] == "kimi-k3" and out["weightSyncJob"] == "k3-sync"
    assert out["sizing"]["nodes"] == NODES[stack] and out["monthlyCost"]["currency"] == "USD"
    billing = out["billingAfterDestroy"]
    assert any(line.startswith(f"Compute Engine reservation {out['reservation']}") and "002 §5.7" in line
               for line in billing)
    assert any("gs://my-project-kimi-k3-weights is retained" in line for line in billing)


def test_bucket_not_retained_when_the_stack_opts_out() -> None:
    p = plan("gcp-a4xmax", "weights.retainOnDestroy=false")
    assert p.recording.one("gcp:storage/bucket:Bucket").retain_on_delete is False
    assert not any("is retained" in line for line in p.recording.outputs["billingAfterDestroy"])


def test_reservation_check_off_reads_nothing() -> None:
    p = plan("gcp-a4xmax", "gcp.checkReservation=false")
    # the versions the channel offers, the project number twice (the GKE service agent, the bucket's principals)
    assert [i.token for i in p.recording.invocations] == ["gcp:container/getEngineVersions:getEngineVersions",
                                                          "gcp:organizations/getProject:getProject",
                                                          "gcp:organizations/getProject:getProject"]


@pytest.mark.parametrize("stack", GCP_STACKS)
def test_bucket_grants_are_created_after_the_cluster(stack: str) -> None:
    rec = plan(stack).recording
    cluster = rec.one("gcp:container/cluster:Cluster")
    grants = rec.by_type("gcp:storage/bucketIAMMember:BucketIAMMember")
    assert len(grants) == 2 and all(cluster.urn in g.dependencies for g in grants)


@pytest.mark.parametrize(("stack", "ssds"), [("gcp-a4xmax", 4), ("gcp-a4-sglang", 32), ("gcp-a4x-sglang", 4)])
def test_gpu_pool_carries_the_bundled_local_ssds_and_ignores_their_drift(stack: str, ssds: int) -> None:
    pool = plan(stack).recording.one("gcp:container/nodePool:NodePool", "k3-gpu-pool")
    assert pool.inputs["nodeConfig"]["ephemeralStorageLocalSsdConfig"] == {"localSsdCount": ssds}
    assert {"nodeConfig.ephemeralStorageLocalSsdConfig", "nodeConfig.localNvmeSsdBlockConfig"} <= set(pool.ignore_changes)
    assert pool.inputs["management"] == {"autoRepair": True, "autoUpgrade": True}
    assert pool.inputs["upgradeSettings"] == {"strategy": "SURGE", "maxSurge": 0, "maxUnavailable": 1}


@pytest.mark.parametrize("stack", GCP_STACKS)
def test_upgrades_are_planned_and_the_control_plane_is_limited(stack: str) -> None:
    p = plan(stack)
    cluster = p.recording.one("gcp:container/cluster:Cluster").inputs
    assert cluster["releaseChannel"] == {"channel": "REGULAR"}
    assert cluster["maintenancePolicy"]["maintenanceExclusions"][0]["exclusionOptions"] == {
        "scope": "NO_MINOR_OR_NODE_UPGRADES", "endTimeBehavior": "UNTIL_END_OF_SUPPORT"}
    # who reaches the control plane is the deployer's to say before `pulumi up` (tests/test_control_plane_access.py)
    assert any(w.startswith("k3infra:gcp.authorizedNetworks is not set") for w in p.warnings)


def test_authorized_networks_from_the_stack() -> None:
    p = plan("gcp-a4xmax", 'gcp.authorizedNetworks=["81.2.69.0/24"]')
    cluster = p.recording.one("gcp:container/cluster:Cluster").inputs
    assert cluster["masterAuthorizedNetworksConfig"]["cidrBlocks"] == [
        {"cidrBlock": "81.2.69.0/24", "displayName": "authorized-0"}]
    assert not any("public endpoint answers every address" in w for w in p.warnings)
    p = plan("gcp-a4xmax", "gcp.privateEndpoint=true")
    assert p.recording.one("gcp:container/cluster:Cluster").inputs["privateClusterConfig"]["enablePrivateEndpoint"] is True


@pytest.mark.parametrize("stack", GCP_STACKS)
def test_gpu_pools_boot_verified_and_monitored(stack: str) -> None:
    # cluster-toolkit modules/compute/gke-node-pool main.tf: shielded_instance_config { enable_secure_boot =
    # var.enable_secure_boot (default true), enable_integrity_monitoring = true } on every pool, the bare-metal
    # A4X Max pool of examples/gke-a4x-max-bm included (it leaves enable_secure_boot at its default).
    rec = plan(stack).recording
    for pool in ("k3-gpu-pool", "k3-system"):
        config = rec.one("gcp:container/nodePool:NodePool", pool).inputs["nodeConfig"]
        assert config["shieldedInstanceConfig"] == {"enableSecureBoot": True, "enableIntegrityMonitoring": True}, pool


def test_a4x_max_mounts_and_checks_the_node_s_driver_libraries() -> None:
    # gpu-recipes' A4X Max recipes mount /home/kubernetes/bin/nvidia at /usr/local/nvidia; the script checks it.
    from k3infra.gcp.node_pool import DRIVER_CHECK
    rec = plan("gcp-a4xmax").recording
    (lws,) = rec.by_type("kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet")
    for role in ("leaderTemplate", "workerTemplate"):
        spec = offline.plain(lws.inputs)["spec"]["leaderWorkerTemplate"][role]["spec"]
        volume = next(v for v in spec["volumes"] if v["name"] == "library-dir-host")
        assert volume["hostPath"]["path"] == "/home/kubernetes/bin/nvidia", role
        engine = spec["containers"][0]
        assert {"name": "library-dir-host", "mountPath": "/usr/local/nvidia", "readOnly": True} in engine[
            "volumeMounts"] or any(m["name"] == "library-dir-host" and m["mountPath"] == "/usr/local/nvidia"
                                   for m in engine["volumeMounts"]), role
        script = engine["args"][-1] if engine.get("args") else engine["command"][-1]
        assert all(line in script for line in DRIVER_CHECK), role
        assert script.index(DRIVER_CHECK[0]) < script.index("vllm serve"), role


@pytest.mark.parametrize("stack", GCP_STACKS)
def test_fuse_mount_carries_the_a4xmax_recipe_s_parallel_downloads_and_the_estimate_follows(stack: str) -> None:
    from k3infra.gcp.bucket import FUSE_MOUNT_OPTIONS
    for option in ("file-cache:parallel-downloads-per-file:100", "file-cache:max-parallel-downloads:-1",
                   "file-cache:download-chunk-size-mb:50", "file-cache:max-size-mb:-1"):
        assert option in FUSE_MOUNT_OPTIONS
    rec = plan(stack).recording
    # the file cache sits on the node's ephemeral storage: the machine's Local SSDs
    gpu = rec.one("gcp:container/nodePool:NodePool", "k3-gpu-pool").inputs["nodeConfig"]
    assert gpu["ephemeralStorageLocalSsdConfig"]["localSsdCount"] > 0
    from k3infra.catalog import LOADER_PROFILES, Loader
    fuse = LOADER_PROFILES[Loader.FUSE]
    assert (fuse.low_gbps_per_node, fuse.gbps_per_node) == (10, 40)
    assert "100 parallel downloads of 50 MiB" in fuse.source


@pytest.mark.parametrize(("stack", "sets"), [*((s, ()) for s in GCP_STACKS), ("gcp-a4xmax", ("engine=sglang",)),
                                             ("gcp-a4-sglang", ("engine=vllm", "speculativeDecoding=none",
                                                               "weights.draftRevision=null"))])
def test_every_rank_keeps_bootstrap_and_gloo_on_the_primary_interface(stack: str, sets: tuple[str, ...]) -> None:
    """Issue 36 item 13: the pods carry RDMA NICs besides the primary interface, so every rank of every engine pins
    NCCL's socket transport and Gloo to the machine's primary interface (catalog GkeMachine.socket_interface, as
    gpu-recipes' A4X and A4X Max charts and 000 do), after set_nccl_env.sh and before the engine starts."""
    from k3infra.catalog.gke import GKE_MACHINES
    p = plan(stack, *sets)
    iface = GKE_MACHINES[p.config.accelerator.sku].socket_interface
    assert iface == "eth0"
    for lws in p.recording.by_type("kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet"):  # one per role (issue 37)
        _pinned_before_the_engine(lws, iface, stack, sets)


def _pinned_before_the_engine(lws: Any, iface: str, stack: str, sets: tuple[str, ...]) -> None:
    for role in ("leaderTemplate", "workerTemplate"):
        engine = offline.plain(lws.inputs)["spec"]["leaderWorkerTemplate"][role]["spec"]["containers"][0]
        lines = (engine["args"][-1] if engine.get("args") else engine["command"][-1]).splitlines()
        pins = [lines.index(f"export {v}_SOCKET_IFNAME={iface}") for v in ("NCCL", "GLOO")]
        sourced = [i for i, line in enumerate(lines) if "set_nccl_env.sh" in line and line.startswith("source")]
        start = next(i for i, line in enumerate(lines) if line.startswith("exec "))
        assert all(max(sourced, default=-1) < i < start for i in pins), (stack, sets, role)
