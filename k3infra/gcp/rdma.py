"""GPUDirect RDMA plumbing for A4 / A3 Ultra pools (000): the extra VPCs, the Kubernetes network objects, the NCCL plugin.

An A4 node has 2 gVNIC NICs and 8 RDMA NICs (CX-7, RoCE v2). GKE attaches them as additional node networks:
one second gVNIC VPC and one RoCE VPC (network profile ``{zone}-vpc-roce``) with a subnet per RDMA NIC.
Pods reach the RDMA NICs through GKE multi-networking: each subnet is a ``GKENetworkParamSet`` (device mode
RDMA) behind a ``Network`` object ``rdma-N``, and the pod annotation ``networking.gke.io/interfaces`` maps
``eth2..eth9`` to ``rdma-0..rdma-7`` exactly as seed 000's StatefulSet does. The gIB NCCL plugin is copied
onto every GPU node by a DaemonSet into ``/home/kubernetes/bin/gib``, which 000 mounts at ``/usr/local/gib``.
"""

import ipaddress
import json
from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from ..serving.scan import skip_annotations
from .cluster import VPC_MTU

GIB_IMAGE = "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib:v1.1.0"
"""The gIB NCCL plugin installer (cluster-toolkit ``examples/gke-a4``: gib install, version v1.1.0)."""

GIB_IMAGE_ARM64 = "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib-arm64:v1.1.0"
"""Its Arm build, for Grace nodes (cluster-toolkit ``examples/gke-a4x/gke-a4x.yaml``: gib image
``nccl-plugin-gib-arm64``, version v1.1.0)."""

PAUSE_IMAGE = "gke.gcr.io/pause:3.8@sha256:880e63f94b145e46f1b1082bb71b85e21f16b99b180b9996407d61240ceb9830"
"""Keeps the installer DaemonSet's pod alive after its init containers ran (cluster-toolkit nccl-installer)."""

SYSCTL_IMAGE = "alpine:3.20"
"""Runs ``sysctl`` for the RDMA interfaces (cluster-toolkit uses alpine:latest; pinned here)."""

INSTALLER_NEEDS_HOST = ("writes the gIB NCCL plugin onto the node (/home/kubernetes/bin) and, on A4, sets sysctls of "
                        "the RDMA interfaces: privileged, on the host network and PID namespace (cluster-toolkit "
                        "examples/gke-a4 and gke-a4x nccl-installer)")

INSTALLER_SKIPS = {
    "CKV_K8S_8": "the only long-running container is pause; the work is done by init containers",
    "CKV_K8S_9": "the only long-running container is pause; the work is done by init containers",
    "CKV_K8S_16": INSTALLER_NEEDS_HOST,
    "CKV_K8S_17": INSTALLER_NEEDS_HOST,
    "CKV_K8S_19": INSTALLER_NEEDS_HOST,
    "CKV_K8S_20": INSTALLER_NEEDS_HOST,
    "CKV_K8S_22": INSTALLER_NEEDS_HOST,
    "CKV_K8S_23": INSTALLER_NEEDS_HOST,
    "CKV_K8S_28": INSTALLER_NEEDS_HOST,
    "CKV_K8S_37": INSTALLER_NEEDS_HOST,
    "CKV_K8S_40": INSTALLER_NEEDS_HOST,
    "CKV_K8S_43": "the gIB installer and alpine are pinned by version tag (Google publishes the plugin by tag); "
                  "pause is pinned by digest",
    "CKV2_K8S_6": "the pod runs on the host network, where NetworkPolicy does not apply, and serves nothing",
}
"""Checks the NCCL plugin installer cannot satisfy, with the reason (checkov reads them from its annotations)."""



def rdma_network_name(i: int) -> str:
    """Name of the Kubernetes ``Network`` object of RDMA NIC ``i`` (000: rdma-0 .. rdma-7)."""
    return f"rdma-{i}"


def interfaces_annotation(nics: int) -> str:
    """The ``networking.gke.io/interfaces`` value of seed 000: eth0 on the default network, eth2.. on rdma-N."""
    entries = [{"interfaceName": "eth0", "network": "default"}]
    entries += [{"interfaceName": f"eth{i + 2}", "network": rdma_network_name(i)} for i in range(nics)]
    return json.dumps(entries)


@dataclass(frozen=True)
class RdmaNetworks:
    """What :func:`create_networks` made: the node pool's additional networks and the objects pods need."""

    additional_networks: list[gcp.container.NodePoolNetworkConfigAdditionalNodeNetworkConfigArgs]
    cloud_resources: list[pulumi.Resource]
    kubernetes_resources: list[pulumi.Resource]


def create_networks(name: str, *, prefix: str, project: pulumi.Input[str], region: str, zone: str, nics: int,
                    gvnic_cidr: str, rdma_cidr: str, accelerator: str, pool_name: str,
                    parent: pulumi.Resource) -> RdmaNetworks:
    """Create the second gVNIC VPC, the RoCE VPC with ``nics`` subnets, their Kubernetes objects and the gIB installer.

    Children are named ``{name}-<role>`` and parented to ``parent``; the Kubernetes objects use the provider
    ``parent`` was given for the ``kubernetes`` package.
    """
    opts = pulumi.ResourceOptions(parent=parent)
    gvnic_net = gcp.compute.Network(
        f"{name}-gvnic-network",
        gcp.compute.NetworkArgs(name=f"{prefix}-gvnic", project=project, auto_create_subnetworks=False, mtu=VPC_MTU),
        opts)
    gvnic_sub = gcp.compute.Subnetwork(
        f"{name}-gvnic-subnet",
        gcp.compute.SubnetworkArgs(name=f"{prefix}-gvnic", project=project, region=region, network=gvnic_net.id,
                                   ip_cidr_range=gvnic_cidr),
        opts)
    gvnic_fw = gcp.compute.Firewall(
        f"{name}-gvnic-internal",
        gcp.compute.FirewallArgs(
            name=f"{prefix}-gvnic-internal", project=project, network=gvnic_net.name, direction="INGRESS",
            source_ranges=[gvnic_cidr],
            allows=[gcp.compute.FirewallAllowArgs(protocol="tcp", ports=["0-65535"]),
                    gcp.compute.FirewallAllowArgs(protocol="udp", ports=["0-65535"]),
                    gcp.compute.FirewallAllowArgs(protocol="icmp")]),
        opts)
    rdma_net = gcp.compute.Network(
        f"{name}-rdma-network",
        gcp.compute.NetworkArgs(
            name=f"{prefix}-rdma", project=project, auto_create_subnetworks=False, mtu=VPC_MTU,
            network_profile=pulumi.Output.concat("projects/", project, f"/global/networkProfiles/{zone}-vpc-roce")),
        opts)
    ranges = list(ipaddress.ip_network(rdma_cidr).subnets(new_prefix=_subnet_prefix(rdma_cidr, nics)))
    rdma_subs = [
        gcp.compute.Subnetwork(
            f"{name}-rdma-subnet-{i}",
            gcp.compute.SubnetworkArgs(name=f"{prefix}-rdma-{i}", project=project, region=region,
                                       network=rdma_net.id, ip_cidr_range=str(ranges[i])),
            opts)
        for i in range(nics)
    ]
    additional = [gcp.container.NodePoolNetworkConfigAdditionalNodeNetworkConfigArgs(
        network=gvnic_net.name, subnetwork=gvnic_sub.name)]
    additional += [gcp.container.NodePoolNetworkConfigAdditionalNodeNetworkConfigArgs(
        network=rdma_net.name, subnetwork=s.name) for s in rdma_subs]

    k8s_objects: list[pulumi.Resource] = []
    for i, sub in enumerate(rdma_subs):
        params = k8s.apiextensions.CustomResource(
            f"{name}-rdma-{i}-params",
            api_version="networking.gke.io/v1",
            kind="GKENetworkParamSet",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=rdma_network_name(i)),
            spec={"vpc": rdma_net.name, "vpcSubnet": sub.name, "deviceMode": "RDMA"},
            opts=opts)
        network = k8s.apiextensions.CustomResource(
            f"{name}-rdma-{i}",
            api_version="networking.gke.io/v1",
            kind="Network",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=rdma_network_name(i)),
            spec={"type": "Device", "parametersRef": {"group": "networking.gke.io", "kind": "GKENetworkParamSet",
                                                       "name": rdma_network_name(i)}},
            opts=pulumi.ResourceOptions(parent=parent, depends_on=[params]))
        k8s_objects += [params, network]
    k8s_objects.append(gib_installer(f"{name}-gib-installer", nics=nics, accelerator=accelerator,
                                     pool_name=pool_name, parent=parent))
    return RdmaNetworks(additional_networks=additional,
                        cloud_resources=[gvnic_net, gvnic_sub, gvnic_fw, rdma_net, *rdma_subs],
                        kubernetes_resources=k8s_objects)


def _subnet_prefix(cidr: str, count: int) -> int:
    net = ipaddress.ip_network(cidr)
    bits = max(count - 1, 0).bit_length()
    if net.prefixlen + bits > 29:
        raise pulumi.InputPropertyError("rdma_cidr", f"{cidr} is too small for {count} RDMA subnets")
    return net.prefixlen + bits


def gib_installer(name: str, *, nics: int, accelerator: str, pool_name: str, parent: pulumi.Resource,
                  arm64: bool = False, martian_sysctls: bool = True) -> k8s.apps.v1.DaemonSet:
    """The DaemonSet that installs the gIB NCCL plugin on every node of the pool (GKE A4 RDMA set-up).

    It must run privileged with the host network: it writes the plugin to the host and, on A4's additional node
    networks (``martian_sysctls``), turns off martian logging on the RDMA interfaces ``gpuNrdma0``. ``arm64``
    installs the Arm build on Grace nodes; cluster-toolkit's A4X installer (examples/gke-a4x/nccl-installer.yaml.tftpl)
    sets no sysctls, its DRANET nodes have no such interfaces.
    """
    labels = {"k8s-app": "nccl-rdma-installer"}
    sysctls = "\n".join(f"sysctl -w net.ipv4.conf.gpu{i}rdma0.log_martians=0" for i in range(nics))
    privileged = k8s.core.v1.SecurityContextArgs(privileged=True)
    small = k8s.core.v1.ResourceRequirementsArgs(requests={"cpu": "10m", "memory": "16Mi"},
                                                 limits={"cpu": "100m", "memory": "64Mi"})
    martian = [k8s.core.v1.ContainerArgs(
        name="disable-log-martian", image=SYSCTL_IMAGE, image_pull_policy="Always",
        command=["/bin/sh", "-c"], args=[sysctls], resources=small, security_context=privileged)] if martian_sysctls else []
    selector = {"cloud.google.com/gke-accelerator": accelerator, "cloud.google.com/gke-nodepool": pool_name}
    if arm64:
        selector["kubernetes.io/arch"] = "arm64"
    return k8s.apps.v1.DaemonSet(
        name,
        metadata=k8s.meta.v1.ObjectMetaArgs(name="nccl-rdma-installer", namespace="kube-system", labels=labels,
                                            annotations=skip_annotations(INSTALLER_SKIPS)),
        spec=k8s.apps.v1.DaemonSetSpecArgs(
            selector=k8s.meta.v1.LabelSelectorArgs(match_labels=labels),
            update_strategy=k8s.apps.v1.DaemonSetUpdateStrategyArgs(
                type="RollingUpdate",
                rolling_update=k8s.apps.v1.RollingUpdateDaemonSetArgs(max_unavailable="100%")),
            template=k8s.core.v1.PodTemplateSpecArgs(
                metadata=k8s.meta.v1.ObjectMetaArgs(labels=labels,
                                                    annotations=skip_annotations(INSTALLER_SKIPS)),
                spec=k8s.core.v1.PodSpecArgs(
                    priority_class_name="system-node-critical",
                    automount_service_account_token=False,
                    security_context=k8s.core.v1.PodSecurityContextArgs(
                        seccomp_profile=k8s.core.v1.SeccompProfileArgs(type="RuntimeDefault")),
                    node_selector=selector,
                    tolerations=[k8s.core.v1.TolerationArgs(operator="Exists")],
                    host_network=True,
                    host_pid=True,
                    volumes=[
                        k8s.core.v1.VolumeArgs(name="library-dir-host", host_path=k8s.core.v1.HostPathVolumeSourceArgs(
                            path="/home/kubernetes/bin/nvidia/lib64", type="DirectoryOrCreate")),
                        k8s.core.v1.VolumeArgs(name="gib", host_path=k8s.core.v1.HostPathVolumeSourceArgs(
                            path="/home/kubernetes/bin/gib")),
                    ],
                    init_containers=[
                        *martian,
                        k8s.core.v1.ContainerArgs(
                            name="nccl-rdma-installer", image=GIB_IMAGE_ARM64 if arm64 else GIB_IMAGE,
                            image_pull_policy="Always",
                            command=["/bin/sh", "-c"],
                            args=["set -ex\n/scripts/container_entry.sh install --install-nccl\n"
                                  "cp -r /var/lib/gib/lib64/. /usr/local/home/kubernetes/bin/nvidia/lib64\n"
                                  "cp -r /var/lib/gib/. /usr/local/home/kubernetes/bin/gib\n"],
                            resources=k8s.core.v1.ResourceRequirementsArgs(
                                requests={"cpu": "150m", "memory": "256Mi"}, limits={"cpu": "1", "memory": "1Gi"}),
                            security_context=privileged,
                            volume_mounts=[
                                k8s.core.v1.VolumeMountArgs(name="library-dir-host",
                                                            mount_path="/usr/local/home/kubernetes/bin/nvidia/lib64"),
                                k8s.core.v1.VolumeMountArgs(name="gib", mount_path="/usr/local/home/kubernetes/bin/gib"),
                            ]),
                    ],
                    containers=[k8s.core.v1.ContainerArgs(
                        name="pause", image=PAUSE_IMAGE, image_pull_policy="Always", resources=small,
                        security_context=k8s.core.v1.SecurityContextArgs(
                            run_as_non_root=True, run_as_user=65535, run_as_group=65535,
                            read_only_root_filesystem=True, allow_privilege_escalation=False,
                            capabilities=k8s.core.v1.CapabilitiesArgs(drop=["ALL"])))],
                ),
            ),
        ),
        opts=pulumi.ResourceOptions(parent=parent))
