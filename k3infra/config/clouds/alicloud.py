"""Alibaba Cloud configuration rules beyond the cloud-neutral ones.

- Export controls: no export-controlled GPU (Blackwell, H100/H200) in a China region (002 §6.1).
- PAI-EAS runs on a resource you hold: a Lingjun quota for a multi-machine replica (002 §6.2), or an EAS
  dedicated resource group for a replica that fits one machine; never without one.
- The weight bucket lives in the stack's region: k3infra creates it there, and both the OSS CSI mount and
  EAS read it through that region's internal endpoint.
- Settings that apply to one Alibaba platform only are rejected on the other.
- The ACK GPU driver pin is a version ACK installs by node label (catalog.ack), and never on Lingjun nodes, whose
  OS image carries the driver.
- Images: an Alibaba registry host is one of ACR's three real forms (k3infra.catalog.acr), or a configuration
  error. PAI-EAS pulls only from an ACR VPC endpoint in the stack's region (EAS has no internet access by default);
  ACK takes ACR images, rejects another region's VPC endpoint and a new Personal instance's public one, and warns
  on a Docker Hub image in a China region. A new Personal instance needs k3infra:registryAuth on PAI-EAS and is
  refused on ACK, whose nodes pull with the managed credential helper the stack installs (catalog.ack), which does
  not serve it; an Enterprise VPC endpoint needs alicloud.acrInstanceId, so the stack puts its VPCs on the
  instance's ACL, and so does any Enterprise image on ACK, for the credential helper.
"""

import re
from typing import Any

from ...catalog import CapacityType, Platform
from ...catalog.acr import AcrEdition, AcrEndpoint, parse_acr_host, vpc_forms
from ...catalog.ack import (ACK_NVIDIA_DRIVERS, ACR_HELPER_ADDON, ACR_HELPER_EDITIONS, ACR_HELPER_PAGE,
                            ACR_HELPER_ROLE, LINGJUN_DRIVER_NOTE, ack_driver_problem)
from ..model import AlicloudConfig
from ..problems import Problems
from ..schema import MISSING, NAMESPACE
from .common import CheckContext, given, maintenance_window, window_text

K = NAMESPACE + ":"

EXPORT_CONTROLLED_GPUS = frozenset({"B200", "B300", "GB200", "GB300", "H100", "H200"})
"""GPU models US export rules bar from China (BIS advanced-computing rules of Oct 2022 / Oct 2023 and later).

Policy knowledge, not a vendor page (docs/catalog-research.md §1.8); 002 §6.1 states it for B300. The H20
class (``ecs.ebmgn8v.48xlarge``) was designed under the threshold and is sold in China.
"""

CHINA_REGION_PREFIX = "cn-"
"""Alibaba Cloud region ids in China start with ``cn-``; ``cn-hongkong`` is included because US export rules
treat Hong Kong as China."""

OSS_ENDPOINT = re.compile(
    r"(?:[a-z]+://)?(?P<bucket>[a-z0-9][a-z0-9-]*)\.oss-(?P<region>[a-z]+-[a-z0-9-]+?)(?:-internal)?\.aliyuncs\.com(?:/.*)?"
)
"""A bucket written as its endpoint host (``name.oss-cn-beijing[-internal].aliyuncs.com``), as the console shows it."""

MIN_KUBERNETES = (1, 26)
"""RRSA-authenticated OSS volumes need Kubernetes 1.26 or later (ACK doc "Use dynamically provisioned OSS volumes":
RRSA row; ossfs 2.0 likewise)."""

SYNC_HOWTO = "upload the weights beforehand (002 §6.2 step 4; docs/alicloud.md: ossutil cp)"

DOCKER_HUB_HOSTS = frozenset({"docker.io", "index.docker.io", "registry-1.docker.io"})

EAS_NO_INTERNET = ("PAI-EAS services have no internet access by default and EAS pulls images from Container Registry "
                   "over the VPC (PAI docs: \"Configure Internet access\": \"By default, EAS services do not support "
                   "Internet access\"; \"Deploy a model service by using a custom image\": \"Don't pull images from "
                   "the public internet\")")
"""Why a PAI-EAS image must come from a VPC registry endpoint. The alternative, an Internet NAT gateway with an EIP
and an SNAT entry for the service's vSwitch, is documented in docs/alicloud.md and not built: a ~20 GB image
over NAT to every machine, Docker Hub's pull limits, and internet egress from the serving machines."""


def image_host(image: str) -> str:
    """The registry host of an image reference (``docker.io`` for a Docker Hub short name)."""
    first, _, rest = image.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        return first
    return "docker.io"


def acr_endpoint(image: str) -> AcrEndpoint | None:
    """The ACR endpoint an image is pulled from, or None when the image is not on ACR."""
    return parse_acr_host(image_host(image))


def looks_like_acr(image: str) -> bool:
    """An Alibaba Cloud host that is none of ACR's forms (``registry-vpc.REGION.cr.aliyuncs.com`` is one such)."""
    host = image_host(image)
    return host.endswith(".aliyuncs.com") and "registry" in host or host.endswith(".cr.aliyuncs.com")


def is_docker_hub(image: str) -> bool:
    """True for an image pulled from Docker Hub."""
    return image_host(image) in DOCKER_HUB_HOSTS


def gpu_family(gpu_model: str) -> str:
    """The GPU model's family token: ``H20-class (96 GB)`` is ``H20``, ``GB300`` is ``GB300``."""
    return gpu_model.split()[0].removesuffix("-class") if gpu_model else ""


def is_china_region(region: str) -> bool:
    """True for Alibaba Cloud regions in China (mainland and Hong Kong)."""
    return region.startswith(CHINA_REGION_PREFIX)


def bucket_endpoint_region(bucket: str) -> str | None:
    """The region an OSS endpoint-style bucket string names (``x.oss-cn-beijing.aliyuncs.com``), else None."""
    m = OSS_ENDPOINT.fullmatch(bucket)
    return m.group("region") if m else None


def check(ctx: CheckContext, p: Problems, warnings: list[str]) -> None:
    """Report Alibaba Cloud-specific problems in ``ctx``."""
    _export_controls(ctx, p, warnings)
    _bucket_region(ctx, p)
    _image(ctx, p, warnings)
    if ctx.platform == Platform.PAI_EAS:
        _pai(ctx, p, warnings)
    elif ctx.platform == Platform.ACK:
        _ack(ctx, p, warnings)


def _section(ctx: CheckContext, name: str) -> dict[str, Any]:
    value = ctx.values.get(name)
    return value if isinstance(value, dict) else {}


def _given(value: Any) -> bool:
    return value is not None and value is not MISSING


def _export_controls(ctx: CheckContext, p: Problems, warnings: list[str]) -> None:
    accel, region = ctx.accelerator, ctx.region
    if accel is None or region is None or gpu_family(accel.gpu_model) not in EXPORT_CONTROLLED_GPUS:
        return
    if is_china_region(region):
        p.add(K + "accelerator",
              f"{accel.sku} carries {accel.gpu_model} GPUs, which US export controls bar from China, and {region} is "
              "a China region (002 §6.1: no B300-class GPUs in mainland regions; Hong Kong counts as China)",
              accel.sku, "a region outside China (e.g. ap-southeast-1, after sales confirm stock), or an H20-class "
              "SKU such as ecs.ebmgn8v.48xlarge")
    else:
        warnings.append(f"{accel.sku} ({accel.gpu_model}) outside China is sold only after individual confirmation "
                        "by an Alibaba Cloud sales representative (002 §6.1)")


def _bucket_region(ctx: CheckContext, p: Problems) -> None:
    bucket = _section(ctx, "weights").get("bucket")
    if not isinstance(bucket, str) or ctx.region is None:
        return
    elsewhere = bucket_endpoint_region(bucket)
    if elsewhere is None:
        return
    m = OSS_ENDPOINT.fullmatch(bucket)
    name = m.group("bucket") if m else bucket
    if elsewhere != ctx.region:
        p.add(K + "weights.bucket",
              f"names a bucket in {elsewhere}, and this stack deploys to {ctx.region}: k3infra creates the bucket in "
              "the stack's region and both the OSS CSI mount and PAI-EAS read it through that region's internal "
              "endpoint; copy the weights across regions first (ossutil cp)", bucket,
              f"a bucket name such as {name!r}, created in {ctx.region}")


def _image(ctx: CheckContext, p: Problems, warnings: list[str]) -> None:
    given_image = ctx.values.get("image")
    image = given_image if isinstance(given_image, str) else (ctx.engine.default_image if ctx.engine else None)
    region = ctx.region
    if image is None or region is None or K + "image" in p.keys():
        return
    acr = acr_endpoint(image)
    forms = vpc_forms(region)
    if acr is None and looks_like_acr(image):
        p.add(K + "image", f"names {image_host(image)}, which is no Container Registry endpoint: Personal Edition "
              "hosts are registry[-vpc].REGION.aliyuncs.com (instances before 2024-09-09) or "
              "crpi-ID[-vpc].REGION.personal.cr.aliyuncs.com, Enterprise Edition hosts "
              "INSTANCE-registry[-vpc].REGION.cr.aliyuncs.com (ACR docs: \"Terms\", \"Personal Edition instance "
              "exclusive endpoint\")", image, forms)
        return
    if ctx.platform == Platform.PAI_EAS:
        if acr is None or not acr.vpc or acr.region != region:
            where = ("a Container Registry internet endpoint" if acr and not acr.vpc else
                     f"a Container Registry VPC endpoint in {acr.region}" if acr else f"on {image_host(image)}")
            p.add(K + "image", f"is {where}, and {EAS_NO_INTERNET}: mirror the image into ACR in {region} (002 §6.2 "
                  "step 3) and give its VPC address", image, forms)
            return
    elif acr is not None and acr.vpc and acr.region != region:
        p.add(K + "image", f"is a Container Registry VPC endpoint in {acr.region}, which resolves only inside "
              f"{acr.region}'s VPCs, and the cluster is in {region}", image, forms)
        return
    elif acr is not None and not acr.can_pull:
        p.add(K + "image", "is the internet endpoint of a Personal Edition instance created since 2024-09-09, which "
              "serves no pulls (ACR: \"Public endpoints cannot be used to pull images\")", image, forms)
        return
    _registry_access(ctx, image, acr, p, warnings)
    if ctx.platform != Platform.PAI_EAS and is_docker_hub(image) and is_china_region(region):
        warnings.append(f"image {image} comes from Docker Hub, and {region} is a China region: the "
                        f"{ctx.sizing.total_nodes if ctx.sizing else 'GPU'} GPU nodes pull ~20 GB each over the NAT "
                        "gateway, slowly, under Docker Hub's rate limits, when they reach it at all; mirror it to "
                        f"Container Registry (002 §6.2 step 3) and set k3infra:image to its VPC address, {forms}")


def _registry_access(ctx: CheckContext, image: str, acr: AcrEndpoint | None, p: Problems,
                     warnings: list[str]) -> None:
    """What pulling ``image`` needs beyond its address: a secret, or the stack's VPCs on an Enterprise ACL."""
    a = _section(ctx, "alicloud")
    auth, instance_id = ctx.values.get("registryAuth"), a.get("acrInstanceId")
    pai = ctx.platform == Platform.PAI_EAS
    if pai and isinstance(auth, str) and (":" not in auth or auth.startswith(":") or auth.endswith(":")):
        p.add(K + "registryAuth", "must be USERNAME:PASSWORD (k3infra sends its Base64 as the service's dockerAuth)",
              "[secret]", "USERNAME:PASSWORD, set with `pulumi config set --secret registryAuth`")
    if pai and acr is not None and acr.needs_secret and not _given(auth):
        p.add(K + "registryAuth", f"is required: the image {image} is on a Personal Edition instance created since "
              "2024-09-09, which refuses anonymous pulls (ACR: \"A secret is required to pull images\"), so EAS "
              "needs dockerAuth", None, "USERNAME:PASSWORD of an account that may pull it, set with `pulumi config "
              "set --secret registryAuth`")
    _instance_id(ctx, acr, instance_id, p)
    if not pai and acr is not None:
        _ack_pull_credentials(ctx, image, acr, p, warnings)


def _instance_id(ctx: CheckContext, acr: AcrEndpoint | None, instance_id: Any, p: Problems) -> None:
    """The Enterprise instance's id: for its VPC ACL where the image is on its VPC endpoint, and on ACK for the
    credential helper too ("InstanceId ... required for an Enterprise Edition instance", catalog.ack)."""
    pai = ctx.platform == Platform.PAI_EAS
    enterprise = acr is not None and acr.edition == AcrEdition.ENTERPRISE
    used = enterprise and acr is not None and (acr.vpc or not pai)
    if _given(instance_id) and not used:
        p.add(K + "alicloud.acrInstanceId", "names the Enterprise Edition instance of the image, and the image is not "
              "on an Enterprise Edition " + ("VPC endpoint" if pai else "instance"), instance_id,
              f"unset, or an image INSTANCE-registry-vpc.{ctx.region}.cr.aliyuncs.com/...")
    elif used and acr is not None and not _given(instance_id):
        why = ([f"the image is on Enterprise Edition instance {acr.instance}'s VPC endpoint, which resolves only in "
                "VPCs on the instance's access control list (ACR: \"Configure a VPC ACL\"), and the stack creates its "
                "VPC: it adds it with cr.VpcEndpointLinkedVpc"] if acr.vpc else [])
        if not pai:
            why.append(f"ACK's nodes pull it with the {ACR_HELPER_ADDON} add-on, which needs the instance id of an "
                       f"Enterprise instance ({ACR_HELPER_PAGE})")
        p.add(K + "alicloud.acrInstanceId", "is required: " + "; and ".join(why), None,
              "the instance id, cri-... (Container Registry console, instance overview)")


def _ack_pull_credentials(ctx: CheckContext, image: str, acr: AcrEndpoint, p: Problems, warnings: list[str]) -> None:
    """ACK's nodes pull from ACR with the credentials of the managed credential helper the stack installs, which
    serves Enterprise instances and Personal ones created before 2024-09-09 only (catalog.ack)."""
    if acr.edition not in ACR_HELPER_EDITIONS:
        p.add(K + "image", "is on a Personal Edition instance created since 2024-09-09, which refuses anonymous pulls "
              f"(ACR: \"A secret is required to pull images\"), and ACK's {ACR_HELPER_ADDON} add-on, which gives the "
              "nodes their registry credentials, serves only Enterprise Edition instances and Personal ones created "
              f"on or before 2024-09-08 ({ACR_HELPER_PAGE})", image,
              f"an image on an Enterprise Edition instance (with alicloud.acrInstanceId) or on a Personal Edition "
              f"instance created before 2024-09-09: {vpc_forms(ctx.region or 'REGION')}")
        return
    namespace = ctx.values.get("namespace")
    warnings.append(f"image {image} is on Container Registry: the stack installs ACK's {ACR_HELPER_ADDON} add-on, "
                    f"which gives the service accounts of namespace {namespace} short-lived credentials for "
                    f"{image_host(image)} only and pulls with ACK's {ACR_HELPER_ROLE} role: authorize that role once "
                    f"per account in the RAM console, or the add-on fails its precheck ({ACR_HELPER_PAGE})")


ACK_ONLY = ("upgradeChannel", "nodeAutoUpgrade", "publicApiServer", "maintenanceWindow")
"""Alibaba settings of the ACK cluster: a PAI-EAS stack that sets one is told it does nothing there."""


def _ack_upgrades(ctx: CheckContext, a: dict[str, Any], p: Problems, warnings: list[str]) -> None:
    """ACK's channels default to none/false: nothing upgrades a GPU node behind the serving replica's back."""
    cluster = ctx.cluster
    when = window_text(a.get("maintenanceWindow"))
    channel = a.get("upgradeChannel")
    if isinstance(channel, str) and channel != "none":
        if cluster is not None and cluster.kubernetes_version:
            p.add(K + "cluster.kubernetesVersion", f"alicloud.upgradeChannel {channel} moves the Kubernetes version, "
                  "and ACK asks for no version with cluster auto-upgrade (cs.ManagedKubernetes version: \"Do not "
                  "specify if cluster auto upgrade is enabled\")", cluster.kubernetes_version,
                  "unset (ACK's latest at creation, then the channel's)")
        warnings.append(f"alicloud.upgradeChannel {channel}: ACK upgrades the control plane on {when}; node pools "
                        "follow only with alicloud.nodeAutoUpgrade")
    if a.get("nodeAutoUpgrade") is True:
        warnings.append(f"alicloud.nodeAutoUpgrade: ACK upgrades kubelet and the runtime and fixes CVEs, restarting "
                        f"nodes, on {when}; a GPU node's restart stops the replica it serves until it reloads the "
                        "weights")


def _driver(ctx: CheckContext, a: dict[str, Any], p: Problems) -> None:
    """The pinned driver is one ACK installs by node label, on a node pool that takes the label."""
    key, version = K + "alicloud.gpuDriverVersion", a.get("gpuDriverVersion")
    if not isinstance(version, str) or key in p.keys():
        return
    cap = ctx.capacity
    if cap is not None and cap.type == CapacityType.LINGJUN:
        p.add(key, LINGJUN_DRIVER_NOTE, version, "unset with capacity type lingjun (the node group's OS image decides)")
        return
    why = ack_driver_problem(version)
    if why:
        p.add(key, why, version, f"one of {', '.join(ACK_NVIDIA_DRIVERS.supported)}, or unset for ACK's default "
              f"{ACK_NVIDIA_DRIVERS.default}")


def _pai(ctx: CheckContext, p: Problems, warnings: list[str]) -> None:
    a = _section(ctx, "alicloud")
    group, workspace = a.get("paiResourceGroup"), a.get("paiWorkspaceId")
    capacity = _section(ctx, "capacity")
    ctype = capacity.get("type") if _given(capacity.get("type")) else None
    nodes = ctx.sizing.nodes if ctx.sizing else None
    sku = ctx.accelerator.sku if ctx.accelerator else "GPU"
    quota_hint = "quota... (a Lingjun resource quota, with capacity type lingjun) or eas-r-... (an EAS dedicated resource group)"

    if ctype == CapacityType.PRIVATE_POOL:
        p.add(K + "capacity.type", "ECS private pools feed ACK node pools; a PAI-EAS service draws on its EAS "
              "resource group or Lingjun quota", str(ctype), "lingjun (with a quota... in alicloud.paiResourceGroup)")
    if group is None:
        p.add(K + "alicloud.paiResourceGroup",
              "is required on platform pai-eas: the service runs on a dedicated EAS resource group or a Lingjun "
              "resource quota you hold (002 §6.2), never on shared public resources", None, quota_hint)
    elif isinstance(group, str):
        quota = group.startswith("quota")
        if not quota and nodes is not None and nodes > 1:
            p.add(K + "alicloud.paiResourceGroup",
                  f"is an EAS dedicated resource group, and one replica spans {nodes} {sku} machines: distributed "
                  "deployment over several machines requires Lingjun resources and a quota (002 §6.2)", group,
                  "a Lingjun resource quota id (quota...) with capacity type lingjun")
        elif K + "capacity.type" in p.keys():
            pass  # the capacity type is already wrong for PAI-EAS
        elif quota and ctype is not None and ctype != CapacityType.LINGJUN:
            p.add(K + "capacity.type", f"alicloud.paiResourceGroup {group} is a Lingjun quota, so the GPUs come from "
                  "Lingjun resources", str(ctype), "lingjun")
        elif not quota and ctype == CapacityType.LINGJUN:
            p.add(K + "capacity.type", f"capacity type lingjun means a Lingjun quota, and alicloud.paiResourceGroup "
                  f"{group} is an EAS dedicated resource group", str(ctype), "on-demand (machines bought into the EAS "
                  "resource group), or a quota... in alicloud.paiResourceGroup")
        if quota and workspace is None:
            p.add(K + "alicloud.paiWorkspaceId", "is required with a Lingjun quota: the quota is granted to a PAI "
                  "workspace and the service must be created in it", None, "the numeric id of that workspace")

    for name in ("lingjunClusterId", "lingjunNodeGroupId"):
        if _given(capacity.get(name)):
            p.add(K + f"capacity.{name}", "names an EFLO node group for an ACK Lingjun node pool; PAI-EAS draws on a "
                  "Lingjun resource quota instead", capacity[name], "unset; put the quota id in "
                  "k3infra:alicloud.paiResourceGroup")

    for name in ACK_ONLY:
        if given(ctx, "alicloud", name):
            p.add(K + f"alicloud.{name}", "applies to ACK clusters; a PAI-EAS service has none", a[name], "unset")

    held, replicas = a.get("paiResourceMachines"), ctx.values.get("replicas")
    if isinstance(held, int) and nodes is not None and isinstance(replicas, int) and held < nodes * replicas:
        p.add(K + "alicloud.paiResourceMachines", f"the service needs {nodes * replicas} machines ({replicas} "
              f"replica(s) of {nodes} {sku}), more than the quota or resource group holds", held,
              f"at least {nodes * replicas}; {nodes * (replicas + 1)} lets an update start a unit beside the old")

    weights = _section(ctx, "weights")
    if weights.get("sync") is True:
        p.add(K + "weights.sync", f"PAI-EAS has no Kubernetes cluster to run the sync Job: {SYNC_HOWTO}", True, "false")
    if _given(a.get("gpuDriverVersion")):
        warnings.append("alicloud.gpuDriverVersion is not applied on pai-eas: the EAS service JSON has no confirmed "
                        "driver field; choose the driver in the EAS console (002 §6.2 step 8)")


def _ack(ctx: CheckContext, p: Problems, warnings: list[str]) -> None:
    a = _section(ctx, "alicloud")
    version = _section(ctx, "cluster").get("kubernetesVersion")
    if isinstance(version, str):
        m = re.match(r"(\d+)\.(\d+)", version)
        if m and (int(m.group(1)), int(m.group(2))) < MIN_KUBERNETES:
            p.add(K + "cluster.kubernetesVersion", "the weights are mounted through an RRSA-authenticated OSS volume, "
                  "which needs Kubernetes 1.26 or later on ACK", version, "1.26 or later (default: ACK's latest)")
    for name in ("paiResourceGroup", "paiWorkspaceId", "paiResourceMachines"):
        if _given(a.get(name)):
            p.add(K + f"alicloud.{name}", "applies to platform pai-eas; this stack runs on ACK", a[name], "unset")
    _ack_upgrades(ctx, a, p, warnings)
    _driver(ctx, a, p)
    cap = ctx.capacity
    if cap is not None and cap.type == CapacityType.LINGJUN and ctx.accelerator is not None:
        warnings.append(f"capacity type lingjun: the node pool takes the machines of EFLO node group "
                        f"{cap.lingjun_node_group_id}, and the sizing assumes {ctx.accelerator.sku} "
                        f"({ctx.accelerator.gpus_per_node} x {ctx.accelerator.gpu_memory_gb:g} GB): check that the "
                        "node group's machines match")


def settings(v: dict[str, Any], region: str) -> AlicloudConfig:
    """The typed ``k3infra:alicloud`` section."""
    a = v["alicloud"]
    return AlicloudConfig(region=region, pai_resource_group=a.get("paiResourceGroup"),
                          pai_workspace_id=a.get("paiWorkspaceId"), pai_resource_machines=a.get("paiResourceMachines"),
                          acr_instance_id=a.get("acrInstanceId"),
                          gpu_driver_version=a.get("gpuDriverVersion"),
                          vpc_cidr=a["vpcCidr"], upgrade_channel=a["upgradeChannel"],
                          node_auto_upgrade=bool(a["nodeAutoUpgrade"]),
                          maintenance_window=maintenance_window(a["maintenanceWindow"]),
                          public_api_server=bool(a["publicApiServer"]))
