"""The HyperPod Inference Operator's InferenceEndpointConfig: the object as plain data and the custom resource whose
status (the endpoint's load balancer) is an output."""

from typing import Any, Mapping, Optional, Sequence

import pulumi
import pulumi_kubernetes as k8s
from pulumi_kubernetes._utilities import get_version as k8s_version

from ..catalog.hyperpod import IEC_API_VERSION, IEC_KIND
from .hyperpod_weights import MODEL_VOLUME, NodeWeights, kubernetes_spec, model_source

MODEL_MOUNT_PATH = "/opt/ml/model"
"""Where the operator mounts the model (the CRD's default ``modelVolumeMount.mountPath``)."""

def probe_failure_threshold(budget_seconds: int, period_seconds: int = 10) -> int:
    """Start-up probe failures allowed so the probe covers ``budget_seconds``."""
    return max(1, -(-budget_seconds // period_seconds))


def inference_endpoint_config(
    *,
    name: str,
    namespace: str,
    model_name: str,
    instance_type: str,
    replicas: int,
    image: str,
    args: Sequence[str],
    env: Mapping[str, str],
    port: int,
    health_path: str,
    gpus: int,
    cpu: str,
    memory: str,
    bucket_name: str,
    region: str,
    model_location: str,
    prefetch: bool,
    max_deploy_seconds: int,
    startup_budget_seconds: int,
    metrics_path: str = "/metrics",
    invocation_path: str = "v1/chat/completions",
    autoscaling: Optional[Mapping[str, Any]] = None,
    node_weights: Optional[NodeWeights] = None,
    node_repo: str = "",
) -> dict[str, Any]:
    """The InferenceEndpointConfig object (apiVersion, kind, metadata, spec) as plain data.

    The model comes from S3 (``modelSourceType: s3``), never from a Hugging Face download on each start;
    the server's health path backs the load balancer's check and a start-up probe that covers the
    sizing's load budget; ``maxDeployTimeInSeconds`` is the sizing's await budget. The worker requests and is
    limited to ``cpu`` and ``memory`` with every GPU of the instance (requests = limits): with ``prefetch`` the
    operator stages the whole model in the instance's memory before the engine loads it (the CRD's
    ``prefetchEnabled``), and its S3 prefetch sample requests CPU and memory for that too (aws/sagemaker-hyperpod-cli
    ``helm_chart/HyperPodHelmChart/charts/inference-operator/config/samples/v1_s3_modeldeployment.yaml``: ``cpu:
    100000m``, ``memory: 384Gi`` on a g5.48xlarge), so the pod is neither BestEffort nor the first evicted. The
    operator scrapes the engine's own metrics where it serves them (``metrics.modelMetrics``: the CRD's default port
    is 8080, which no engine here listens on). ``autoscaling`` is the CRD's ``autoScalingSpec``
    (k3infra.serving.autoscaling.hyperpod_autoscaling_spec); ``replicas`` is then the count it starts with.
    With ``node_weights`` the model is the instance's NVMe copy (``kubernetesVolume``, the init container filling
    it from ``node_repo``, k3infra.aws.hyperpod_weights) and the S3 source, its location and prefetch are not set.
    """
    probe_period = 10
    http = {"path": health_path, "port": port}
    amounts = {"nvidia.com/gpu": gpus, "cpu": cpu, "memory": memory}
    return {
        "apiVersion": IEC_API_VERSION,
        "kind": IEC_KIND,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "modelName": model_name,
            "instanceType": instance_type,
            "replicas": replicas,
            "invocationEndpoint": invocation_path,
            "maxDeployTimeInSeconds": max_deploy_seconds,
            "modelSourceConfig": model_source(node_weights, bucket_name, region, model_location, prefetch),
            **({"kubernetes": kubernetes_spec(node_weights, node_repo)} if node_weights is not None else {}),
            "loadBalancer": {"healthCheckPath": health_path},
            "metrics": {"enabled": True, "modelMetrics": {"port": port, "path": metrics_path}},
            "worker": {
                "image": image,
                "args": list(args),
                "environmentVariables": [{"name": k, "value": v} for k, v in env.items()],
                "modelInvocationPort": {"containerPort": port, "name": "http"},
                "modelVolumeMount": {"name": MODEL_VOLUME, "mountPath": MODEL_MOUNT_PATH},
                "resources": {"limits": dict(amounts), "requests": dict(amounts)},
                "probes": {
                    "startupProbe": {"httpGet": http, "periodSeconds": probe_period, "timeoutSeconds": 5,
                                     "failureThreshold": probe_failure_threshold(startup_budget_seconds, probe_period)},
                    "readinessProbe": {"httpGet": http, "periodSeconds": probe_period, "timeoutSeconds": 5,
                                       "failureThreshold": 3},
                    "livenessProbe": {"httpGet": http, "periodSeconds": 30, "timeoutSeconds": 10,
                                      "failureThreshold": 5},
                },
            },
            **({"autoScalingSpec": dict(autoscaling)} if autoscaling else {}),
        },
    }


class InferenceEndpointConfigResource(pulumi.CustomResource):
    """An ``InferenceEndpointConfig`` (kubernetes provider) whose ``status`` is an output.

    ``pulumi_kubernetes.apiextensions.CustomResource`` tracks only apiVersion, kind, metadata and spec;
    the endpoint's load balancer appears in the status the operator writes. The spec is untyped here, so
    tests validate it against the CRD (schemas/crds/hyperpod-inferenceendpointconfigs.yaml).
    """

    status: pulumi.Output[Any]
    """What the operator reports (deployment, load balancer certificate, state)."""

    def __init__(self, resource_name: str, *, metadata: pulumi.Input[k8s.meta.v1.ObjectMetaArgs],
                 spec: pulumi.Input[Any], opts: Optional[pulumi.ResourceOptions] = None) -> None:
        props = {"apiVersion": IEC_API_VERSION, "kind": IEC_KIND, "metadata": metadata, "spec": spec, "status": None}
        super().__init__(f"kubernetes:{IEC_API_VERSION}:{IEC_KIND}", resource_name, props,
                         pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(version=k8s_version())))
