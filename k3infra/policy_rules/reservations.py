"""``gpu-pool-consumes-reservation``: a GPU pool on a reservation-only or quota-gated SKU (the catalog's
``capacity_types`` / ``quota_family``) consumes a named reservation; a pool that says it runs on reserved
capacity (EKS ``CAPACITY_BLOCK``, a ``capacity-block`` launch template) names it.
"""

from typing import Any, Iterable, Iterator, Mapping, Sequence

from ..catalog import ACCELERATORS, CapacityType
from .base import Resource, as_list, get


def gated_skus(config: Mapping[str, Any]) -> dict[str, str]:
    """SKU → why it needs a reservation: reservation-only or quota-gated in the catalog, plus ``extraSkus``."""
    out: dict[str, str] = {}
    for sku, a in ACCELERATORS.items():
        if CapacityType.ON_DEMAND not in a.capacity_types:
            out[sku] = "is sold only through reservations"
        elif a.quota_family:
            out[sku] = f"is quota-gated ({a.quota_family})"
    for sku in as_list(config.get("extraSkus")):
        out.setdefault(str(sku), "is listed in this policy's extraSkus")
    return out


def _gke_pool(r: Resource, gated: Mapping[str, str]) -> Iterator[str]:
    sku = get(r.props, "nodeConfig.machineType")
    if sku not in gated:
        return
    affinity = get(r.props, "nodeConfig.reservationAffinity", {})
    values = [v for v in as_list(get(affinity, "values")) if v]
    if get(affinity, "consumeReservationType") != "SPECIFIC_RESERVATION" or not values:
        yield (f"GKE node pool {r.name}: {sku} {gated[sku]}; set nodeConfig.reservationAffinity to "
               f"consumeReservationType SPECIFIC_RESERVATION with the reservation path in values (given: "
               f"{get(affinity, 'consumeReservationType') or 'no reservation affinity'})")


def _aks_pool(r: Resource, pool: Mapping[str, Any], label: str, gated: Mapping[str, str]) -> Iterator[str]:
    sku = get(pool, "vmSize")
    if sku in gated and not get(pool, "capacityReservationGroupID"):
        yield (f"AKS {label}: {sku} {gated[sku]}; set capacityReservationGroupID to the capacity reservation "
               "group that holds its reservation")


def _launch_template(r: Resource, gated: Mapping[str, str]) -> Iterator[str]:
    sku = get(r.props, "instanceType")
    market = get(r.props, "instanceMarketOptions.marketType")
    target = get(r.props, "capacityReservationSpecification.capacityReservationTarget", {})
    named = get(target, "capacityReservationId") or get(target, "capacityReservationResourceGroupArn")
    if market == "capacity-block" and not named:
        yield (f"launch template {r.name}: market type capacity-block without "
               "capacityReservationSpecification.capacityReservationTarget: name the Capacity Block (cr-...)")
    elif sku in gated and not named:
        yield (f"launch template {r.name}: {sku} {gated[sku]}; target the reservation with "
               "capacityReservationSpecification.capacityReservationTarget")


def _eks_node_group(r: Resource, by_urn: Mapping[str, Resource], gated: Mapping[str, str]) -> Iterator[str]:
    capacity = get(r.props, "capacityType")
    skus = [s for s in as_list(get(r.props, "instanceTypes")) if s in gated]
    if capacity == "CAPACITY_BLOCK":
        templates = [by_urn[u] for u in r.dependencies if u in by_urn and by_urn[u].type == "aws:ec2/launchTemplate:LaunchTemplate"]
        if not get(r.props, "launchTemplate") or not templates:
            yield (f"EKS node group {r.name}: capacityType CAPACITY_BLOCK needs a launch template that targets "
                   "the Capacity Block (launchTemplate with capacityReservationSpecification)")
    elif skus:
        yield (f"EKS node group {r.name}: {skus[0]} {gated[skus[0]]}; use capacityType CAPACITY_BLOCK with a "
               "launch template that targets the reservation")


def _hyperpod(r: Resource, gated: Mapping[str, str]) -> Iterator[str]:
    for group in as_list(get(r.props, "instanceGroups")):
        sku = get(group, "instanceType")
        if sku in gated and not get(group, "trainingPlanArn"):
            yield (f"HyperPod cluster {r.name}, instance group {get(group, 'instanceGroupName')}: {sku} "
                   f"{gated[sku]}; set trainingPlanArn")


def _ack_pool(r: Resource, gated: Mapping[str, str]) -> Iterator[str]:
    skus = [s for s in as_list(get(r.props, "instanceTypes")) if s in gated]
    if not skus:
        return
    private = get(r.props, "privatePoolOptions.privatePoolOptionsId") or \
        as_list(get(r.props, "resourcePoolOptions.privatePoolIds"))
    lingjun = get(r.props, "type") == "lingjun" and get(r.props, "efloNodeGroup.groupId")
    if not (private or lingjun):
        yield (f"ACK node pool {r.name}: {skus[0]} {gated[skus[0]]}; set privatePoolOptions (Target) or "
               "resourcePoolOptions.privatePoolIds, or run it as a Lingjun pool (type lingjun, efloNodeGroup)")


def check_gpu_reservation(resources: Sequence[Resource], config: Mapping[str, Any]) -> Iterator[tuple[str, str | None]]:
    """Rule ``gpu-pool-consumes-reservation``."""
    gated = gated_skus(config)
    by_urn = {r.urn: r for r in resources}
    for r in resources:
        if r.type == "gcp:container/nodePool:NodePool":
            msgs: Iterable[str] = _gke_pool(r, gated)
        elif r.type == "azure-native:containerservice:AgentPool":
            msgs = _aks_pool(r, r.props, f"agent pool {r.name}", gated)
        elif r.type == "azure-native:containerservice:ManagedCluster":
            msgs = [m for p in as_list(get(r.props, "agentPoolProfiles"))
                    for m in _aks_pool(r, p, f"cluster {r.name}, pool {get(p, 'name')}", gated)]
        elif r.type == "aws:ec2/launchTemplate:LaunchTemplate":
            msgs = _launch_template(r, gated)
        elif r.type == "aws:eks/nodeGroup:NodeGroup":
            msgs = _eks_node_group(r, by_urn, gated)
        elif r.type == "aws-native:sagemaker:Cluster":
            msgs = _hyperpod(r, gated)
        elif r.type == "alicloud:cs/nodePool:NodePool":
            msgs = _ack_pool(r, gated)
        else:
            continue
        for m in msgs:
            yield m, r.urn
