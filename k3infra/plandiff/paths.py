"""Property paths and masking: the paths of two values' differences (list items by their ``name`` where they
have one), what is secret, and the properties whose change replaces a resource."""

import fnmatch
import json
import re
from typing import Any, Iterable

from ..offline import SECRET_MASK
from .changes import MISSING, Change


_IDENTITY_GCP = ("name", "project", "location", "region", "zone")

REPLACE_ON: dict[str, tuple[str, ...]] = {
    # pulumi-kubernetes: metadata.name/namespace of every kind and the kinds' own force-new fields
    # (provider/pkg/provider/forcenew.go), plus fields the API server rejects as immutable, which the
    # provider answers with a replacement.
    "kubernetes:*": ("metadata.name", "metadata.namespace"),
    "kubernetes:core/v1:ConfigMap": ("data", "binaryData"),
    "kubernetes:core/v1:Secret": ("type",),
    "kubernetes:core/v1:Service": ("spec.clusterIP", "spec.type"),
    "kubernetes:core/v1:PersistentVolumeClaim": ("spec",),
    "kubernetes:core/v1:PersistentVolume": ("spec.csi", "spec.storageClassName"),
    "kubernetes:storage.k8s.io/v1:StorageClass": ("parameters", "provisioner"),
    "kubernetes:apps/v1:Deployment": ("spec.selector",),
    "kubernetes:apps/v1:StatefulSet": ("spec.selector", "spec.serviceName", "spec.volumeClaimTemplates",
                                       "spec.podManagementPolicy"),
    "kubernetes:batch/v1:Job": ("spec.template", "spec.selector"),
    # Google Cloud (terraform-bridged): the identity of the resource
    "gcp:container/cluster:Cluster": _IDENTITY_GCP,
    "gcp:container/nodePool:NodePool": (*_IDENTITY_GCP, "cluster"),
    "gcp:storage/bucket:Bucket": ("name", "project", "location"),
    "gcp:compute/resourcePolicy:ResourcePolicy": ("name", "project", "region", "workloadPolicy"),
    # AWS
    "aws:eks/cluster:Cluster": ("name",),
    "aws:eks/nodeGroup:NodeGroup": ("clusterName", "nodeGroupName", "nodeRoleArn", "subnetIds", "capacityType",
                                    "amiType", "instanceTypes"),
    "aws:s3/bucket:Bucket": ("bucket", "bucketPrefix"),
    "aws:ec2/capacityBlockReservation:CapacityBlockReservation": ("capacityBlockOfferingId", "instancePlatform"),
    "aws-native:sagemaker:Cluster": ("clusterName", "orchestrator", "vpcConfig"),
    # Azure (azure-native): the URL path of the resource
    "azure-native:*": ("resourceGroupName", "location"),
    "azure-native:containerservice:ManagedCluster": ("resourceName",),
    "azure-native:containerservice:AgentPool": ("resourceName", "agentPoolName", "vmSize"),
    "azure-native:storage:StorageAccount": ("accountName",),
    "azure-native:storage:BlobContainer": ("accountName", "containerName"),
    "azure-native:compute:CapacityReservationGroup": ("capacityReservationGroupName", "zones"),
    # pulumiverse time
    "time:index/sleep:Sleep": ("triggers",),
    # Alibaba Cloud
    "alicloud:cs/managedKubernetes:ManagedKubernetes": ("name", "clusterSpec"),
    "alicloud:cs/nodePool:NodePool": ("clusterId",),
    "alicloud:oss/bucket:Bucket": ("bucket",),
}
"""Type token (fnmatch pattern) → property paths whose change replaces the resource (a path covers what is
below it)."""

SENSITIVE_KEY = re.compile(r"(password|passwd|secret|token|apikey|api_key|privatekey|private_key|kubeconfig"
                           r"|credential|clientsecret|accesskey|access_key)", re.I)
"""A leaf (or a Kubernetes env var) whose name matches is masked, unless the name says it is a reference
(``...Name``, ``...Ref``, ``...Arn``, ``...Id``, ``...Path``...)."""

_REFERENCE_SUFFIX = re.compile(r"(name|names|ref|arn|id|ids|path|mode|enabled|type|policy|config)$", re.I)


_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


def key_segment(prefix: str, key: str) -> str:
    if _IDENT.match(key):
        return f"{prefix}.{key}" if prefix else key
    return f"{prefix}[{json.dumps(key)}]"


def _named(items: list[Any]) -> bool:
    """A list of objects each with a unique ``name`` (containers, env, ports, volumes): diffed by name."""
    names = [i.get("name") for i in items if isinstance(i, dict)]
    return len(names) == len(items) and all(isinstance(n, str) for n in names) and len(set(names)) == len(names)


def _sensitive(path: str, key: str | None, env_name: str | None) -> bool:
    if env_name is not None and SENSITIVE_KEY.search(env_name) and key == "value":
        return True
    return key is not None and bool(SENSITIVE_KEY.search(key)) and not _REFERENCE_SUFFIX.search(key)


def leaves(value: Any, path: str, key: str | None = None, env_name: str | None = None,
            mask_all: bool = False) -> Iterable[tuple[str, Any, bool]]:
    """(path, value, masked) for every leaf below ``value``."""
    if isinstance(value, dict) and value:
        name = value.get("name") if isinstance(value.get("name"), str) else None
        for k in sorted(value):
            yield from leaves(value[k], key_segment(path, k), k, name if "value" in value else env_name, mask_all)
        return
    if isinstance(value, list) and value:
        if _named(value):
            for item in value:
                yield from leaves(item, f"{path}[name={item['name']}]", None, None, mask_all)
        else:
            for i, item in enumerate(value):
                yield from leaves(item, f"{path}[{i}]", None, None, mask_all)
        return
    masked = value == SECRET_MASK or (value not in (None, "", MISSING) and
                                      (mask_all or _sensitive(path, key, env_name)))
    yield path, value, masked


def diff_values(old: Any, new: Any, path: str, key: str | None = None, env_name: str | None = None,
                 mask_all: bool = False) -> list[Change]:
    """Changes between two JSON values, at leaf granularity (objects and named lists recurse)."""
    if old == new:
        return []
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[Change] = []
        name = new.get("name") if isinstance(new.get("name"), str) and "value" in new else env_name
        for k in sorted(set(old) | set(new)):
            sub = key_segment(path, k)
            if k not in old:
                out += [Change(p, MISSING, v, m) for p, v, m in leaves(new[k], sub, k, name, mask_all)]
            elif k not in new:
                out += [Change(p, v, MISSING, m) for p, v, m in leaves(old[k], sub, k, name, mask_all)]
            else:
                out += diff_values(old[k], new[k], sub, k, name, mask_all)
        return out
    if isinstance(old, list) and isinstance(new, list):
        out = []
        if _named(old) and _named(new):
            by_old = {i["name"]: i for i in old}
            by_new = {i["name"]: i for i in new}
            for n in [*by_old, *(n for n in by_new if n not in by_old)]:
                sub = f"{path}[name={n}]"
                if n not in by_new:
                    out += [Change(p, v, MISSING, m) for p, v, m in leaves(by_old[n], sub, None, None, mask_all)]
                elif n not in by_old:
                    out += [Change(p, MISSING, v, m) for p, v, m in leaves(by_new[n], sub, None, None, mask_all)]
                else:
                    out += diff_values(by_old[n], by_new[n], sub, None, None, mask_all)
            if [i["name"] for i in old if i["name"] in by_new] != [i["name"] for i in new if i["name"] in by_old]:
                out.append(Change(f"{path}(order)", [i["name"] for i in old], [i["name"] for i in new]))
            return out
        if all(not isinstance(x, (dict, list)) for x in (*old, *new)):
            # a list of scalars (args, CIDRs, zones) reads best whole
            masked = any(x == SECRET_MASK for x in (*old, *new)) or mask_all or _sensitive(path, key, env_name)
            return [Change(path, old, new, masked)]
        for i in range(max(len(old), len(new))):
            sub = f"{path}[{i}]"
            if i >= len(new):
                out += [Change(p, v, MISSING, m) for p, v, m in leaves(old[i], sub, None, None, mask_all)]
            elif i >= len(old):
                out += [Change(p, MISSING, v, m) for p, v, m in leaves(new[i], sub, None, None, mask_all)]
            else:
                out += diff_values(old[i], new[i], sub, None, None, mask_all)
        return out
    masked = SECRET_MASK in (old, new) or mask_all or _sensitive(path, key, env_name)
    return [Change(path, old, new, masked)]


def covers(rule: str, path: str) -> bool:
    """``spec.template`` covers ``spec.template.spec.containers[name=x].image``."""
    return path == rule or path.startswith(rule + ".") or path.startswith(rule + "[")


def replace_paths(type_: str) -> tuple[str, ...]:
    """The property paths known to replace a resource of ``type_``."""
    out: list[str] = []
    for pattern, paths in REPLACE_ON.items():
        if fnmatch.fnmatchcase(type_, pattern):
            out += paths
    return tuple(out)
