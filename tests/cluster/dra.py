"""ResourceSlices and DeviceClasses as the DRA drivers k3infra's stacks use publish them, per node.

- DRANET (kubernetes-sigs/dranet v1.4.0, the chart k3infra pins): one slice per node, driver ``dra.net``
  (cmd/dranet/app.go ``driverName``), pool = the node's name (pkg/driver/dra_hooks.go ``PublishResources``), one
  device per NIC named ``pci-<address>`` (pkg/names/names.go ``NormalizePCIAddress``). An InfiniBand-only virtual
  function (``moveIBInterfaces: false``) has no netdev: it carries the PCI attributes (pkg/inventory/db.go
  ``discoverPCIDevices``: pciAddress, pciVendor, pciDevice, pciSubsystem, numaNode), ``rdma`` and ``rdmaDevice``
  (``addRDMAAttributes``), and Azure's IMDS attributes (pkg/cloudprovider/azure/azure.go ``GetDeviceAttributes``:
  vmSize, placementGroupId, interconnectGroupId, interconnectSubgroupId). Values follow the GB300 slice dranet
  ships as its example (examples/azure_aks_examples/gb300/resourceslice-dranet.yaml: 4 ConnectX VFs per VM).
- GKE managed DRANET (``mrdma.google.com``): closed source. The slice's shape is what llm-d's GKE guide shows
  ``kubectl get resourceslices`` return (llm-d docs, "GKE" infrastructure provider: driver ``mrdma.google.com``,
  devices with ``type: nic`` and ``resource.kubernetes.io/pcieRoot``); the device count is the machine's RDMA NICs
  (k3infra.catalog.gke ``rdma_nics``); the DeviceClass's selector is an ESTIMATE (GKE creates the class itself).
- The NVIDIA DRA driver's ComputeDomain kubelet plugin (NVIDIA/k8s-dra-driver-gpu v25.12.0, commit 0882da8):
  one slice per node it runs on, driver ``compute-domain.nvidia.com`` (cmd/compute-domain-controller/main.go
  ``DriverName``), devices ``channel-0`` and ``daemon-0`` with attributes ``type`` and ``id``
  (cmd/compute-domain-kubelet-plugin/deviceinfo.go ``GetDevice``; driver.go publishes channel 0 only, nvlib.go
  one daemon device); the chart's DeviceClasses select them (deployments/helm/nvidia-dra-driver-gpu/templates/
  deviceclass-compute-domain-default-channel.yaml, deviceclass-compute-domain-daemon.yaml).

A slice is published only on nodes the driver's DaemonSet would run on, by the chart values the render gives it.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from k3infra.catalog.accelerators import ACCELERATORS
from k3infra.catalog.gke import DRANET_LABEL, GKE_MACHINES
from k3infra.catalog.kubernetes_nodes import Taint
from k3infra.catalog.types import Cloud

from .scheduling import runs_on

if TYPE_CHECKING:
    from .profiles import Pool

DRANET_DRIVER = "dra.net"
GKE_RDMA_DRIVER = "mrdma.google.com"
COMPUTE_DOMAIN_DRIVER = "compute-domain.nvidia.com"
RESOURCE_API = "resource.k8s.io/v1"

CONNECTX_VF = {"pciVendor": "Mellanox Technologies", "pciDevice": "ConnectX Family mlx5Gen Virtual Function",
               "pciSubsystem": "0240"}
"""What the GB300 VMs' InfiniBand VFs report (dranet examples/azure_aks_examples/gb300/resourceslice-dranet.yaml)."""

AZURE_DEFAULT_DAEMON_TOLERATIONS = [{"operator": "Exists", "effect": "NoSchedule"}]
"""DRANET's chart tolerates every NoSchedule taint (its values.yaml; k3infra.serving.gpu_addons.dranet)."""


def _string(v: str) -> dict[str, str]:
    return {"string": v}


def _slice(node: str, driver: str, devices: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": RESOURCE_API, "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-{driver.replace('.', '-')}"},
            "spec": {"driver": driver, "nodeName": node, "pool": {"name": node, "generation": 1,
                                                                  "resourceSliceCount": 1},
                     "devices": devices}}


def _ids(pool: "Pool") -> dict[str, str]:
    """Stable GUIDs of the pool's placement group and InfiniBand interconnect (IMDS reports them per VM; the VMs
    of one reservation share them)."""
    base = uuid.uuid5(uuid.NAMESPACE_DNS, ".".join((pool.name, *pool.topology)))
    return {"placementGroupId": str(base), "interconnectGroupId": str(uuid.uuid5(base, "group")),
            "interconnectSubgroupId": str(uuid.uuid5(base, "subgroup"))}


def dranet_devices(pool: "Pool", nics: int) -> list[dict[str, Any]]:
    """The InfiniBand VFs of one GB300 VM as DRANET publishes them."""
    ids = _ids(pool)
    out = []
    for i in range(nics):
        address = f"{0x0101 + i:04x}:00:00.0"
        attrs: dict[str, Any] = {f"dra.net/{k}": _string(v) for k, v in CONNECTX_VF.items()}
        attrs.update({"dra.net/pciAddress": _string(address), "dra.net/numaNode": {"int": i * 2 // nics},
                      "dra.net/rdma": {"bool": True}, "dra.net/rdmaDevice": _string(f"mlx5_{i}"),
                      "azure.dra.net/vmSize": _string(pool.machine)})
        attrs.update({f"azure.dra.net/{k}": _string(v) for k, v in ids.items()})
        out.append({"name": "pci-" + address.replace(":", "-").replace(".", "-"), "attributes": attrs})
    return out


def gke_rdma_devices(nics: int) -> list[dict[str, Any]]:
    """GKE managed DRANET's NICs on one node (shape from llm-d's GKE guide)."""
    return [{"name": f"nic-{i}", "attributes": {"type": _string("nic"),
                                                "resource.kubernetes.io/pcieRoot": _string(f"pci0000:{i:02x}")}}
            for i in range(nics)]


COMPUTE_DOMAIN_DEVICES = [{"name": f"{kind}-0", "attributes": {"type": _string(kind), "id": {"int": 0}}}
                          for kind in ("channel", "daemon")]


def node_slices(node: str, labels: Mapping[str, str], taints: Sequence[Taint], pool: "Pool",
                charts: Mapping[str, Mapping[str, Any]], *, index: int) -> list[dict[str, Any]]:
    """The slices every DRA driver of the stack publishes on GPU node ``node``."""
    out = []
    machine = GKE_MACHINES.get(pool.machine)
    if machine and machine.rdma_device_class and labels.get(DRANET_LABEL) == "true":
        out.append(_slice(node, GKE_RDMA_DRIVER, gke_rdma_devices(machine.rdma_nics)))
    dranet = charts.get("dranet")
    if dranet is not None:
        values = dranet.get("values") or {}
        if runs_on(labels, taints, values.get("nodeSelector") or {}, values.get("affinity"),
                   values.get("tolerations") or AZURE_DEFAULT_DAEMON_TOLERATIONS):
            out.append(_slice(node, DRANET_DRIVER, dranet_devices(pool, ACCELERATORS[pool.machine].fabric.nics)))
    driver = charts.get("nvidia-dra-driver-gpu")
    if driver is not None:
        values = driver.get("values") or {}
        plugin = values.get("kubeletPlugin") or {}
        if ((values.get("resources") or {}).get("computeDomains") or {}).get("enabled", True) and runs_on(
                labels, taints, plugin.get("nodeSelector") or {}, plugin.get("affinity"), plugin.get("tolerations") or []):
            out.append(compute_domain_slice(node))
    return out


def device_classes(cloud: Cloud, charts: Mapping[str, Any], gke_dranet: bool) -> list[dict[str, Any]]:
    """The DeviceClasses the platform (GKE managed DRANET) and the drivers' charts create."""
    out = []
    if cloud == Cloud.GCP and gke_dranet:
        out.append(_class(GKE_RDMA_DRIVER, f'device.driver == "{GKE_RDMA_DRIVER}"'))
    if "nvidia-dra-driver-gpu" in charts:
        out += compute_domain_classes()
    return out


def compute_domain_classes() -> list[dict[str, Any]]:
    """The NVIDIA DRA driver's two ComputeDomain DeviceClasses (its chart's templates)."""
    return [_class("compute-domain-default-channel.nvidia.com",
                   "device.driver == 'compute-domain.nvidia.com' && device.attributes['compute-domain.nvidia.com']"
                   ".type == 'channel' && device.attributes['compute-domain.nvidia.com'].id == 0"),
            _class("compute-domain-daemon.nvidia.com",
                   "device.driver == 'compute-domain.nvidia.com' && device.attributes['compute-domain.nvidia.com']"
                   ".type == 'daemon'")]


def compute_domain_slice(node: str) -> dict[str, Any]:
    """The ResourceSlice the driver's kubelet plugin publishes on ``node`` (one channel, one daemon device)."""
    return _slice(node, COMPUTE_DOMAIN_DRIVER, [dict(d) for d in COMPUTE_DOMAIN_DEVICES])


def _class(name: str, expression: str) -> dict[str, Any]:
    return {"apiVersion": RESOURCE_API, "kind": "DeviceClass", "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": expression}}]}}


def notes(charts: Mapping[str, Any]) -> list[str]:
    """What stands in for each chart of the render."""
    meaning = {
        "lws": "the LWS controller runs out of cluster (tests/cluster/local.py), its webhooks registered by URL",
        "nvidia-dra-driver-gpu": "its DeviceClasses, its kubelet plugin's ResourceSlices on the nodes its values "
                                 "admit, and tests/cluster/compute_domain.py for its controller",
        "dranet": "DRANET's ResourceSlices on the nodes its values admit",
        "nvidia-device-plugin": "nvidia.com/gpu capacity on the nodes its affinity and tolerations admit",
        "dcgm-exporter": "nothing (metrics only; its pods would not change what the stack's pods get)",
    }
    return [f"{name}: {meaning.get(name, 'not reproduced (its pods are not rendered)')}" for name in sorted(charts)]


__all__ = ["COMPUTE_DOMAIN_DRIVER", "DRANET_DRIVER", "GKE_RDMA_DRIVER", "compute_domain_classes",
           "compute_domain_slice", "device_classes", "dranet_devices", "node_slices", "notes"]
