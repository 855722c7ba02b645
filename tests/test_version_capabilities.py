"""Version x capability, for every stack (issue 36's class guard): each add-on and chart a stack installs is pinned,
its pinned version has a record in the catalog (catalog.capabilities: Kubernetes range, capabilities, source), and
the stack uses nothing that version lacks and runs it on no minor outside its range.

What a stack uses is read from its plan, not from the code that chose the version: an add-on with a Pod Identity
association uses EKS Pod Identity, one with a service-account role IRSA; a chart whose service account has a Pod
Identity association uses EKS Pod Identity; pods mounting a Mountpoint volume with ``authenticationSource: pod`` use
their own service account's mechanism, and on tainted nodes the driver's node plugin must run there; a cluster with
HyperPod instances needs every component that reads node provider ids to know theirs.

Issue 36 found the two this would have caught: HyperPod's Mountpoint v1.14.1 given a Pod Identity association (v1
reads none), and Cluster Autoscaler 1.31 (chart 9.43.2) on HyperPod (no #8047) and four minors behind EKS 1.35.
"""

import json
import re
from typing import Any, Iterator

import pytest

from k3infra import offline
from k3infra.catalog.capabilities import Capability, VersionFacts, lacks
from k3infra.catalog.charts import ADDON_CHARTS, CHARTS
from k3infra.catalog.eks_addons import EKS_ADDONS, MOUNTPOINT, MOUNTPOINT_CAPABILITIES
from k3infra.catalog.image_capabilities import COPIER_BOTOCORE, COPIER_IMAGE, IMAGES, POD_IDENTITY_MINIMUM_SDK
from k3infra.catalog.tools import AWS_CLI_IMAGE
from k3infra.weightcopy import delivery
from k3infra.planning import Plan
from tests.support import ROOT, STACKS, plan
from tests.test_system_pool_fit import WORKLOADS, templates

CHART = "kubernetes:helm.sh/v4:Chart"
EKS_ADDON = "aws:eks/addon:Addon"
ACK_ADDON = "alicloud:cs/kubernetesAddon:KubernetesAddon"
POD_IDENTITY = "aws:eks/podIdentityAssociation:PodIdentityAssociation"
IRSA_ANNOTATION = "eks.amazonaws.com/role-arn"
MOUNTPOINT_DRIVER = "s3.csi.aws.com"

VARIANTS = [(s,) for s in STACKS] + [
    ("aws-eks", "autoscaling.enabled=true", "replicas=2"), ("aws-eks", 'cluster.kubernetesVersion="1.34"'),
    ("aws-eks", "weights.loader=streamer"), ("aws-eks", "weights.loader=bucket-copy"), ("aws-eks", "nodes=2"), ("aws-hyperpod", "aws.deepHealthChecks=true"),
    ("alicloud-ack", "autoscaling.enabled=true", "replicas=2"),
    ("gcp-a4-sglang", "autoscaling.enabled=true", "replicas=2", "gcp.checkReservation=false")]
"""Every stack, and the variants that install more: KEDA and kube-state-metrics, the EFA device plugin, another
minor's pins, the streamer in place of the mount."""

UNPINNED = {("alicloud-ack", "ack-pod-identity-webhook"), ("alicloud-ack", "arms-prometheus"),
            ("alicloud-ack", "managed-aliyun-acr-credential-helper")}
"""ACK add-ons k3infra installs without a version (ACK installs its current one): not covered by the guard until
k3infra/alicloud pins them; listed exactly, so a new unpinned component fails here."""


def _inputs(reg: Any) -> dict[str, Any]:
    return offline.unwrap(reg.inputs)


def cluster_version(p: Plan) -> str | None:
    """The cluster's pinned Kubernetes version; None where it floats (a release channel, the provider's default) or
    is someone else's (an existing cluster)."""
    for typ, key in (("aws:eks/cluster:Cluster", "version"),
                     ("azure-native:containerservice:ManagedCluster", "kubernetesVersion")):
        for reg in p.recording.by_type(typ):
            return _inputs(reg).get(key)
    return None


def components(p: Plan) -> Iterator[tuple[str, str, VersionFacts | None]]:
    """(name, version, its facts or None when the catalog has none) of every add-on and chart the plan installs."""
    for reg in p.recording.by_type(CHART):
        i = _inputs(reg)
        key = (i["chart"], i.get("version") or "")
        yield i["chart"], key[1], CHARTS[key].supports if key in CHARTS else None
    for reg in p.recording.by_type(EKS_ADDON):
        i = _inputs(reg)
        addon = EKS_ADDONS.get((i["addonName"], i.get("addonVersion") or ""))
        yield i["addonName"], i.get("addonVersion") or "", addon.facts if addon else None
        for chart in ADDON_CHARTS.get(i["addonName"], ()):
            yield chart[0], chart[1], CHARTS[chart].supports
    for reg in p.recording.by_type(ACK_ADDON):
        yield _inputs(reg)["name"], _inputs(reg).get("version") or "", None


def _pod_identities(p: Plan) -> set[tuple[str, str]]:
    return {(_inputs(r)["namespace"], _inputs(r)["serviceAccount"]) for r in p.recording.by_type(POD_IDENTITY)}


def _irsa_accounts(p: Plan) -> set[tuple[str, str]]:
    return {(m["namespace"], m["name"]) for r in p.recording.by_type("kubernetes:core/v1:ServiceAccount")
            if IRSA_ANNOTATION in ((m := _inputs(r)["metadata"]).get("annotations") or {})}


def _identity(account: tuple[str, str], p: Plan) -> set[Capability]:
    return ({Capability.EKS_POD_IDENTITY} if account in _pod_identities(p) else set()) | (
        {Capability.IRSA} if account in _irsa_accounts(p) else set())


def _chart_accounts(p: Plan) -> Iterator[tuple[str, str, tuple[str, str]]]:
    """(chart, version, (namespace, service account)) of each identity bound to a chart's service account: one named
    in the chart's values, or the chart's own name prefixing it (``keda-operator``)."""
    for namespace, account in _pod_identities(p) | _irsa_accounts(p):
        for reg in p.recording.by_type(CHART):
            i = _inputs(reg)
            name = i["chart"].rsplit("/", 1)[-1]
            if i.get("namespace") == namespace and (account in _service_accounts(i.get("values"))
                                                     or account.startswith(name)):
                yield i["chart"], i.get("version") or "", (namespace, account)


def _service_accounts(values: Any) -> set[str]:
    """The service account names a chart's values give its pods (under a ``serviceAccount*`` key), not any string
    that happens to equal one: the picker's values name the server's Service ``k3-server``, as its service account
    is named, and the picker runs under an account of its own."""
    out: set[str] = set()
    if isinstance(values, dict):
        for k, v in values.items():
            if "serviceaccount" in str(k).lower():
                out |= {v} if isinstance(v, str) else ({v["name"]} if isinstance(v, dict) and "name" in v else set())
            out |= _service_accounts(v)
    elif isinstance(values, list):
        for v in values:
            out |= _service_accounts(v)
    return out


def _mounting_pods(p: Plan) -> Iterator[tuple[dict[str, Any], str, dict[str, Any]]]:
    """(pod spec, namespace, the PersistentVolume) of each pod template that mounts a Mountpoint volume."""
    pvs = [_inputs(r) for r in p.recording.by_type("kubernetes:core/v1:PersistentVolume")]
    volumes = {v["metadata"]["name"]: v for v in pvs if (v["spec"].get("csi") or {}).get("driver") == MOUNTPOINT_DRIVER}
    pvcs = [_inputs(r) for r in p.recording.by_type("kubernetes:core/v1:PersistentVolumeClaim")]
    claims = {(c["metadata"].get("namespace"), c["metadata"]["name"]): volumes[c["spec"]["volumeName"]]
              for c in pvcs if c["spec"].get("volumeName") in volumes}
    for reg in p.recording.ordered():
        if reg.type not in WORKLOADS:
            continue
        namespace = _inputs(reg)["metadata"].get("namespace")
        for _, spec, _ in templates(reg):
            for volume in spec.get("volumes") or []:
                claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
                if (namespace, claim) in claims:
                    yield spec, namespace, claims[(namespace, claim)]


def uses(p: Plan) -> dict[tuple[str, str], set[Capability]]:
    """What the plan uses from each (component, version)."""
    out: dict[tuple[str, str], set[Capability]] = {}
    addons = {_inputs(r)["addonName"]: _inputs(r) for r in p.recording.by_type(EKS_ADDON)}
    for name, i in addons.items():
        out.setdefault((name, i.get("addonVersion") or ""), set()).update(
            {Capability.EKS_POD_IDENTITY} if i.get("podIdentityAssociations") else set(),
            {Capability.IRSA} if i.get("serviceAccountRoleArn") else set())
    for chart, version, account in _chart_accounts(p):
        out.setdefault((chart, version), set()).update(_identity(account, p))
    mountpoint = addons.get(MOUNTPOINT)
    for spec, namespace, volume in _mounting_pods(p):
        assert mountpoint is not None, "a Mountpoint volume without the Mountpoint add-on"
        used = out.setdefault((MOUNTPOINT, mountpoint.get("addonVersion") or ""), set())
        if volume["spec"]["csi"]["volumeAttributes"].get("authenticationSource") == "pod":
            account = (namespace, spec.get("serviceAccountName") or "default")
            used |= {Capability.POD_LEVEL_POD_IDENTITY if c == Capability.EKS_POD_IDENTITY else Capability.POD_LEVEL_IRSA
                     for c in _identity(account, p)}
        tolerated = '"tolerateAllTaints": true' in (mountpoint.get("configurationValues") or "")
        if any(t.get("effect") == "NoSchedule" for t in spec.get("tolerations") or []) and not tolerated:
            used.add(Capability.TAINTED_NODES)
    if p.recording.by_type("aws-native:sagemaker:Cluster"):  # HyperPod instances join the cluster
        for name, version, facts in components(p):
            if facts is not None and facts.reads_provider_ids:
                out.setdefault((name, version), set()).add(Capability.HYPERPOD_PROVIDER_IDS)
    return out


def aws_containers(p: Plan) -> Iterator[tuple[str, set[Capability]]]:
    """(image, the mechanisms its pod's service account is bound to) of each container that names an ``s3://``
    location under a service account with a Pod Identity association or an IRSA role: it calls AWS as its pod."""
    for reg in p.recording.ordered():
        if reg.type not in WORKLOADS:
            continue
        namespace = _inputs(reg)["metadata"].get("namespace")
        for _, spec, _ in templates(reg):
            mechanisms = _identity((namespace, spec.get("serviceAccountName") or "default"), p)
            for container in [*(spec.get("initContainers") or []), *spec["containers"]] if mechanisms else []:
                if "s3://" in json.dumps(container):
                    yield container["image"], mechanisms


def problems(p: Plan) -> list[str]:
    """Every component the plan installs without a record, or uses beyond its pinned version; every image that calls
    AWS as its pod without a record of that mechanism."""
    version, used, out = cluster_version(p), uses(p), []
    for image, mechanisms in aws_containers(p):
        if image not in IMAGES:
            out.append(f"image {image} calls AWS as its pod and has no version facts in the catalog")
        else:
            out += lacks(f"image {image}", IMAGES[image], None, frozenset(mechanisms))
    for name, pinned, facts in components(p):
        if facts is None:
            if (p.stack_file.stack, name) not in UNPINNED:
                out.append(f"{name} {pinned or '(no version)'} has no version facts in the catalog")
            continue
        out += lacks(f"{name} {pinned}", facts, version, frozenset(used.get((name, pinned), ())))
    return out


@pytest.mark.parametrize("variant", VARIANTS, ids=" ".join)
def test_every_component_has_what_the_stack_uses_at_its_pinned_version(variant: tuple[str, ...]) -> None:
    assert problems(plan(*variant)) == []


def test_the_derivation_sees_each_use_issue_36_found() -> None:
    """The guard reads the uses it must: Pod Identity on the EKS Mountpoint's pod-level mounts and its node plugin on
    the tainted GPU nodes, IRSA on HyperPod's driver role, Pod Identity for the autoscaler and KEDA charts, HyperPod
    provider ids for the autoscaler on the HyperPod stack only."""
    eks, hyperpod = uses(plan("aws-eks", "autoscaling.enabled=true", "replicas=2")), uses(plan("aws-hyperpod"))
    assert eks[(MOUNTPOINT, "v2.7.0-eksbuild.1")] == {Capability.POD_LEVEL_POD_IDENTITY, Capability.TAINTED_NODES}
    assert eks[("cluster-autoscaler", "9.59.0")] == {Capability.EKS_POD_IDENTITY}
    assert eks[("keda", "2.20.2")] == {Capability.EKS_POD_IDENTITY}
    assert eks[("aws-ebs-csi-driver", "v1.54.0-eksbuild.1")] == {Capability.EKS_POD_IDENTITY}
    assert hyperpod[(MOUNTPOINT, "v1.14.1-eksbuild.1")] == {Capability.IRSA}
    assert hyperpod[("cluster-autoscaler", "9.53.0")] == {Capability.EKS_POD_IDENTITY, Capability.HYPERPOD_PROVIDER_IDS}


def test_floating_clusters_run_no_component_with_a_ceiling_but_these() -> None:
    """Where the cluster's minor is not pinned (GKE's release channel, ACK's default, a cluster someone else runs),
    a component with a Kubernetes ceiling may outlive it: the exposure is listed exactly."""
    capped = {(" ".join(v), name) for v in VARIANTS if cluster_version(plan(*v)) is None
              for name, _, facts in components(plan(*v)) if facts is not None and facts.kubernetes.maximum}
    assert capped == {("alicloud-ack autoscaling.enabled=true replicas=2", "keda"),
                      ("gcp-a4-sglang autoscaling.enabled=true replicas=2 gcp.checkReservation=false", "keda")}


def _release(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text))


def test_the_images_that_call_aws_are_the_recorded_ones_at_sdk_releases_that_read_pod_identity() -> None:
    """The guard reads the containers that call AWS as their pod (the copier, the bucket-copy init container, the
    streaming engine), and the recorded SDK releases are those pinned and at least EKS's minimums."""
    found = {image for v in (("aws-eks", "weights.loader=streamer"), ("aws-eks", "weights.loader=bucket-copy"))
             for image, _ in aws_containers(plan(*v))}
    assert found == set(IMAGES)
    assert COPIER_IMAGE == delivery.IMAGE
    lock = (ROOT / "k3infra/weightcopy/requirements/s3.txt").read_text()
    assert re.search(r"^botocore==([\d.]+)", lock, re.M).group(1) == COPIER_BOTOCORE  # type: ignore[union-attr]
    assert _release(COPIER_BOTOCORE) >= _release(POD_IDENTITY_MINIMUM_SDK["botocore"])
    assert _release(AWS_CLI_IMAGE.rsplit(":", 1)[1]) >= _release(POD_IDENTITY_MINIMUM_SDK["aws-cli"])


def test_mountpoint_credential_mechanisms_follow_the_major_version() -> None:
    """The credential mechanism is tied to the pinned major: every Mountpoint record's capabilities are its major's,
    and Pod Identity exists from v2 only (v1.14.1 docs/CONFIGURATION.md; v2 README), so a pin moved to another major
    without a row for it, or a mechanism the major lacks, fails."""
    for (name, version), addon in EKS_ADDONS.items():
        if name == MOUNTPOINT:
            major = int(version.removeprefix("v").split(".")[0])
            assert addon.facts.capabilities == MOUNTPOINT_CAPABILITIES[major]
    assert Capability.EKS_POD_IDENTITY not in MOUNTPOINT_CAPABILITIES[1]
    assert {Capability.EKS_POD_IDENTITY, Capability.POD_LEVEL_POD_IDENTITY} <= MOUNTPOINT_CAPABILITIES[2]
