"""SageMaker HyperPod facts that the sizing, the HyperPod stack and ``k3infra status`` share: how long its deep health
checks keep an instance from taking pods, and the inference operator's custom resource k3infra creates.

Deep health checks: SageMaker developer guide, sagemaker-hyperpod-eks-resiliency-deep-health-checks: InstanceStress
runs DCGM diagnostics at level 4 (with the extended memory tests), GPU and NVLink counts, EFA loopback and CPU, memory
and disk stress on every new instance of a group that lists it in ``OnStartDeepHealthChecks``, replacements by
automatic node recovery included; InstanceConnectivity adds NCCL tests across instances. Meanwhile the node carries
``sagemaker.amazonaws.com/node-health-status: Unschedulable`` (sagemaker-hyperpod-eks-resiliency-node-labels), and
SageMaker's ListClusterNodes reports the instance as ``DeepHealthCheckInProgress`` (API ClusterInstanceStatusDetails).

The InferenceEndpointConfig: aws/sagemaker-hyperpod-cli 011ca92, ``helm_chart/HyperPodHelmChart/charts/
inference-operator/config/crd/inference.sagemaker.aws.amazon.com_inferenceendpointconfigs.yaml`` (vendored as
schemas/crds/hyperpod-inferenceendpointconfigs.yaml, schemas/crds/SOURCES.md): ``spec.group``, ``spec.names.kind``,
``spec.names.plural``, and the served version ``v1``.
"""

DEEP_HEALTH_CHECK_MINUTES = 180
"""ESTIMATE: a new or replacement instance's deep health checks, from joining to ``Schedulable``. Issue 36 quotes the
SageMaker resiliency guide as "a few hours", which could not be read here (UNCONFIRMED): the pessimistic end of a
few hours, DCGM level-4 diagnostics alone taking hours on eight GPUs. A group without a spare instance serves nothing
meanwhile, which is why the stacks run no deep health checks unless ``aws.deepHealthChecks`` says so."""

INSTANCE_SCHEDULABLE = "Running"
"""The ListClusterNodes status of an instance that passed its checks and takes pods (its node is ``Schedulable``)."""


IEC_GROUP = "inference.sagemaker.aws.amazon.com"
"""The API group of the InferenceEndpointConfig."""
IEC_VERSION = "v1"
"""The version k3infra writes (the CRD serves v1 and v1alpha1)."""
IEC_API_VERSION = f"{IEC_GROUP}/{IEC_VERSION}"
"""``apiVersion`` of an InferenceEndpointConfig."""
IEC_KIND = "InferenceEndpointConfig"
"""``kind`` of the resource."""
IEC_RESOURCE = "inferenceendpointconfigs"
"""Its plural: the resource an RBAC rule and a URL path name."""
