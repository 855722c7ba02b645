"""Can the cluster's control plane call every admission webhook that the stack's charts serve?

A webhook the API server cannot reach refuses what it intercepts (``failurePolicy: Fail``): on a private GKE
cluster LWS's webhooks on 9443 made every LeaderWorkerSet fail, since GKE's own rule admits 443 and 10250 only.
This check reads a plan's resources, so it holds whatever the program registers:

- the webhooks served: every Helm chart the plan installs and every EKS add-on that installs a chart, looked up in
  catalog.charts at the pinned version with the values the plan gives it (a chart missing from the catalog is a
  finding: its webhooks are unknown);
- what reaches the nodes: catalog.control_planes for the cloud, plus, on GKE, the ingress firewall rules the plan
  creates from the control plane's range to the nodes' service accounts; on EKS and ACK only while the nodes
  stay in the group the cloud's rule is about (the cluster security group, ACK's default security group).

It returns findings (empty when every webhook is reachable); tests/test_webhook_reach.py runs it on every stack.
"""

import ipaddress
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Protocol, Sequence

from .catalog import Cloud
from .catalog.charts import ADDON_CHARTS, ChartFacts, ChartWebhook, pinned_chart, webhooks_served
from .catalog.control_planes import CONTROL_PLANE_REACH

HELM_CHART = "kubernetes:helm.sh/v4:Chart"
EKS_ADDON = "aws:eks/addon:Addon"


class PlannedResource(Protocol):
    """A registration as the recording engine keeps it (k3infra.offline.Registration)."""

    type: str
    name: str
    inputs: dict[str, Any]
    outputs: dict[str, Any]


@dataclass(frozen=True)
class ServedWebhook:
    """A webhook one installed chart serves."""

    installed_by: str
    """The Pulumi resource that installs the chart (a Helm chart or an EKS add-on)."""
    chart: ChartFacts
    webhook: ChartWebhook


def _get(value: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)  # pyright: ignore[reportUnknownMemberType]
    return value


def served(resources: Sequence[PlannedResource]) -> tuple[list[ServedWebhook], list[str]]:
    """Every webhook the plan's charts serve, and a finding for each chart the catalog does not know."""
    out: list[ServedWebhook] = []
    unknown: list[str] = []
    for r in resources:
        if r.type == HELM_CHART:
            key = (str(r.inputs.get("chart") or ""), str(r.inputs.get("version") or ""))
            installs = [(key, r.inputs.get("values") or {})]
        elif r.type == EKS_ADDON:
            installs = [(key, {}) for key in ADDON_CHARTS.get(str(r.inputs.get("addonName")), ())]
        else:
            continue
        for key, values in installs:
            chart = pinned_chart(*key)
            if chart is None or not chart.webhook_source:
                unknown.append(f"{r.name}: chart {key[0]} {key[1] or '(unversioned)'} has no webhook facts in "
                               "k3infra.catalog.charts: record the webhooks its templates serve at that version")
                continue
            out += [ServedWebhook(r.name, chart, w) for w in webhooks_served(chart, values)]
    return out, unknown


def _ports(spec: Any) -> set[int] | None:
    """TCP ports of a firewall ``allows`` entry; None for all of them."""
    if str(_get(spec, "protocol")).lower() not in ("tcp", "all"):
        return set()
    ports = _get(spec, "ports")
    if not ports:
        return None
    out: set[int] = set()
    for p in ports:
        low, _, high = str(p).partition("-")
        out.update(range(int(low), int(high or low) + 1))
    return out


def _gke_reach(resources: Sequence[PlannedResource]) -> set[int] | None:
    """GKE's own 443/10250 and the ports of the plan's ingress rules from the control plane's range to every node."""
    reach = set(CONTROL_PLANE_REACH[Cloud.GCP].ports or ())
    clusters = [r for r in resources if r.type == "gcp:container/cluster:Cluster"]
    masters = [_get(c.inputs, "privateClusterConfig.masterIpv4CidrBlock") for c in clusters]
    accounts = {str(_get(r.inputs, "nodeConfig.serviceAccount") or "default")
                for r in resources if r.type == "gcp:container/nodePool:NodePool"}
    for rule in (r for r in resources if r.type == "gcp:compute/firewall:Firewall"):
        i = rule.inputs
        if str(i.get("direction") or "INGRESS") != "INGRESS" or i.get("disabled"):
            continue
        sources = [ipaddress.ip_network(s) for s in i.get("sourceRanges") or ()]
        if not masters or not all(m and any(ipaddress.ip_network(m).subnet_of(s) for s in sources)  # type: ignore[arg-type]
                                   for m in masters):
            continue
        targets = set(i.get("targetServiceAccounts") or ())
        if (targets and not accounts <= targets) or i.get("targetTags"):
            continue  # a rule for some of the nodes only (tags: the pools' tags are not tracked here)
        for spec in i.get("allows") or ():
            ports = _ports(spec)
            if ports is None:
                return None
            reach |= ports
    return reach


def _in_cluster_group(resources: Sequence[PlannedResource]) -> bool:
    """EKS: every node (managed node group, HyperPod instance group) is in the cluster security group."""
    groups = {str(_get(c.outputs, "vpcConfig.clusterSecurityGroupId"))
              for c in resources if c.type == "aws:eks/cluster:Cluster"}
    for r in resources:
        if r.type == "aws:ec2/launchTemplate:LaunchTemplate":
            nics = r.inputs.get("networkInterfaces") or [{"securityGroups": r.inputs.get("vpcSecurityGroupIds")}]
            if not all(set(n.get("securityGroups") or ()) & groups for n in nics):
                return False
        if r.type.startswith("aws-native:sagemaker:Cluster"):
            if not set(_get(r.inputs, "vpcConfig.securityGroupIds") or ()) & groups:
                return False
    return True


def reach(cloud: Cloud, resources: Sequence[PlannedResource]) -> set[int] | None:
    """The TCP ports on the nodes that the control plane of the plan's cluster reaches; None: every port."""
    if cloud == Cloud.GCP:
        return _gke_reach(resources)
    if cloud == Cloud.AWS and not _in_cluster_group(resources):
        return set()
    if cloud == Cloud.ALICLOUD and any(r.type == "alicloud:cs/nodePool:NodePool" and r.inputs.get("securityGroupIds")
                                       for r in resources):
        return set()  # a security group of the stack's own: its rules are not read here
    return None


def unreachable(cloud: Cloud, resources: Sequence[PlannedResource]) -> list[str]:
    """One finding per webhook the control plane cannot call, and per chart whose webhooks are unknown."""
    webhooks, findings = served(resources)
    ports = reach(cloud, resources)
    for s in webhooks:
        if ports is not None and s.webhook.target_port not in ports:
            findings.append(
                f"{s.installed_by}: webhook {s.webhook.name} ({s.chart.chart} {s.chart.version}, failurePolicy "
                f"{s.webhook.failure_policy}, intercepts {s.webhook.intercepts}) listens on {s.webhook.target_port}, "
                f"which the {cloud} control plane cannot reach (it reaches {sorted(ports)}: "
                f"{CONTROL_PLANE_REACH[cloud].condition})")
    return findings


def inventory(resources: Iterable[PlannedResource]) -> list[tuple[str, str, int]]:
    """(installed by, webhook, target port) of every webhook the plan serves, sorted."""
    return sorted((s.installed_by, s.webhook.name, s.webhook.target_port) for s in served(list(resources))[0])


__all__ = ["PlannedResource", "ServedWebhook", "inventory", "reach", "served", "unreachable"]
