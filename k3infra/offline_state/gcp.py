"""Computed outputs of Google Cloud resources and functions.

Reservation look-ups (``gcp:compute/getReservation*``) answer from :data:`RESERVATIONS`, which describes the
reservations the example stacks name; any other reservation answers as one healthy, READY sub-block of
18 hosts with nothing in use and no machine type reported. Tests patch :data:`RESERVATIONS` to model a
reservation that is too small, of another machine type, or not ready.
"""

from dataclasses import dataclass, field
from typing import Any

from .registry import FAKE_PROJECT_NUMBER, function, provider_default, resource

OFFLINE_PROJECT = "offline-project"


def _project(inputs: dict[str, Any]) -> str:
    return inputs.get("project") or OFFLINE_PROJECT


@provider_default("gcp:")
def gcp_resource(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """Every Google Cloud resource has a name and a self link."""
    res_name = inputs.get("name") or name
    project = _project(inputs)
    return {"name": res_name, "selfLink": f"https://www.googleapis.com/offline/projects/{project}/{res_name}"}


@resource("gcp:compute/network:Network")
def network(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """A VPC: global, with the ids the other resources reference."""
    n, p = inputs.get("name") or name, _project(inputs)
    return {"id": f"projects/{p}/global/networks/{n}",
            "selfLink": f"https://www.googleapis.com/compute/v1/projects/{p}/global/networks/{n}",
            "mtu": inputs.get("mtu") or 1460}


@resource("gcp:compute/subnetwork:Subnetwork")
def subnetwork(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """A regional subnet."""
    n, p, r = inputs.get("name") or name, _project(inputs), inputs.get("region") or "offline-region"
    return {"id": f"projects/{p}/regions/{r}/subnetworks/{n}",
            "selfLink": f"https://www.googleapis.com/compute/v1/projects/{p}/regions/{r}/subnetworks/{n}",
            "gatewayAddress": "10.0.0.1"}


@resource("gcp:compute/resourcePolicy:ResourcePolicy")
def resource_policy(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """A workload (placement) policy."""
    n, p, r = inputs.get("name") or name, _project(inputs), inputs.get("region") or "offline-region"
    return {"id": f"projects/{p}/regions/{r}/resourcePolicies/{n}",
            "selfLink": f"https://www.googleapis.com/compute/v1/projects/{p}/regions/{r}/resourcePolicies/{n}"}


@resource("gcp:container/cluster:Cluster")
def cluster(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """A GKE cluster: its control plane endpoint (a documentation address) and CA certificate."""
    n, p, loc = inputs.get("name") or name, _project(inputs), inputs.get("location") or "offline-region"
    return {
        "id": f"projects/{p}/locations/{loc}/clusters/{n}",
        "endpoint": "203.0.113.10",
        "masterAuth": {"clusterCaCertificate": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCm9mZmxpbmUKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=",
                       "clientCertificateConfig": {"issueClientCertificate": False}},
        "masterVersion": inputs.get("minMasterVersion") or "1.34.3-gke.1318000",
        "selfLink": f"https://container.googleapis.com/v1/projects/{p}/locations/{loc}/clusters/{n}",
    }


@resource("gcp:container/nodePool:NodePool")
def node_pool(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """A node pool keeps its name and count; GKE reports its instance groups."""
    n = inputs.get("name") or name
    return {"id": f"{inputs.get('location') or 'offline-region'}/{inputs.get('cluster')}/{n}",
            "instanceGroupUrls": [f"https://www.googleapis.com/compute/v1/projects/{OFFLINE_PROJECT}/zones/offline/"
                                  f"instanceGroupManagers/gke-{n}-grp"]}


@resource("gcp:serviceaccount/account:Account")
def service_account(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """A Google service account: its email and member string."""
    email = f"{inputs.get('accountId') or name}@{_project(inputs)}.iam.gserviceaccount.com"
    return {"email": email, "member": f"serviceAccount:{email}", "uniqueId": "100000000000000000001",
            "id": f"projects/{_project(inputs)}/serviceAccounts/{email}"}


@resource("gcp:storage/bucket:Bucket")
def bucket(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """A bucket: its gs:// URL."""
    n = inputs.get("name") or name
    return {"url": f"gs://{n}", "id": n, "selfLink": f"https://www.googleapis.com/storage/v1/b/{n}"}


@function("gcp:organizations/getProject:getProject")
def get_project(args: dict[str, Any]) -> dict[str, Any]:
    """The project number is what IAM principals need; offline it is a fixed 12-digit number."""
    project = args.get("projectId") or OFFLINE_PROJECT
    return {"projectId": project, "number": FAKE_PROJECT_NUMBER, "name": project, "id": f"projects/{project}"}


ENGINE_VERSIONS: dict[str, dict[str, str]] = {
    "default": {"RAPID": "1.35.2-gke.1100000", "REGULAR": "1.34.4-gke.1200000", "STABLE": "1.33.6-gke.1300000",
                "EXTENDED": "1.32.9-gke.1400000"},
    "latest": {"RAPID": "1.35.3-gke.1000000", "REGULAR": "1.35.1-gke.1100000", "STABLE": "1.34.2-gke.1200000",
               "EXTENDED": "1.33.7-gke.1300000"},
}
"""What every location offers per release channel, offline: plausible versions, newer than every floor in the
catalog on RAPID and REGULAR. Tests patch it to model a channel that lags behind."""


@function("gcp:container/getEngineVersions:getEngineVersions")
def get_engine_versions(args: dict[str, Any]) -> dict[str, Any]:
    """The versions a location offers: each channel's default and newest."""
    location, project = args.get("location") or "offline-region", args.get("project") or OFFLINE_PROJECT
    versions = sorted({*ENGINE_VERSIONS["default"].values(), *ENGINE_VERSIONS["latest"].values()}, reverse=True)
    return {"id": f"{project}/{location}", "location": location, "project": project,
            "defaultClusterVersion": ENGINE_VERSIONS["default"]["REGULAR"], "latestMasterVersion": versions[0],
            "latestNodeVersion": versions[0], "validMasterVersions": versions, "validNodeVersions": versions,
            "releaseChannelDefaultVersion": dict(ENGINE_VERSIONS["default"]),
            "releaseChannelLatestVersion": dict(ENGINE_VERSIONS["latest"]),
            "releaseChannelUpgradeTargetVersion": dict(ENGINE_VERSIONS["default"])}


@dataclass
class OfflineReservation:
    """A reservation as the offline look-ups report it."""

    machine_type: str | None
    hosts: int
    """Hosts in the reservation; also in each named block and sub-block."""
    in_use: int = 0
    status: str = "READY"
    specific_required: bool = True
    degraded_hosts: int = 0
    blocks: dict[str, list[str]] = field(default_factory=dict)
    """Block name to its sub-block names."""


RESERVATIONS: dict[str, OfflineReservation] = {
    # stacks/Pulumi.gcp-a4xmax.yaml: one A4X Max block with one 18-host sub-block (a full NVL72 rack).
    "k3-a4xmax": OfflineReservation(
        machine_type="a4x-maxgpu-4g-metal", hosts=18,
        blocks={"k3-a4xmax-block-0001": ["k3-a4xmax-block-0001-subblock-0001"]}),
    # stacks/Pulumi.gcp-a4x-sglang.yaml: one A4X block with one 18-host sub-block (a GB200 NVL72 rack).
    "k3-a4x": OfflineReservation(
        machine_type="a4x-highgpu-4g", hosts=18,
        blocks={"k3-a4x-block-0001": ["k3-a4x-block-0001-subblock-0001"]}),
    # stacks/Pulumi.gcp-a4-sglang.yaml: two A4 hosts, seed 000's cluster.
    "k3-a4": OfflineReservation(machine_type="a4-highgpu-8g", hosts=2),
}
"""Reservations the offline plans know, by name (patch in tests)."""

DEFAULT_RESERVATION = OfflineReservation(machine_type=None, hosts=18)
"""What any other reservation name answers."""


def _reservation(args: dict[str, Any]) -> OfflineReservation:
    return RESERVATIONS.get(args.get("reservation") or args.get("name") or "", DEFAULT_RESERVATION)


def _zone_link(args: dict[str, Any]) -> tuple[str, str]:
    project, zone = args.get("project") or OFFLINE_PROJECT, args.get("zone") or "offline-zone"
    return project, zone


@function("gcp:compute/getReservation:getReservation")
def get_reservation(args: dict[str, Any]) -> dict[str, Any]:
    """A zonal reservation: its count, what is in use, the machine type it holds and its blocks."""
    r = RESERVATIONS.get(args.get("name") or "", DEFAULT_RESERVATION)
    project, zone = _zone_link(args)
    props = [{"machineType": r.machine_type, "guestAccelerators": [], "localSsds": [], "locationHint": "",
              "maintenanceInterval": "", "minCpuPlatform": ""}] if r.machine_type else []
    return {
        "name": args.get("name"), "project": project, "zone": zone, "status": r.status,
        "specificReservationRequired": r.specific_required,
        "specificReservations": [{"count": r.hosts, "inUseCount": r.in_use, "assuredCount": r.hosts,
                                  "instanceProperties": props, "sourceInstanceTemplate": ""}],
        "blockNames": sorted(r.blocks),
        "selfLink": f"https://www.googleapis.com/compute/v1/projects/{project}/zones/{zone}/reservations/{args.get('name')}",
        "id": f"projects/{project}/zones/{zone}/reservations/{args.get('name')}",
    }


@function("gcp:compute/getReservationBlock:getReservationBlock")
def get_reservation_block(args: dict[str, Any]) -> dict[str, Any]:
    """A reservation block: hosts, hosts in use, its sub-blocks."""
    r = _reservation(args)
    project, zone = _zone_link(args)
    subs = r.blocks.get(args.get("name") or "", [f"{args.get('name')}-subblock-0001"])
    return {
        "name": args.get("name"), "reservation": args.get("reservation"), "project": project, "zone": zone,
        "status": r.status, "blockCount": r.hosts, "inUseCount": r.in_use, "reservationSubBlockCount": len(subs),
        "reservationSubBlockInUseCount": 1 if r.in_use else 0, "subBlockNames": subs,
        "healthInfos": [{"healthStatus": "HEALTHY", "degradedSubBlockCount": 1 if r.degraded_hosts else 0,
                         "healthySubBlockCount": len(subs) - (1 if r.degraded_hosts else 0)}],
        "id": f"projects/{project}/zones/{zone}/reservations/{args.get('reservation')}/reservationBlocks/{args.get('name')}",
    }


@function("gcp:compute/getReservationSubBlock:getReservationSubBlock")
def get_reservation_sub_block(args: dict[str, Any]) -> dict[str, Any]:
    """A reservation sub-block (one NVL72 rack for A4X Max): hosts, hosts in use, health."""
    r = _reservation(args)
    project, zone = _zone_link(args)
    return {
        "name": args.get("name"), "reservation": args.get("reservation"),
        "reservationBlock": args.get("reservationBlock"), "project": project, "zone": zone, "status": r.status,
        "subBlockCount": r.hosts, "inUseCount": r.in_use,
        "healthInfos": [{"healthStatus": "DEGRADED" if r.degraded_hosts else "HEALTHY",
                         "degradedHostCount": r.degraded_hosts, "degradedInfraCount": 0,
                         "healthyHostCount": r.hosts - r.degraded_hosts, "healthyInfraCount": 1}],
        "physicalTopologies": [{"block": "offline-block", "cluster": "offline-cluster", "subBlock": "offline-subblock"}],
        "id": (f"projects/{project}/zones/{zone}/reservations/{args.get('reservation')}/reservationBlocks/"
               f"{args.get('reservationBlock')}/reservationSubBlocks/{args.get('name')}"),
    }
