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


NVME_PAGE = "docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-model-deployment-deploy-nvme.html"
"""SageMaker developer guide, "Deploy models from local NVMe storage using kubectl" (operator v3.1.2, add-on
v1.2.0-eksbuild.1 and later): the weights on the node's NVMe that k3infra's HyperPod stack keeps (its approach 2,
"Kubernetes volume with fallback")."""
NVME_ROOT = "/opt/dlami/nvme"
"""Where a HyperPod instance's local NVMe is mounted: every hostPath of ``NVME_PAGE`` lies under it (its preload pod
mounts it as ``type: Directory``, so it exists on the node)."""
KUBERNETES_VOLUME_SOURCE = "kubernetesVolume"
"""``modelSourceConfig.modelSourceType`` of a model on a volume the IEC names: the operator creates no S3 or FSx
volume, ``kubernetes.volumes`` must hold a volume named as ``worker.modelVolumeMount.name`` (else the condition
``KubernetesVolumeValidationFailed``), and ``modelLocation`` must not be set (a validation error) (``NVME_PAGE``)."""
RESERVED_VOLUMES = frozenset({"shm", "model-weights-copy", "parallel-copy-configmap", "lmcache-config",
                              "gated-model-downloader-configmap"})
"""Volume names the operator keeps for itself: one in ``kubernetes.volumes`` fails the deployment with
``KubernetesVolumeValidationFailed`` (``NVME_PAGE``, "Reserved volume names")."""
CUSTOM_SERVICE_ACCOUNTS = "enableCustomServiceAccounts"
"""The inference add-on's configuration value that lets an IEC name ``kubernetes.serviceAccountName`` (default false:
such an IEC ends ``DeploymentFailed``, "kubernetes.serviceAccountName is not enabled"), ``NVME_PAGE`` "Enable custom
service accounts"; the chart's ``values.yaml`` at 011ca92 sets it to the operator's ``ENABLE_CUSTOM_SERVICE_ACCOUNTS``."""
USER_ASSIGNABLE_LABEL = ("sagemaker.amazonaws.com/user-assignable", "true")
"""The label a ServiceAccount needs before an IEC may name it (``NVME_PAGE``: "Only ServiceAccounts with this label can
be referenced by inference endpoints"); every container of the pod, init containers included, gets its IRSA role."""
IRSA_ROLE_ANNOTATION = "eks.amazonaws.com/role-arn"
"""The annotation that gives a ServiceAccount's pods an IRSA role's credentials (``NVME_PAGE``, "Set up IRSA")."""
