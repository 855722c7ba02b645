"""Where the HyperPod endpoint's model comes from: the operator's S3 mount with its prefetch into the worker's memory,
or, with ``nodeWeights`` (issue 40), the instance's local NVMe, filled from S3 by the pod itself where it is missing.

The weights on the node follow AWS's "Kubernetes volume with fallback" (catalog.hyperpod ``NVME_PAGE``, approach 2):
the InferenceEndpointConfig's ``modelSourceType`` is ``kubernetesVolume`` (no ``modelLocation``, no S3 mount, no
prefetch), ``kubernetes.volumes`` holds ``model-weights`` (the worker's ``modelVolumeMount``) as a hostPath of the
model's directory in the node's copy under ``/opt/dlami/nvme/k3infra``, and an init container fills that copy with
the node agent's copier (``node-fill``: k3infra.weightcopy.copier.node ``node_copy``, the code GKE's and EKS's node
agent runs): it waits for the sync's completion marker, finds a copy of the bucket's revision in a moment, else
copies every missing file verified against the bucket's manifest, leaving a fifth of the NVMe free, and writes the
marker last; it fails (and the kubelet retries it) rather than let the engine start on a partial copy. A node that
holds the revision restarts from its NVMe; one that does not fills first (sizing.restart ``filled_by_the_pod``).

The init container reads S3 as the IEC's ``kubernetes.serviceAccountName``: a ServiceAccount of its own, labelled
user-assignable and annotated with an IRSA role that may list the bucket and read the model's prefix, nothing else
(the page's scoped policy). Every container of the pod gets that role, the worker too. The operator accepts the
ServiceAccount only with the add-on's ``enableCustomServiceAccounts`` (``HyperPodEndpoint`` sets it then). The
hostPaths make the endpoint's namespace Pod Security ``privileged`` (baseline forbids hostPath volumes), as the
GKE and EKS serving namespaces are with their node directories.
"""

import json
from typing import Any, Mapping, NotRequired, Optional, TypedDict

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from . import policies
from .iam import granted_arn
from ..catalog import Loader
from ..catalog.hyperpod import IRSA_ROLE_ANNOTATION, KUBERNETES_VOLUME_SOURCE, USER_ASSIGNABLE_LABEL
from ..config import ConfigError, Problem, StackConfig
from ..config.problems import show
from ..serving import node_agent
from ..serving.copier_pods import TMP_SIZE
from ..weightcopy import delivery

MODEL_VOLUME = "model-weights"
"""The worker's ``modelVolumeMount.name``; with the node's copy, the hostPath of the model's directory in it."""
NODE_VOLUME = "node-weights"
"""The node's directory (the init container's), a hostPath."""
INIT_CONTAINER = "node-weights"
SERVICE_ACCOUNT = "k3-node-weights"
"""The endpoint pod's ServiceAccount (IRSA: read the model's prefix)."""
FILL_RESOURCES = node_agent.RESOURCES
"""The init container's requests and limits: the node agent's, the same copy."""


class NodeWeights(TypedDict):
    """The weights kept on the instance's local NVMe (``InferenceEndpointArgs.node_weights``)."""

    node_dir: str
    """The host directory on the NVMe (catalog.node_local NODE_DIRECTORIES[hyperpod])."""
    model_path: str
    """The model's directory inside the bucket (PREFIX/<Hugging Face id>), which the node copy mirrors."""
    repo: pulumi.Input[str]
    """``REPO@REVISION=s3://BUCKET/PATH`` of the model (the sync's marker)."""
    config_map: str
    """The ConfigMap holding the copier (the sync's)."""
    marker_timeout_seconds: int
    """How long the init container waits for the sync's marker (the sync's budget)."""
    auth_window_seconds: int
    """How long the copier retries a refused authorization (the IRSA role's propagation)."""
    copy_env: Mapping[str, str]
    """The store's environment for the copier (its region)."""
    bucket_arn: NotRequired[pulumi.Input[str]]
    """The weight bucket's ARN (the IRSA role's policy); required by ``HyperPodEndpoint``."""


def model_host_path(w: NodeWeights) -> str:
    """The model's directory in the node's copy: ``NODE_DIR/weights/PATH`` (k3infra.weightcopy.copier.node
    ``node_root``)."""
    return f"{w['node_dir'].rstrip('/')}/weights/{w['model_path'].strip('/')}"


def fill_container(w: NodeWeights, repo: str) -> dict[str, Any]:
    """The init container: the copier's ``node-fill`` into the node's directory, as the node agent runs the copier
    (its image, command, ConfigMap and temporary directory; serving.copier_pods ``copier_container``)."""
    cpu, memory, cpu_limit, memory_limit = FILL_RESOURCES
    env = {"HOME": "/tmp", **w["copy_env"]}
    return {
        "name": INIT_CONTAINER, "image": delivery.IMAGE, "imagePullPolicy": "IfNotPresent",
        "command": list(delivery.COMMAND),
        "args": ["node-fill", "--repo", repo, "--node-dir", node_agent.NODE_MOUNT,
                 "--timeout", str(int(w["marker_timeout_seconds"])),
                 "--auth-window", str(int(w["auth_window_seconds"]))],
        "env": [{"name": k, "value": v} for k, v in env.items()],
        "resources": {"requests": {"cpu": cpu, "memory": memory}, "limits": {"cpu": cpu_limit, "memory": memory_limit}},
        "securityContext": {"allowPrivilegeEscalation": False, "privileged": False, "readOnlyRootFilesystem": True,
                            "capabilities": {"drop": ["ALL"]}},
        "volumeMounts": [{"name": "copier", "mountPath": f"{delivery.MOUNT}/{delivery.PACKAGE}", "readOnly": True},
                         {"name": "copier-tmp", "mountPath": "/tmp"},
                         {"name": NODE_VOLUME, "mountPath": node_agent.NODE_MOUNT}],
    }


def kubernetes_spec(w: NodeWeights, repo: str) -> dict[str, Any]:
    """The IEC's ``spec.kubernetes``: the ServiceAccount, the init container and the four volumes."""
    return {
        "serviceAccountName": SERVICE_ACCOUNT,
        "initContainers": [fill_container(w, repo)],
        "volumes": [
            {"name": "copier", "configMap": {"name": w["config_map"]}},
            {"name": "copier-tmp", "emptyDir": {"sizeLimit": TMP_SIZE}},
            {"name": NODE_VOLUME, "hostPath": {"path": w["node_dir"], "type": "DirectoryOrCreate"}},
            {"name": MODEL_VOLUME, "hostPath": {"path": model_host_path(w), "type": "DirectoryOrCreate"}},
        ],
    }


def model_source(w: Optional[NodeWeights], bucket: str, region: str, model_location: str,
                 prefetch: bool) -> dict[str, Any]:
    """The IEC's ``modelSourceConfig``: the node's volume (no location: the page's validation error), else S3."""
    if w is not None:
        return {"modelSourceType": KUBERNETES_VOLUME_SOURCE}
    return {"modelSourceType": "s3", "s3Storage": {"bucketName": bucket, "region": region},
            "modelLocation": model_location, "prefetchEnabled": prefetch}


def node_weights_identity(name: str, w: NodeWeights, *, namespace: str, oidc_provider_arn: pulumi.Input[str],
                          oidc_issuer: pulumi.Input[str], parent: pulumi.Resource,
                          depends_on: list[pulumi.Resource]) -> k8s.core.v1.ServiceAccount:
    """The endpoint pod's ServiceAccount: an IRSA role trusted by that one account of that namespace, allowed to list
    the bucket and read the model's prefix, and the account labelled user-assignable with the role's annotation."""
    child = pulumi.ResourceOptions(parent=parent)
    trust = pulumi.Output.all(oidc_provider_arn, oidc_issuer).apply(lambda v: json.dumps(
        policies.irsa_trust(v[0], v[1], namespace, SERVICE_ACCOUNT)))
    role = aws.iam.Role(f"{name}-node-weights-role", assume_role_policy=trust, opts=child)
    if "bucket_arn" not in w:
        raise pulumi.InputPropertyError("endpoint.node_weights.bucket_arn", "the role reads the weight bucket")
    read = aws.iam.RolePolicy(f"{name}-node-weights-read", role=role.id, opts=child, policy=pulumi.Output.from_input(
        w["bucket_arn"]).apply(lambda arn: json.dumps(policies.s3_read_only(arn, w["model_path"]))))
    key, value = USER_ASSIGNABLE_LABEL
    return k8s.core.v1.ServiceAccount(
        f"{name}-node-weights", metadata=k8s.meta.v1.ObjectMetaArgs(
            name=SERVICE_ACCOUNT, namespace=namespace, labels={key: value, "app.kubernetes.io/part-of": "k3infra"},
            annotations={IRSA_ROLE_ANNOTATION: granted_arn(role, [read])}),
        automount_service_account_token=False,
        opts=pulumi.ResourceOptions(parent=parent, depends_on=depends_on))


def prefetch_fits(cfg: StackConfig) -> None:
    """The operator's prefetch (``weights.loader: bucket-copy``, HyperPod's only loader, without the node's copy)
    stages the model in the worker's memory, the catalog's share of the instance's host memory
    (``serving.pods.node_requests``): it must hold the model, or the worker is killed for memory before the engine
    starts."""
    from ..serving.pods import node_requests

    if cfg.weights.loader != Loader.BUCKET_COPY or keeps_weights_on_node(cfg):
        return
    memory = node_requests(cfg.accelerator)[1]
    if cfg.model.weight_bytes > int(memory.removesuffix("Gi")) * 2**30:
        raise ConfigError([Problem(
            key="k3infra:accelerator",
            reason=f"the HyperPod operator prefetches the model ({cfg.model.weight_bytes / 2**30:,.0f} GiB) into the "
                   f"worker's memory, and a {cfg.accelerator.sku} worker has {memory}",
            given=show(cfg.accelerator.sku), allowed="an instance type whose worker memory holds the model")],
            f"stack {cfg.stack}")


def keeps_weights_on_node(cfg: StackConfig) -> bool:
    """The stack keeps the weights on the instances' NVMe (config.engine.read_node_weights decided it)."""
    return cfg.sizing.node_start is not None and cfg.sizing.node_start.local


def pod_security_level(cfg: StackConfig) -> str:
    """The endpoint namespace's Pod Security: ``privileged`` with the node's hostPaths, else ``baseline``."""
    return "privileged" if keeps_weights_on_node(cfg) else "baseline"


def node_weights_of(cfg: StackConfig, marker: Optional[Any], store: Mapping[str, Any],
                    bucket_arn: pulumi.Input[str]) -> Optional[NodeWeights]:
    """The endpoint's ``node_weights`` where the stack keeps them (with the sync's ``WeightsMarker``), else None."""
    from ..serving.copier_pods import LONGEST_GRANT_PROPAGATION

    ns = cfg.sizing.node_start
    if ns is None or not keeps_weights_on_node(cfg) or marker is None:
        return None
    return NodeWeights(
        node_dir=ns.node_dir, model_path=cfg.weights.model_path(cfg.model.hf_id), repo=marker["repos"][0],
        config_map=marker["config_map"], marker_timeout_seconds=int(marker["timeout_seconds"]),
        auth_window_seconds=int(store.get("grant_propagation_seconds") or LONGEST_GRANT_PROPAGATION),
        copy_env={k: str(v) for k, v in (store.get("copy_env") or {}).items()}, bucket_arn=bucket_arn)


__all__ = ["INIT_CONTAINER", "MODEL_VOLUME", "NODE_VOLUME", "SERVICE_ACCOUNT", "NodeWeights", "fill_container",
           "keeps_weights_on_node", "kubernetes_spec", "model_host_path", "model_source", "node_weights_identity",
           "node_weights_of", "pod_security_level", "prefetch_fits"]
