"""Small programs for the policy tests: for each rule, resources that break it and resources that keep it,
built with the providers' own SDK classes (the shapes of cloud-api.md) and recorded by the recording engine."""

import json
from typing import Any

import pulumi
import pulumi_alicloud as alicloud
import pulumi_aws as aws
import pulumi_azure_native as azure
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from k3infra import offline
from k3infra.policy_rules import Resource

from ..support import record

SUBBLOCK = "projects/p/reservations/k3/reservationBlocks/b1/reservationSubBlocks/sb1"
CRG = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/capacityReservationGroups/k3"


def resources(rec: offline.Recording) -> list[Resource]:
    """What the rules see of a recording: every registration with its (unmasked) inputs."""
    return [Resource(type=r.type, name=r.name, urn=r.urn, props=offline.unwrap(r.inputs),
                     dependencies=tuple(r.dependencies)) for r in rec.ordered()]


def run(program: Any) -> list[Resource]:
    return resources(record(program, stack="policy"))


# --- gpu-pool-consumes-reservation and nvl72-pool-within-rack -------------------------------------------------


def gke_pool(name: str, machine: str, *, reservation: str | None = SUBBLOCK, nodes: int = 2,
             max_nodes: int | None = None) -> None:
    affinity = None
    if reservation is not None:
        affinity = gcp.container.NodePoolNodeConfigReservationAffinityArgs(
            consume_reservation_type="SPECIFIC_RESERVATION", key="compute.googleapis.com/reservation-name",
            values=[reservation])
    gcp.container.NodePool(
        name, cluster="k3", location="us-central1-b", node_count=nodes,
        autoscaling=gcp.container.NodePoolAutoscalingArgs(min_node_count=0, max_node_count=max_nodes)
        if max_nodes else None,
        node_config=gcp.container.NodePoolNodeConfigArgs(machine_type=machine, reservation_affinity=affinity))


def aks_pool(name: str, *, crg: str | None = CRG, count: int = 2) -> None:
    azure.containerservice.AgentPool(
        name, resource_group_name="rg", resource_name_="k3", agent_pool_name=name.replace("-", "")[:12],
        vm_size="Standard_ND128isr_GB300_v6", count=count, mode="User", capacity_reservation_group_id=crg)


def good_gpu() -> None:
    gke_pool("a4x", "a4x-maxgpu-4g-metal")
    gke_pool("a4", "a4-highgpu-8g", reservation="projects/p/reservations/a4")
    gke_pool("cpu", "n2-standard-8", reservation=None, nodes=30)
    aks_pool("gb300")
    cb = aws.ec2.LaunchTemplate(
        "cb-lt", instance_type="p6-b300.48xlarge",
        instance_market_options=aws.ec2.LaunchTemplateInstanceMarketOptionsArgs(market_type="capacity-block"),
        capacity_reservation_specification=aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs(
            capacity_reservation_target=aws.ec2.LaunchTemplateCapacityReservationSpecificationCapacityReservationTargetArgs(
                capacity_reservation_id="cr-0123456789abcdef0")))
    aws.eks.NodeGroup(
        "cb-group", cluster_name="k3", node_role_arn="arn:aws:iam::1:role/n", subnet_ids=["subnet-1"],
        capacity_type="CAPACITY_BLOCK",
        scaling_config=aws.eks.NodeGroupScalingConfigArgs(desired_size=1, min_size=0, max_size=1),
        launch_template=aws.eks.NodeGroupLaunchTemplateArgs(id=cb.id, version="1"))


def bad_gpu() -> None:
    gke_pool("a4x-no-res", "a4x-maxgpu-4g-metal", reservation=None)
    aks_pool("gb300-no-crg", crg=None)
    aws.ec2.LaunchTemplate(
        "cb-lt-untargeted", instance_type="p6-b300.48xlarge",
        instance_market_options=aws.ec2.LaunchTemplateInstanceMarketOptionsArgs(market_type="capacity-block"))
    aws.eks.NodeGroup(
        "cb-group-no-lt", cluster_name="k3", node_role_arn="arn:aws:iam::1:role/n", subnet_ids=["subnet-1"],
        capacity_type="CAPACITY_BLOCK",
        scaling_config=aws.eks.NodeGroupScalingConfigArgs(desired_size=1, min_size=0, max_size=1))


def bad_rack() -> None:
    gke_pool("a4x-big", "a4x-maxgpu-4g-metal", nodes=20)
    gke_pool("a4x-autoscaled", "a4x-maxgpu-4g-metal", nodes=2, max_nodes=36)
    gke_pool("a4x-unpinned", "a4x-maxgpu-4g-metal", reservation="projects/p/reservations/k3")
    aks_pool("gb300-big", count=19)


# --- weight-bucket-private-encrypted -------------------------------------------------------------------------


def good_buckets() -> None:
    gcp.storage.Bucket("gcs", name="w", location="US", uniform_bucket_level_access=True,
                       public_access_prevention="enforced")
    s3 = aws.s3.Bucket("s3", bucket="w")
    aws.s3.BucketPublicAccessBlock("s3-block", bucket=s3.id, block_public_acls=True, block_public_policy=True,
                                   ignore_public_acls=True, restrict_public_buckets=True)
    azure.storage.StorageAccount("account", resource_group_name="rg", account_name="w", kind="StorageV2",
                                 sku=azure.storage.SkuArgs(name="Standard_LRS"), allow_blob_public_access=False)
    azure.storage.BlobContainer("container", resource_group_name="rg", account_name="w", container_name="m",
                                public_access=azure.storage.PublicAccess.NONE)
    alicloud.oss.Bucket("oss", bucket="w", server_side_encryption_rule=alicloud.oss.BucketServerSideEncryptionRuleArgs(
        sse_algorithm="AES256"))


def bad_buckets() -> None:
    gcs = gcp.storage.Bucket("gcs-open", name="w", location="US")
    gcp.storage.BucketIAMMember("gcs-open-public", bucket=gcs.name, role="roles/storage.objectViewer", member="allUsers")
    aws.s3.Bucket("s3-unblocked", bucket="w2")
    azure.storage.StorageAccount("account-open", resource_group_name="rg", account_name="w", kind="StorageV2",
                                 sku=azure.storage.SkuArgs(name="Standard_LRS"), allow_blob_public_access=True)
    azure.storage.BlobContainer("container-open", resource_group_name="rg", account_name="w", container_name="m",
                                public_access=azure.storage.PublicAccess.BLOB)
    alicloud.oss.Bucket("oss-plain", bucket="w3")


# --- public-endpoint-restricted and startup-budget-covers-load ---------------------------------------------------


def vllm_deployment(name: str, *, api_key: bool = True, startup_seconds: int | None = 3000,
                    liveness_seconds: int | None = None, labels: dict[str, str] | None = None) -> None:
    env = [k8s.core.v1.EnvVarArgs(name="VLLM_API_KEY", value_from=k8s.core.v1.EnvVarSourceArgs(
        secret_key_ref=k8s.core.v1.SecretKeySelectorArgs(name="api-key", key="key")))] if api_key else []
    probe = lambda seconds: k8s.core.v1.ProbeArgs(  # noqa: E731
        http_get=k8s.core.v1.HTTPGetActionArgs(path="/health", port=8000), period_seconds=10,
        failure_threshold=seconds // 10)
    labels = labels or {"app": name}
    k8s.apps.v1.Deployment(
        name, metadata=k8s.meta.v1.ObjectMetaArgs(name=name, namespace="k3"),
        spec=k8s.apps.v1.DeploymentSpecArgs(
            selector=k8s.meta.v1.LabelSelectorArgs(match_labels=labels),
            template=k8s.core.v1.PodTemplateSpecArgs(
                metadata=k8s.meta.v1.ObjectMetaArgs(labels=labels),
                spec=k8s.core.v1.PodSpecArgs(
                    containers=[k8s.core.v1.ContainerArgs(
                        name="engine", image="vllm/vllm-openai:v0.11.0",
                        command=["vllm", "serve", "/mnt/models/Kimi-K3"],
                        args=["--served-model-name", "Kimi-K3", "--tensor-parallel-size", "8"],
                        env=env,
                        volume_mounts=[k8s.core.v1.VolumeMountArgs(name="weights", mount_path="/mnt/models")],
                        startup_probe=probe(startup_seconds) if startup_seconds else None,
                        liveness_probe=probe(liveness_seconds) if liveness_seconds else None)],
                    volumes=[k8s.core.v1.VolumeArgs(name="weights", csi=k8s.core.v1.CSIVolumeSourceArgs(
                        driver="gcsfuse.csi.storage.gke.io", volume_attributes={"bucketName": "w"}))]))))


def service(name: str, app: str, *, internal: bool = False, ranges: list[str] | None = None) -> None:
    annotations = {"networking.gke.io/load-balancer-type": "Internal"} if internal else None
    k8s.core.v1.Service(
        name, metadata=k8s.meta.v1.ObjectMetaArgs(name=name, namespace="k3", annotations=annotations),
        spec=k8s.core.v1.ServiceSpecArgs(type="LoadBalancer", selector={"app": app}, load_balancer_source_ranges=ranges,
                                         ports=[k8s.core.v1.ServicePortArgs(port=8000)]))


def good_endpoints() -> None:
    vllm_deployment("server")
    service("internal", "server", internal=True)
    service("public", "server", ranges=["203.0.113.0/24"])
    vllm_deployment("open-server", api_key=False)
    service("open-but-internal", "open-server", internal=True)


def bad_endpoints() -> None:
    vllm_deployment("server")
    vllm_deployment("open-server", api_key=False)
    service("no-ranges", "server")
    service("everyone", "server", ranges=["0.0.0.0/0"])
    service("no-auth", "open-server", ranges=["203.0.113.0/24"])
    service("nothing-behind", "missing", ranges=["203.0.113.0/24"])


def good_startup() -> None:
    vllm_deployment("server", startup_seconds=3000)
    vllm_deployment("no-probes", startup_seconds=None)  # nothing kills it while it loads


def bad_startup() -> None:
    vllm_deployment("short-startup", startup_seconds=600)
    vllm_deployment("liveness-only", startup_seconds=None, liveness_seconds=900)


# --- capacity-purchase-flagged --------------------------------------------------------------------------------


def bad_purchases() -> None:
    aws.ec2.CapacityBlockReservation("block", capacity_block_offering_id="cb-0123456789abcdef0",
                                     instance_platform="Linux/UNIX")
    azure.compute.CapacityReservation(
        "reservation", resource_group_name="rg", capacity_reservation_group_name="k3",
        capacity_reservation_name="gb300", location="eastus2", zones=["1"],
        sku=azure.compute.SkuArgs(name="Standard_ND128isr_GB300_v6", capacity=2))


def exports() -> None:
    pulumi.export("ok", True)


def lws(name: str, worker_liveness_seconds: int) -> None:
    """A LeaderWorkerSet of 2 (002 §4.4): the leader serves, the worker is a Ray worker with a liveness probe."""
    def pod(role: str, command: list[str], probe: dict | None) -> dict:
        container: dict = {"name": "engine", "image": "vllm/vllm-openai:v0.11.0", "command": command,
                           "volumeMounts": [{"name": "weights", "mountPath": "/mnt/models"}]}
        if probe:
            container[f"{role}Probe"] = probe
        return {"metadata": {"labels": {"app": name}}, "spec": {
            "containers": [container],
            "volumes": [{"name": "weights", "csi": {"driver": "gcsfuse.csi.storage.gke.io"}}]}}

    k8s.apiextensions.CustomResource(
        name, api_version="leaderworkerset.x-k8s.io/v1", kind="LeaderWorkerSet",
        metadata=k8s.meta.v1.ObjectMetaArgs(name=name, namespace="k3"),
        spec={"replicas": 1, "leaderWorkerTemplate": {
            "size": 2,
            "leaderTemplate": pod("startup", ["vllm", "serve", "/mnt/models/Kimi-K3", "--served-model-name", "Kimi-K3"],
                                  {"httpGet": {"path": "/health", "port": 8000}, "periodSeconds": 10,
                                   "failureThreshold": 300}),
            "workerTemplate": pod("liveness", ["bash", "multi-node-serving.sh", "worker"],
                                  {"exec": {"command": ["ray", "status"]}, "periodSeconds": 10,
                                   "failureThreshold": worker_liveness_seconds // 10}),
        }})


def gateway(name: str, cls: str) -> None:
    k8s.apiextensions.CustomResource(
        name, api_version="gateway.networking.k8s.io/v1", kind="Gateway",
        metadata=k8s.meta.v1.ObjectMetaArgs(name=name, namespace="k3"),
        spec={"gatewayClassName": cls, "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]})


def good_lws_and_gateway() -> None:
    lws("lws", worker_liveness_seconds=3000)
    gateway("internal-gw", "gke-l7-rilb")


def bad_lws_and_gateway() -> None:
    lws("lws-short-worker", worker_liveness_seconds=300)
    gateway("public-gw", "gke-l7-global-external-managed")


def bad_managed_serving() -> None:
    """Managed serving with deadlines shorter than the load: a HyperPod endpoint and a PAI-EAS service."""
    import json

    k8s.apiextensions.CustomResource(
        "iec", api_version="inference.sagemaker.aws.amazon.com/v1", kind="InferenceEndpointConfig",
        metadata=k8s.meta.v1.ObjectMetaArgs(name="k3", namespace="k3"),
        spec={"modelName": "Kimi-K3", "instanceType": "ml.p6-b300.48xlarge", "maxDeployTimeInSeconds": 600,
              "modelSourceConfig": {"modelSourceType": "s3", "prefetchEnabled": True,
                                    "s3Storage": {"bucketName": "w", "region": "us-west-2"}},
              "worker": {"image": "vllm/vllm-openai:v0.11.0", "args": ["--served-model-name", "Kimi-K3"],
                         "modelInvocationPort": {"containerPort": 8000, "name": "http"},
                         "modelVolumeMount": {"name": "model", "mountPath": "/opt/ml/model"},
                         "resources": {}}})
    alicloud.pai.Service("eas", develop="false", service_config=json.dumps({
        "metadata": {"name": "k3", "instance": 1},
        "unit": {"size": 3},
        "storage": [{"mount_path": "/mnt/models/Kimi-K3", "oss": {"path": "oss://w/models/", "readOnly": True}}],
        "containers": [{"image": "vllm/vllm-openai:v0.11.0", "port": 8000,
                        "script": "vllm serve /mnt/models/Kimi-K3 --served-model-name Kimi-K3",
                        "health_check": {"http_get": {"path": "/health", "port": 8000}, "period_seconds": 30,
                                         "failure_threshold": 10}}]}))


def bad_nvme_endpoint() -> None:
    """A HyperPod endpoint on the node's NVMe (kubernetesVolume) whose deadline cannot hold the fill from S3."""
    k8s.apiextensions.CustomResource(
        "iec-nvme", api_version="inference.sagemaker.aws.amazon.com/v1", kind="InferenceEndpointConfig",
        metadata=k8s.meta.v1.ObjectMetaArgs(name="k3", namespace="k3"),
        spec={"modelName": "Kimi-K3", "instanceType": "ml.p6-b300.48xlarge", "maxDeployTimeInSeconds": 600,
              "modelSourceConfig": {"modelSourceType": "kubernetesVolume"},
              "kubernetes": {"volumes": [{"name": "model", "hostPath": {"path": "/opt/dlami/nvme/k3"}}]},
              "worker": {"image": "vllm/vllm-openai:v0.11.0", "args": ["--served-model-name", "Kimi-K3"],
                         "modelInvocationPort": {"containerPort": 8000, "name": "http"},
                         "modelVolumeMount": {"name": "model", "mountPath": "/opt/ml/model"},
                         "resources": {}}})


def bad_iam() -> None:
    """Broad grants on every cloud, and scoped ones that must pass."""
    wide = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": "s3:*", "Resource": "arn:aws:s3:::weights/*"},
        {"Effect": "Allow", "Action": ["s3:PutObject"], "Resource": "*"},
        {"Effect": "Deny", "Action": "*", "Resource": "*"},
    ]}
    scoped = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": ["s3:GetObject"], "Resource": "arn:aws:s3:::weights/*"},
        {"Effect": "Allow", "Action": ["ec2:Describe*"], "Resource": "*"},
    ]}
    aws.iam.Policy("wide", policy=json.dumps(wide))
    aws.iam.Policy("scoped", policy=json.dumps(scoped))
    aws.iam.RolePolicyAttachment("admin", role="r", policy_arn="arn:aws:iam::aws:policy/AdministratorAccess")
    gcp.storage.BucketIAMMember("public-read", bucket="b", role="roles/storage.objectViewer", member="allUsers")
    gcp.projects.IAMMember("editor", project="p", role="roles/editor", member="serviceAccount:x@p.iam.gserviceaccount.com")
    azure.authorization.RoleAssignment(
        "owner", principal_id="00000000-0000-0000-0000-000000000001", scope="/subscriptions/s/resourceGroups/rg",
        role_definition_id="/subscriptions/s/providers/Microsoft.Authorization/roleDefinitions/"
                           "8e3af657-a8ff-443c-a75c-2fe8c4bcb635")
    azure.authorization.RoleAssignment(
        "contributor-everywhere", principal_id="00000000-0000-0000-0000-000000000001", scope="/subscriptions/s",
        role_definition_id="/subscriptions/s/providers/Microsoft.Authorization/roleDefinitions/"
                           "b24988ac-6180-42a0-ab88-20f7382dd24c")
    alicloud.ram.Policy("oss-all", policy_name="oss-all", policy_document=json.dumps(
        {"Version": "1", "Statement": [{"Effect": "Allow", "Action": ["oss:*"], "Resource": ["acs:oss:*:*:b"]}]}))


def role_permissions() -> None:
    """A node group that takes its role's ARN but not its attachments (fires), one that waits for them, an add-on
    whose pod identity waits for its inline policy, and an access entry that only names a role (both pass)."""
    trust = json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}]})
    node = aws.iam.Role("node", assume_role_policy=trust)
    worker = aws.iam.RolePolicyAttachment("node-worker", role=node.name,
                                          policy_arn="arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy")
    scaling = dict(desired_size=1, min_size=1, max_size=1)
    aws.eks.NodeGroup("early", cluster_name="k3", node_role_arn=node.arn, subnet_ids=["s"],
                      scaling_config=aws.eks.NodeGroupScalingConfigArgs(**scaling))
    aws.eks.NodeGroup("after", cluster_name="k3", node_role_arn=node.arn, subnet_ids=["s"],
                      scaling_config=aws.eks.NodeGroupScalingConfigArgs(**scaling),
                      opts=pulumi.ResourceOptions(depends_on=[worker]))
    driver = aws.iam.Role("driver", assume_role_policy=trust)
    read = aws.iam.RolePolicy("driver-read", role=driver.id, policy=json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": ["s3:GetObject"], "Resource": "arn:aws:s3:::weights/*"}]}))
    aws.eks.Addon("mountpoint", cluster_name="k3", addon_name="aws-mountpoint-s3-csi-driver",
                  pod_identity_associations=[aws.eks.AddonPodIdentityAssociationArgs(
                      role_arn=driver.arn, service_account="s3-csi-driver-sa")],
                  opts=pulumi.ResourceOptions(depends_on=[read]))
    aws.eks.AccessEntry("driver-access", cluster_name="k3", principal_arn=driver.arn)
