"""Where a stack runs: its cloud and the provider keys (the region), the platform, the accelerator (an existing
cluster's own node shape), and the cluster section."""

import dataclasses
import re
from dataclasses import dataclass
from typing import Any, Mapping

from ..catalog import ACCELERATORS, PLATFORMS_BY_CLOUD, Accelerator, Cloud, Platform, accelerators_of
from .clouds.kubernetes import kubernetes_storage
from .keys import CLOUD_SECTIONS, PROVIDER_KEYS
from .model import ClusterConfig
from .problems import Problems
from .schema import K, did_you_mean, is_given


@dataclass(frozen=True)
class Target:
    """Where the stack runs, as far as its keys are valid (None where a problem was reported)."""

    cloud: Cloud | None
    region: str | None
    """The provider's region (an existing cluster: its S3-compatible store's signing region)."""
    platform: Platform | None
    accelerator: Accelerator | None


def read_target(v: dict[str, Any], raw: Mapping[str, Any], ns: Mapping[str, Any], p: Problems) -> Target:
    """The cloud, its provider keys and region, the platform, the sections of other clouds (a problem), the keys only
    an existing cluster reads, and the accelerator."""
    cloud: Cloud | None = v["cloud"] if is_given(v["cloud"]) else None
    region = _provider_keys(raw, cloud, p)
    if cloud == Cloud.KUBERNETES:
        region = kubernetes_storage(v).get("region") or "us-east-1"  # the S3-compatible store's signing region
    platform = _platform(v, cloud, p)
    _cloud_sections(ns, cloud, p)
    if cloud is not None and cloud != Cloud.KUBERNETES:
        for name in EXISTING_CLUSTER_KEYS:
            if v.get(name) is not None:
                p.add(K + name, f"applies to cloud kubernetes (an existing cluster); {cloud} stacks make their own "
                      "cluster and bucket", "[secret]", "unset")
    return Target(cloud, region, platform, _accelerator(v, cloud, platform, p))


EXISTING_CLUSTER_KEYS = ("kubeconfig", "s3AccessKeyId", "s3SecretAccessKey")
"""Root keys only an existing cluster (cloud kubernetes) reads."""


def _provider_keys(raw: Mapping[str, Any], cloud: Cloud | None, p: Problems) -> str | None:
    """Check the provider keys k3infra needs; return the region."""
    if cloud is None:
        return None
    region = None
    for key, required, what in PROVIDER_KEYS[cloud]:
        value = raw.get(key)
        if value is None:
            if required:
                p.add(key, f"is required on {cloud} stacks ({what})", None, "a string")
            continue
        if not isinstance(value, str) or not value:
            p.add(key, "must be a non-empty string", value, "a string")
            continue
        if key.endswith((":region", ":location")):
            region = value
    return region


def _platform(v: dict[str, Any], cloud: Cloud | None, p: Problems) -> Platform | None:
    if cloud is None:
        return v["platform"] if is_given(v["platform"]) else None
    allowed = PLATFORMS_BY_CLOUD[cloud]
    if not is_given(v["platform"]):
        return allowed[0] if v["platform"] is None else None
    if v["platform"] not in allowed:
        p.add(K + "platform", f"is not a platform of {cloud}", str(v["platform"]), ", ".join(allowed))
        return None
    return v["platform"]


def _cloud_sections(ns: Mapping[str, Any], cloud: Cloud | None, p: Problems) -> None:
    if cloud is None:
        return
    for other, section in CLOUD_SECTIONS.items():
        if other != cloud and ns.get(section) not in (None, {}):
            p.add(K + section, f"holds {other} settings, but this stack deploys to {cloud}", ns[section],
                  f"k3infra:{CLOUD_SECTIONS[cloud]} settings only")


def _accelerator(v: dict[str, Any], cloud: Cloud | None, platform: Platform | None, p: Problems) -> Accelerator | None:
    sku = v["accelerator"]
    if not isinstance(sku, str):
        return None
    own = [a.sku for a in accelerators_of(cloud)] if cloud else list(ACCELERATORS)
    accel = ACCELERATORS.get(sku)
    if accel is None:
        p.add(K + "accelerator", "is not a machine type the catalog knows" + did_you_mean(sku, own), sku,
              ", ".join(own))
        return None
    if cloud is not None and accel.cloud != cloud:
        p.add(K + "accelerator", f"is a {accel.cloud} machine type, and this stack deploys to {cloud}", sku,
              ", ".join(own))
        return None
    if cloud == Cloud.KUBERNETES:
        return _stated_shape(v, accel, p)
    managed_sku = sku.startswith("ml.")
    if platform == Platform.HYPERPOD and not managed_sku:
        p.add(K + "accelerator", "HyperPod instance groups take SageMaker instance types (ml.*)", sku,
              ", ".join(s for s in own if s.startswith("ml.")))
        return None
    if managed_sku and platform is not None and platform != Platform.HYPERPOD:
        p.add(K + "accelerator", f"is a SageMaker instance type; platform {platform} takes EC2 instance types", sku,
              ", ".join(s for s in own if not s.startswith("ml.")))
        return None
    return accel


#: ``kubernetes.gpuNodes`` keys that restate a fact of the node shape, and the Accelerator field each sets.
STATED_SHAPE = {"gpusPerNode": "gpus_per_node", "gpuMemoryGb": "gpu_memory_gb",
                "nvlinkDomainGpus": "nvlink_domain_gpus", "vcpus": "vcpus", "hostMemoryGib": "host_memory_gib"}


def _stated_shape(v: dict[str, Any], accel: Accelerator, p: Problems) -> Accelerator | None:
    """An existing cluster's node shape with the facts the stack states about its own nodes (its GPU generation
    and CPU architecture stay the shape's: they pick the engine recipe and the image's build)."""
    k = v.get("kubernetes")
    nodes = k.get("gpuNodes") if isinstance(k, dict) else None
    if not isinstance(nodes, dict):
        return accel
    stated = {field: nodes[key] for key, field in STATED_SHAPE.items() if isinstance(nodes.get(key), (int, float))}
    if not stated:
        return accel
    gpus = stated.get("gpus_per_node", accel.gpus_per_node)
    domain = stated.get("nvlink_domain_gpus", accel.nvlink_domain_gpus if "gpus_per_node" not in stated else gpus)
    if domain < gpus or domain % gpus:
        p.add(K + "kubernetes.gpuNodes.nvlinkDomainGpus", f"an NVLink domain holds whole nodes of {gpus} GPUs", domain,
              f"a multiple of {gpus}")
        return None
    sources = dict(accel.sources)
    for key, field in STATED_SHAPE.items():
        if field in stated:
            sources[field] = f"stated in the stack (kubernetes.gpuNodes.{key})"
    return dataclasses.replace(accel, **{**stated, "nvlink_domain_gpus": domain}, sources=sources,
                               max_nodes_per_pool=domain // gpus if domain > gpus else accel.max_nodes_per_pool)


def read_cluster(v: dict[str, Any], stack: str, p: Problems) -> ClusterConfig | None:
    """The ``cluster`` section: the name (``k3-<stack>`` by default), version, system nodes, deletion protection."""
    c = v["cluster"]
    if not isinstance(c, dict):
        return None
    default_name = re.sub(r"[^a-z0-9-]+", "-", f"k3-{stack}".lower()).strip("-")[:40]
    name, version = c.get("name"), c.get("kubernetesVersion")
    node_type, nodes = c.get("systemNodeType"), c.get("systemNodes")
    return ClusterConfig(
        name=name if isinstance(name, str) else default_name,
        kubernetes_version=version if isinstance(version, str) else None,
        deletion_protection=c.get("deletionProtection") is not False,
        system_node_type=node_type if isinstance(node_type, str) else None,
        system_nodes=nodes if isinstance(nodes, int) else 2,
    )
