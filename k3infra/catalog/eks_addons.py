"""The EKS add-ons k3infra installs, pinned: each version per Kubernetes minor, with what it can do for a stack.

An add-on without a version takes whatever EKS calls its default on the day it is created, and a data source with
``most_recent`` moves it on every `pulumi up` (issue 36, minor 7). So every add-on is pinned here, per minor of the
cluster: ``EKS_CLUSTER_ADDONS`` for the add-ons of every EKS cluster (aws-eks, and the EKS orchestrator of
aws-hyperpod), ``HYPERPOD_ADDONS`` for the HyperPod Inference Operator and the add-ons it is installed with. A cluster
minor without a row here is refused before any resource (config.clouds.aws).

Where the exact ``-eksbuild.N`` string was not read from AWS, the record says UNCONFIRMED and how to check it:
``aws eks describe-addon-versions --addon-name NAME --kubernetes-version MINOR --query
'addons[].addonVersions[].addonVersion'`` lists what EKS offers; a pin it does not list fails ``pulumi up`` at the
add-on with ``InvalidParameterException`` before anything depends on it.
"""

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from .capabilities import Capability as C, KubernetesRange, VersionFacts, facts
from .eks_versions import key as minor_key, minor

VPC_CNI = "vpc-cni"
POD_IDENTITY_AGENT = "eks-pod-identity-agent"
EBS_CSI = "aws-ebs-csi-driver"
NODE_MONITORING = "eks-node-monitoring-agent"
MOUNTPOINT = "aws-mountpoint-s3-csi-driver"
HYPERPOD_INFERENCE = "amazon-sagemaker-hyperpod-inference"
CERT_MANAGER = "cert-manager"
METRICS_SERVER = "metrics-server"
FSX_CSI = "aws-fsx-csi-driver"


@dataclass(frozen=True)
class EksAddon:
    """One pinned version of an EKS add-on."""

    name: str
    """The add-on's EKS name (``aws eks describe-addon-versions --addon-name``)."""
    version: str
    """The pinned ``vX.Y.Z-eksbuild.N``."""
    facts: VersionFacts
    """The Kubernetes minors EKS offers it for and what a stack may use from it."""


def _eks(*minors: str, source: str) -> KubernetesRange:
    """The minors EKS offers a version for, as far as this catalog knows them."""
    return KubernetesRange(min(minors, key=minor_key), max(minors, key=minor_key), source)


_SEEN_135 = ("seen as the newest build on an EKS 1.35 cluster in public deployment notes of 2026-08-11 (a "
             "third-party source)")
_SEEN_134 = "seen pinned for EKS 1.34 clusters in public Terraform configurations (third-party sources)"
_CHECK = "UNCONFIRMED: check `aws eks describe-addon-versions --addon-name {name} --kubernetes-version {minors}`"
_HELM_TO_ADDON = ("aws/sagemaker-hyperpod-cli 011ca92 helm_chart/HyperPodHelmChart/charts/inference-operator/migration/"
                  "helm_to_addon.sh (`aws eks create-addon ... --addon-version`), on HyperPod's EKS orchestrator "
                  "(Kubernetes 1.28 to 1.34, SageMaker developer guide, sagemaker-hyperpod-eks-prerequisites)")
_INFERENCE_RELEASE = ("SageMaker developer guide, sagemaker-hyperpod-inference-release-notes, \"Upgrade to v3.2\": "
                      "`aws eks update-addon --addon-name amazon-sagemaker-hyperpod-inference --addon-version "
                      "v1.3.0-eksbuild.1`: operator v3.2, the inference-operator chart 2.2.2 (image tag v3.2) of "
                      "aws/sagemaker-hyperpod-cli 011ca92 whose CRD is vendored (schemas/crds); v3.1.2 (add-on "
                      "v1.2.0-eksbuild.1) brought kubernetesVolume and custom service accounts, which the weights on "
                      "the node use (helm_to_addon.sh at 011ca92 still installs v1.0.0-eksbuild.1, operator v3.0, "
                      "which has neither)")
_HYPERPOD_RANGE = KubernetesRange("1.28", "1.34", "installed by helm_to_addon.sh on HyperPod's EKS orchestrator")

MOUNTPOINT_V1 = ("awslabs/mountpoint-s3-csi-driver v1.14.1 docs/CONFIGURATION.md \"AWS Credentials\": driver level "
                 "reads Kubernetes secrets, driver-level IRSA or the instance profile; \"Only IRSA is supported with "
                 "Pod-Level credentials\" (pkg/driver/node/credentialprovider/provider_driver.go: long-term keys or "
                 "an STS web identity); charts values.yaml node.tolerateAllTaints false; README: Kubernetes v1.23+")
MOUNTPOINT_V2 = ("awslabs/mountpoint-s3-csi-driver v2.7.0 docs/CONFIGURATION.md \"Driver-Level Credentials with EKS Pod "
                 "Identity\" and \"Pod-Level Credentials\" (EKS Pod Identity or IRSA; README: \"v2 introduces ... EKS "
                 "Pod Identity support\"); charts values.yaml node.tolerateAllTaints true; README: Kubernetes v1.30+")
MOUNTPOINT_CAPABILITIES: Mapping[int, frozenset[C]] = MappingProxyType({
    1: frozenset({C.IRSA, C.POD_LEVEL_IRSA}),
    2: frozenset({C.IRSA, C.EKS_POD_IDENTITY, C.POD_LEVEL_IRSA, C.POD_LEVEL_POD_IDENTITY, C.TAINTED_NODES}),
})
"""What the Mountpoint driver reads credentials from, by major version: Pod Identity (driver and pod level) and
the node plugin on tainted nodes came with v2 (sources above). A Mountpoint pin takes its capabilities from its
major here, so a new major needs a row before it can be pinned."""


def _mountpoint(version: str, kubernetes: KubernetesRange, source: str, unconfirmed: str = "") -> EksAddon:
    major = int(version.removeprefix("v").split(".", 1)[0])
    return EksAddon(MOUNTPOINT, version, VersionFacts(kubernetes, MOUNTPOINT_CAPABILITIES[major], source, unconfirmed))


_ADDONS = (
    EksAddon(VPC_CNI, "v1.20.4-eksbuild.2", facts(
        _eks("1.34", source=_SEEN_134), "the node role's AmazonEKS_CNI_Policy; no pod identity used",
        unconfirmed=_CHECK.format(name=VPC_CNI, minors="1.34"))),
    EksAddon(VPC_CNI, "v1.23.0-eksbuild.1", facts(
        _eks("1.35", source=_SEEN_135), "the node role's AmazonEKS_CNI_Policy; no pod identity used",
        unconfirmed=_CHECK.format(name=VPC_CNI, minors="1.35"))),
    EksAddon(POD_IDENTITY_AGENT, "v1.3.10-eksbuild.3", facts(
        _eks("1.34", source=_SEEN_134), "the agent serves Pod Identity; it needs none itself",
        unconfirmed=_CHECK.format(name=POD_IDENTITY_AGENT, minors="1.34"))),
    EksAddon(POD_IDENTITY_AGENT, "v1.4.0-eksbuild.1", facts(
        _eks("1.35", source="seen beside kube-proxy v1.35.0-eksbuild.1 in a public Terraform module (third-party)"),
        "the agent serves Pod Identity; it needs none itself",
        unconfirmed=_CHECK.format(name=POD_IDENTITY_AGENT, minors="1.35"))),
    EksAddon(EBS_CSI, "v1.54.0-eksbuild.1", facts(
        _eks("1.34", "1.35", source=_SEEN_134 + ", and beside 1.35 pins"),
        "EKS User Guide, retreive-iam-info: aws-ebs-csi-driver has a podIdentityConfiguration "
        "(`aws eks describe-addon-configuration --query podIdentityConfiguration`)", C.EKS_POD_IDENTITY, C.IRSA,
        unconfirmed=_CHECK.format(name=EBS_CSI, minors="1.34 and 1.35"))),
    EksAddon(NODE_MONITORING, "v1.7.0-eksbuild.1", facts(
        _eks("1.34", "1.35", source="aws/eks-node-monitoring-agent 51af549 (chart 1.7.0) README: nodeAgent.image.tag "
             "v1.7.0-eksbuild.1"), "no AWS identity: it writes node conditions",
        unconfirmed=_CHECK.format(name=NODE_MONITORING, minors="1.34 and 1.35") + " (the add-on version is taken to "
        "be its image tag)")),
    _mountpoint("v2.7.0-eksbuild.1", _eks("1.34", "1.35", source=_SEEN_135), MOUNTPOINT_V2,
                _CHECK.format(name=MOUNTPOINT, minors="1.34 and 1.35")),
    _mountpoint("v1.14.1-eksbuild.1", KubernetesRange("1.23", None, "awslabs/mountpoint-s3-csi-driver v1.14.1 README, "
                                                      "Compatibility"),
                MOUNTPOINT_V1 + "; version: " + _HELM_TO_ADDON,
                _CHECK.format(name=MOUNTPOINT, minors="1.34") + " (the build helm_to_addon.sh pins for every minor "
                "HyperPod runs)"),
    EksAddon(HYPERPOD_INFERENCE, "v1.3.0-eksbuild.1", facts(
        _HYPERPOD_RANGE, _INFERENCE_RELEASE + "; its execution, ALB and KEDA roles are IRSA roles as " + _HELM_TO_ADDON
        + " gives them", C.IRSA)),
    EksAddon(CERT_MANAGER, "v1.18.2-eksbuild.2", facts(_HYPERPOD_RANGE, _HELM_TO_ADDON)),
    EksAddon(METRICS_SERVER, "v0.7.2-eksbuild.4", facts(_HYPERPOD_RANGE, _HELM_TO_ADDON)),
    EksAddon(FSX_CSI, "v1.6.0-eksbuild.1", facts(_HYPERPOD_RANGE, _HELM_TO_ADDON + " (with an IRSA role)", C.IRSA)),
)

EKS_ADDONS: Mapping[tuple[str, str], EksAddon] = MappingProxyType({(a.name, a.version): a for a in _ADDONS})
"""Every EKS add-on version k3infra pins, by (name, version)."""

EKS_CLUSTER_ADDONS: Mapping[str, Mapping[str, str]] = MappingProxyType({
    "1.34": MappingProxyType({VPC_CNI: "v1.20.4-eksbuild.2", POD_IDENTITY_AGENT: "v1.3.10-eksbuild.3",
                              EBS_CSI: "v1.54.0-eksbuild.1", NODE_MONITORING: "v1.7.0-eksbuild.1",
                              MOUNTPOINT: "v2.7.0-eksbuild.1"}),
    "1.35": MappingProxyType({VPC_CNI: "v1.23.0-eksbuild.1", POD_IDENTITY_AGENT: "v1.4.0-eksbuild.1",
                              EBS_CSI: "v1.54.0-eksbuild.1", NODE_MONITORING: "v1.7.0-eksbuild.1",
                              MOUNTPOINT: "v2.7.0-eksbuild.1"}),
})
"""The add-ons of every EKS cluster, by Kubernetes minor: name -> version. The VPC CNI is at least 1.18.5 (``efa-only``
interfaces; HyperPod needs 1.18.3)."""

HYPERPOD_ADDONS: Mapping[str, str] = MappingProxyType({
    HYPERPOD_INFERENCE: "v1.3.0-eksbuild.1", CERT_MANAGER: "v1.18.2-eksbuild.2", METRICS_SERVER: "v0.7.2-eksbuild.4",
    FSX_CSI: "v1.6.0-eksbuild.1", MOUNTPOINT: "v1.14.1-eksbuild.1"})
"""The HyperPod Inference Operator's add-on and those it is installed with, as upstream's helm_to_addon.sh pins them
(its Mountpoint replaces the cluster's: the operator was released with v1); the inference add-on itself at the
release of the vendored CRD (``_INFERENCE_RELEASE``)."""


def cluster_addon(name: str, kubernetes: str) -> str:
    """The pinned version of the EKS cluster add-on ``name`` for Kubernetes ``kubernetes``; KeyError when none."""
    return EKS_CLUSTER_ADDONS[minor(kubernetes)][name]


def pod_identity_or_irsa(addon: str, version: str) -> C:
    """The identity mechanism a driver-level role uses for ``addon`` at ``version``: EKS Pod Identity where the
    version reads it, else IRSA (the Mountpoint driver v1)."""
    capabilities = EKS_ADDONS[(addon, version)].facts.capabilities
    return C.EKS_POD_IDENTITY if C.EKS_POD_IDENTITY in capabilities else C.IRSA
